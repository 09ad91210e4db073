// NonAdminSchedule controller: a tenant's schedule becomes a Velero Schedule in Velero's namespace whose
// template is the tenant's backupSpec limited to its namespace, with the admin's enforced fields filled
// in. Velero's schedule controller makes a Backup each time the cron expression is due; each such run
// shows up in the tenant's namespace as a NonAdminBackup owned by the schedule (adopted, see adopt.ts),
// so the tenant restores from it and deletes it like any other. Unlike a NonAdminBackup, a schedule stays
// editable: schedule, paused, skipImmediately and the template are pushed to the Velero Schedule.
//
// Crash safety as for NABs: the NACUUID goes into status first, the Velero Schedule is named by it and
// found by its label; run NABs get deterministic names and are looked up before being made.
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupCrd,
  type NonAdminSchedule,
  NonAdminScheduleCrd,
} from '../../api/backup.ts';
import { VeleroResources } from '../../api/velero.ts';
import { apiVersionOf, isAlreadyExists, PatchType } from '../../kube/client.ts';
import { type Condition, setCondition } from '../../kube/conditions.ts';
import { generationChanged, ownerMapper, type ReconcileContext } from '../../kube/controller.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../../kube/finalizers.ts';
import { ByOwner } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, objectKey } from '../../kube/resources.ts';
import { configType, currentPolicy } from '../policy/config.ts';
import { parseCron } from '../policy/cron.ts';
import { type JsonObject, jsonEqual, withEnforced } from '../policy/enforce.ts';
import { scheduleProblems, templateOf } from '../policy/schedule.ts';
import { withForcedBackupFields } from '../policy/velero-filters.ts';
import { Annotations, Labels, ManagedByValue, nacObjectName } from '../velero/names.ts';
import { ensureSyncedNab, ownerships, syncedNabName, type VeleroBackup } from './adopt.ts';
import { Index, IndexFunctions, ManagedTypes, managedCache, scheduleCache } from './caches.ts';
import { storageLocationLookup } from './location-lookup.ts';
import { changedFields } from './queue.ts';

export const NasFinalizer = 'tenantkit.io/nonadminschedule';
/** Velero labels every run with its Schedule's name. */
export const ScheduleNameLabel = 'velero.io/schedule-name';
const recentRuns = 5;

type VeleroSchedule = KubeObject & {
  spec?: JsonObject;
  status?: {
    phase?: string;
    lastBackup?: string | null;
    lastSkipped?: string | null;
    validationErrors?: string[];
  };
};
type Status = NonNullable<NonAdminSchedule['status']>;
type ScheduledBackup = NonNullable<Status['recentBackups']>[number];

/** Whether Velero Schedule `s` is the one tenantkit made for `nas` (its origin annotations; admins write there). */
const madeFor = (s: KubeObject, nas: NonAdminSchedule) =>
  s.metadata.annotations?.[Annotations.nasNamespace] === nas.metadata.namespace &&
  s.metadata.annotations?.[Annotations.nasName] === nas.metadata.name;

/**
 * `<namespace>-<name>-<uuid>` in at most 48 characters: Velero names each run `<schedule>-<timestamp>`
 * (15 more), and a run's name must stay a valid label value (63) for the NAB's sync label.
 */
export function scheduleObjectName(namespace: string, name: string): string {
  const room = 10;
  let ns = namespace;
  let n = name;
  if (ns.length + n.length > room) n = n.slice(0, Math.max(0, room - ns.length));
  if (ns.length + n.length > room) ns = ns.slice(0, room);
  return nacObjectName(ns, n);
}

/** Tenant labels on the runs, less any that tenantkit's or Velero's bookkeeping reads. */
function runLabels(template: JsonObject, uuid: string): Record<string, string> {
  const metadata = template.metadata as { labels?: Record<string, string> } | undefined;
  const tenant = Object.entries(metadata?.labels ?? {}).filter(
    ([k]) => !k.startsWith('openshift.io/') && !k.startsWith('velero.io/') && k !== Labels.managedBy,
  );
  return {
    ...Object.fromEntries(tenant),
    [Labels.managedBy]: ManagedByValue,
    [Labels.oadp]: 'True',
    [Labels.nasUuid]: uuid,
  };
}

const time = (v: unknown): number => (typeof v === 'string' ? Date.parse(v) : Number.NaN);

export function registerScheduleController(manager: Manager): void {
  const type = NonAdminScheduleCrd.type;
  const nass = scheduleCache(manager);
  const schedules = managedCache<VeleroSchedule>(manager, 'schedules');
  const o = ownerships(manager);
  o.backups.addIndex(Index.nasUuid, IndexFunctions.nasUuid);
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  const locations = storageLocationLookup(manager);
  const byUuid = (uuid: string) => nass.byIndex(Index.scheduleByUuid, uuid).map((n) => objectKey(n.metadata));

  manager
    .controller('nonadminschedule')
    .for(type)
    .watches(ManagedTypes.schedules, (s) => IndexFunctions.nasUuid(s).flatMap(byUuid))
    // Runs: found by the NACUUID label Velero copies from the Schedule's template, and checked for
    // ownership before being shown (a tenant's bucket may hold Backups with any labels).
    .watches(VeleroResources.backups, (b) => IndexFunctions.nasUuid(b).flatMap(byUuid))
    .watches(NonAdminBackupCrd.type, ownerMapper(type))
    .watches(configType, () => nass.list().map((n) => objectKey(n.metadata)), generationChanged)
    .concurrency(2)
    .complete(async (key, ctx) => {
      const nas = nass.get(key);
      if (!nas) return undefined;
      const ns = nas.metadata.namespace!;
      const policy = currentPolicy(configs);
      const ref = nas.status?.veleroSchedule;
      const uuid = ref?.nacuuid;
      // The config's namespace, never the one status names (a status is only as good as its last writer).
      const veleroNs = policy.veleroNamespace;
      const schedule = uuid
        ? schedules
            .byIndex(Index.nasUuid, uuid)
            .find((s) => s.metadata.name === uuid && s.metadata.namespace === veleroNs && madeFor(s, nas))
        : undefined;
      const base: Status = { ...(nas.status ?? {}) };
      /** `ifVersion`: fail (409, retried) unless the object is still at that resourceVersion. */
      const writeStatus = async (status: Status, ifVersion?: string) => {
        if (jsonEqual(status as never, (nas.status ?? {}) as never)) return;
        await ctx.client.patch(
          type,
          nas.metadata.name!,
          ns,
          {
            ...(ifVersion ? { metadata: { resourceVersion: ifVersion } } : {}),
            status: changedFields(status as JsonObject, (nas.status ?? {}) as JsonObject),
          },
          PatchType.merge,
          'status',
        );
      };
      const condition = (status: Status, c: Omit<Condition, 'lastTransitionTime'>): Condition[] =>
        setCondition(status.conditions as Condition[] | undefined, {
          ...c,
          observedGeneration: nas.metadata.generation,
        });
      const backOff = async (reason: string, message: string) => {
        const before = base.conditions?.find((c) => c.type === 'Accepted');
        if (before?.reason !== reason || before.message !== message) {
          ctx.events.record(nas, 'Warning', reason, 'Validate', message);
        }
        await writeStatus({
          ...base,
          phase: 'BackingOff',
          conditions: condition(base, { type: 'Accepted', status: 'False', reason, message }),
        });
        return undefined;
      };

      if (nas.metadata.deletionTimestamp) return deleteSchedule(nas, ctx, schedules, uuid, veleroNs);

      if (!policy.enabled) {
        return backOff(
          'NonAdminDisabled',
          'non-admin backups are not enabled: an admin must set spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"',
        );
      }
      // Checked on every change (a schedule stays editable); an invalid edit leaves the Velero Schedule
      // as it was last accepted.
      const problems = scheduleProblems(
        ns,
        nas.spec,
        policy.enforceBackupSpec,
        (name) => locations.find(ns, name) !== undefined,
        policy.minimumScheduleIntervalMs,
      );
      if (problems.length > 0) {
        ctx.logger.info({ nas: key, problems }, 'NonAdminSchedule rejected');
        return backOff('InvalidSchedule', problems.join('; '));
      }
      const current = await ensureFinalizer(ctx.client, type, nas, NasFinalizer);
      if (!uuid) {
        // Step 1: the identity, in status, before anything exists in Velero's namespace; guarded by
        // resourceVersion so that a reconcile on a stale cache cannot write a second NACUUID over it.
        const name = scheduleObjectName(ns, nas.metadata.name!);
        await writeStatus(
          {
            ...base,
            phase: 'New',
            veleroSchedule: { nacuuid: name, name, namespace: policy.veleroNamespace },
            conditions: condition(base, {
              type: 'Accepted',
              status: 'True',
              reason: 'ScheduleAccepted',
              message: `schedule accepted against NonAdminBackupConfig generation ${policy.generation}`,
            }),
          },
          current.metadata.resourceVersion,
        );
        return undefined;
      }

      // Step 2: the Velero Schedule, created or brought in line with the NAS.
      const tenant = templateOf(nas.spec);
      const merged = withEnforced(tenant, policy.enforceBackupSpec);
      const template: JsonObject = withForcedBackupFields({
        ...merged,
        includedNamespaces: [ns],
        metadata: { labels: runLabels(merged, uuid) },
      });
      delete template.storageLocation;
      const wanted = tenant.storageLocation;
      if (typeof wanted === 'string' && wanted !== '') {
        const location = locations.resolve(ns, wanted);
        if ('waiting' in location) {
          await writeStatus({
            ...base,
            conditions: condition(base, {
              type: 'Queued',
              status: 'False',
              reason: 'StorageLocationNotReady',
              message: location.waiting.replaceAll('spec.backupSpec', 'spec.template.backupSpec'),
            }),
          });
          return undefined;
        }
        template.storageLocation = location.bsl;
      }
      const accepted = condition(base, {
        type: 'Accepted',
        status: 'True',
        reason: 'ScheduleAccepted',
        message: `schedule accepted against NonAdminBackupConfig generation ${policy.generation}`,
      });
      const skip = nas.spec?.skipImmediately === true;
      const desired: JsonObject = {
        schedule: nas.spec!.schedule,
        paused: nas.spec?.paused === true,
        useOwnerReferencesInBackup: false,
        template,
      };
      if (!schedule) {
        try {
          await ctx.client.create(VeleroResources.schedules, {
            metadata: {
              name: uuid,
              namespace: veleroNs,
              labels: { [Labels.managedBy]: ManagedByValue, [Labels.oadp]: 'True', [Labels.nasUuid]: uuid },
              // Velero copies a Schedule's annotations onto every run: the runs' origin (velero/ownership.ts).
              annotations: { [Annotations.nasName]: nas.metadata.name!, [Annotations.nasNamespace]: ns },
            },
            spec: { ...desired, skipImmediately: skip },
          } as KubeObject);
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
        }
        if (skip) await resetSkip(nas, ctx);
        await writeStatus({ ...base, conditions: accepted });
        return undefined;
      }
      const ops: { op: 'add'; path: string; value: unknown }[] = [];
      const have = schedule.spec ?? {};
      if (have.schedule !== desired.schedule)
        ops.push({ op: 'add', path: '/spec/schedule', value: desired.schedule });
      if ((have.paused === true) !== desired.paused)
        ops.push({ op: 'add', path: '/spec/paused', value: desired.paused });
      if (have.useOwnerReferencesInBackup !== false) {
        ops.push({ op: 'add', path: '/spec/useOwnerReferencesInBackup', value: false });
      }
      if (!jsonEqual(have.template, template))
        ops.push({ op: 'add', path: '/spec/template', value: template });
      if (skip) ops.push({ op: 'add', path: '/spec/skipImmediately', value: true });
      if (ops.length > 0) {
        await ctx.client.patch(VeleroResources.schedules, uuid, veleroNs, ops, PatchType.json);
        ctx.events.record(
          nas,
          'Normal',
          'ScheduleUpdated',
          'Update',
          `Velero Schedule ${uuid}: ${ops.map((op) => op.path.replace('/spec/', '')).join(', ')} updated`,
        );
        if (skip) await resetSkip(nas, ctx);
        // The Schedule's event brings this back with the new state to mirror.
        return undefined;
      }

      // Step 3: the runs, each as a NAB owned by the NAS, and the Schedule's state.
      const owner = {
        apiVersion: apiVersionOf(type),
        kind: type.kind,
        name: nas.metadata.name!,
        uid: nas.metadata.uid!,
        controller: true,
      };
      const runs = o.backups
        .byIndex(Index.nasUuid, uuid)
        .filter(
          (b) =>
            b.metadata.namespace === veleroNs &&
            b.metadata.labels?.[ScheduleNameLabel] === uuid &&
            o.ownerOf(b).namespace === ns,
        )
        .sort((a, b) => runTime(b) - runTime(a));
      for (const run of runs) {
        if (run.metadata.deletionTimestamp) continue;
        await ensureSyncedNab(o, ctx, run, ns, [owner]);
      }
      const recent = runs
        .slice(0, recentRuns)
        .map((run) => scheduled(run, ns, o.nabsFor(ns, run.metadata.name!)));
      const phase = schedule.status?.phase;
      const paused = nas.spec?.paused === true;
      await writeStatus({
        ...base,
        phase: 'Created',
        veleroSchedule: {
          nacuuid: uuid,
          name: uuid,
          namespace: veleroNs,
          ...(schedule.status ? { status: schedule.status as never } : {}),
        },
        ...(recent[0] ? { lastBackup: recent[0], recentBackups: recent } : {}),
        nextRun: nextRunOf(schedule, paused),
        conditions: condition(
          { ...base, conditions: accepted },
          paused
            ? {
                type: 'Scheduled',
                status: 'False',
                reason: 'SchedulePaused',
                message: 'paused: no new backups until spec.paused is false',
              }
            : phase === 'FailedValidation'
              ? {
                  type: 'Scheduled',
                  status: 'False',
                  reason: 'ScheduleFailedValidation',
                  message: `Velero refused the schedule: ${(schedule.status?.validationErrors ?? []).join('; ')}`,
                }
              : {
                  type: 'Scheduled',
                  status: phase === 'Enabled' ? 'True' : 'Unknown',
                  reason: phase === 'Enabled' ? 'ScheduleEnabled' : 'SchedulePending',
                  message: `Velero Schedule ${uuid} is ${phase ?? 'not read by Velero yet'}`,
                },
        ),
      });
      return undefined;
    });
}

/** When Velero made (or, lacking that, created) a run: what orders runs newest first. */
const runTime = (b: VeleroBackup): number => {
  const start = time(b.status?.startTimestamp);
  return Number.isNaN(start) ? time(b.metadata.creationTimestamp) : start;
};

function scheduled(run: VeleroBackup, ns: string, nabs: NonAdminBackup[]): ScheduledBackup {
  const status = (run.status ?? {}) as Record<string, unknown>;
  const name = nabs[0]?.metadata.name ?? syncedNabName(run, ns, () => false);
  const entry: Record<string, unknown> = { name, veleroBackupName: run.metadata.name! };
  for (const field of ['phase', 'startTimestamp', 'completionTimestamp', 'expiration']) {
    if (typeof status[field] === 'string') entry[field] = status[field];
  }
  return entry as ScheduledBackup;
}

/**
 * When Velero runs the schedule next, as its schedule controller computes it: the cron expression's next
 * time after the last run, the last skip or (never run) the Schedule's creation. Omitted when paused or
 * when the expression names a time zone other than UTC (computed in UTC, as Velero in a container does).
 */
function nextRunOf(schedule: VeleroSchedule, paused: boolean): string | undefined {
  if (paused || schedule.status?.phase !== 'Enabled') return undefined;
  const parsed = parseCron(String(schedule.spec?.schedule ?? ''));
  if (!parsed.schedule || (parsed.schedule.zone && !/^(Etc\/)?UTC$/.test(parsed.schedule.zone))) {
    return undefined;
  }
  const from = Math.max(
    ...[schedule.status.lastBackup, schedule.status.lastSkipped, schedule.metadata.creationTimestamp]
      .map(time)
      .filter((t) => !Number.isNaN(t)),
  );
  if (!Number.isFinite(from)) return undefined;
  return parsed.schedule
    .next(new Date(from))
    ?.toISOString()
    .replace(/\.000Z$/, 'Z');
}

/** skipImmediately is a one-shot request: once handed to Velero, it is reset on the tenant's object. */
async function resetSkip(nas: NonAdminSchedule, ctx: ReconcileContext): Promise<void> {
  await ctx.client.patch(NonAdminScheduleCrd.type, nas.metadata.name!, nas.metadata.namespace, {
    spec: { skipImmediately: false },
  });
}

/**
 * Deleting a NonAdminSchedule deletes its Velero Schedule; its runs' NonAdminBackups (and their backups)
 * stay, as a Velero Schedule's Backups outlive it: tenantkit removes the schedule's ownerReference from
 * them before letting the NAS go, so the garbage collector does not take them along.
 */
async function deleteSchedule(
  nas: NonAdminSchedule,
  ctx: ReconcileContext,
  schedules: { byIndex(name: string, value: string): VeleroSchedule[] },
  uuid: string | undefined,
  veleroNs: string,
): Promise<undefined> {
  const type = NonAdminScheduleCrd.type;
  if (!hasFinalizer(nas, NasFinalizer)) return undefined;
  for (const s of uuid ? schedules.byIndex(Index.nasUuid, uuid) : []) {
    // Only the one made for this very NAS: a forged status must not delete another tenant's Schedule.
    if (s.metadata.namespace === veleroNs && madeFor(s, nas)) {
      await ctx.client.delete(VeleroResources.schedules, s.metadata.name!, veleroNs);
    }
  }
  const nabs = ctx.informer<NonAdminBackup>(NonAdminBackupCrd.type);
  const runs = nabs
    .byIndex(ByOwner, nas.metadata.uid!)
    .filter((n) => n.metadata.namespace === nas.metadata.namespace);
  for (const nab of runs) {
    const rest = (nab.metadata.ownerReferences ?? []).filter((r) => r.uid !== nas.metadata.uid);
    await ctx.client.patch(NonAdminBackupCrd.type, nab.metadata.name!, nab.metadata.namespace, {
      metadata: {
        resourceVersion: nab.metadata.resourceVersion,
        ownerReferences: rest.length > 0 ? rest : null,
      },
    });
  }
  ctx.events.record(
    nas,
    'Normal',
    'ScheduleDeleted',
    'Delete',
    `Velero Schedule ${uuid ?? '(none made)'} deleted; its ${runs.length} backups stay as NonAdminBackups (delete one with spec.deleteBackup: true to remove its data)`,
  );
  await removeFinalizer(ctx.client, type, nas, NasFinalizer);
  return undefined;
}
