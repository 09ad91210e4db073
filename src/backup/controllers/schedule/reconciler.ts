// NonAdminSchedule controller: a tenant's schedule becomes a Velero Schedule in Velero's namespace whose
// template is the tenant's backupSpec limited to its namespace, with the admin's enforced fields filled
// in. Velero's schedule controller makes a Backup each time the cron expression is due; each such run
// shows up in the tenant's namespace as a NonAdminBackup owned by the schedule (adopted, see ../sync/adopt.ts),
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
} from '../../../crds/backup.ts';
import { VeleroResources } from '../../../crds/velero.ts';
import { apiVersionOf, PatchType } from '../../../kube/client.ts';
import {
  generationChanged,
  ObjectReconciler,
  ownerMapper,
  type ReconcileContext,
  type ReconcileResult,
} from '../../../kube/controller.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../../../kube/finalizers.ts';
import { ByNamespace, ByOwner, type Informer } from '../../../kube/informer.ts';
import type { Manager } from '../../../kube/manager.ts';
import { type KubeObject, objectKey } from '../../../kube/resources.ts';
import { type StatusView, StatusWriter } from '../../../kube/status.ts';
import { Annotations, Index, Labels, NasFinalizer } from '../../model.ts';
import { type BackupPolicy, configType, currentPolicy, NonAdminDisabled } from '../../policy/config.ts';
import { type JsonObject, jsonEqual, withEnforced } from '../../policy/enforce.ts';
import { scheduleProblems, templateOf } from '../../policy/schedule.ts';
import { withForcedBackupFields } from '../../policy/velero-filters.ts';
import { originRecord } from '../../velero/ownership.ts';
import { type Ownerships, ownerships } from '../../velero/ownerships.ts';
import { backOff } from '../back-off.ts';
import { inVeleroQueue } from '../backup/queue-limit.ts';
import { IndexFunctions, ManagedTypes, managedCache, scheduleCache } from '../caches.ts';
import { type StorageLocationLookup, storageLocationLookup } from '../location/lookup.ts';
import { ensureSyncedNab } from '../sync/adopt.ts';
import { createOnce, managedMeta } from '../velero-objects.ts';
import { type Hold, intervalHold, limitHold, queueHold, queueRecheckAt } from './hold.ts';
import {
  nextRunOf,
  runLabels,
  runTime,
  scheduled,
  scheduledCondition,
  scheduleObjectName,
  type VeleroSchedule,
} from './runs.ts';

/** Velero labels every run with its Schedule's name. */
export const ScheduleNameLabel = 'velero.io/schedule-name';
const recentRuns = 5;
type Status = NonNullable<NonAdminSchedule['status']>;

/** Whether Velero Schedule `s` is the one tenantkit made for `nas` (its origin annotations; admins write there). */
const madeFor = (s: KubeObject, nas: NonAdminSchedule) =>
  s.metadata.annotations?.[Annotations.nasNamespace] === nas.metadata.namespace &&
  s.metadata.annotations?.[Annotations.nasName] === nas.metadata.name;

/** What the schedule controller reads, wired by registerScheduleController. */
export interface ScheduleSources {
  nass: Informer<NonAdminSchedule>;
  schedules: Informer<VeleroSchedule>;
  configs: Informer<NonAdminBackupConfig>;
  locations: StorageLocationLookup;
  /** Velero's Backups (the runs, indexed by the schedule's NACUUID) and whose they are. */
  runs: Ownerships;
}

/** One reconcile's view of a NAS: read from the caches once, written through `status`. */
interface Seen extends StatusView<Status> {
  nas: NonAdminSchedule;
  ns: string;
  policy: BackupPolicy;
  uuid: string | undefined;
  /** The Velero Schedule made for this NAS, in the config's namespace (never the one status names). */
  schedule: VeleroSchedule | undefined;
}

export function registerScheduleController(manager: Manager): void {
  const type = NonAdminScheduleCrd.type;
  const nass = scheduleCache(manager);
  const runs = ownerships(manager);
  runs.backups.addIndex(Index.nasUuid, IndexFunctions.nasUuid);
  const reconciler = new ScheduleReconciler(
    {
      nass,
      schedules: managedCache<VeleroSchedule>(manager, 'schedules'),
      configs: manager.informer<NonAdminBackupConfig>(configType),
      locations: storageLocationLookup(manager),
      runs,
    },
    nass,
  );
  const byUuid = (uuid: string) => nass.byIndex(Index.scheduleByUuid, uuid).map((n) => objectKey(n.metadata));
  // Every schedule of a namespace whose backup moved: its share of Velero's queue changed.
  const ofNamespace = (b: KubeObject) => {
    const a = b.metadata.annotations ?? {};
    const ns = a[Annotations.nasNamespace] ?? a[Annotations.nabNamespace];
    return ns ? nass.byIndex(ByNamespace, ns).map((n) => objectKey(n.metadata)) : [];
  };

  manager
    .controller('nonadminschedule')
    .for(type)
    .watches(ManagedTypes.schedules, (s) => IndexFunctions.nasUuid(s).flatMap(byUuid))
    // Runs: found by the NACUUID label Velero copies from the Schedule's template, and checked for
    // ownership before being shown (a tenant's bucket may hold Backups with any labels).
    .watches(VeleroResources.backups, (b) => IndexFunctions.nasUuid(b).flatMap(byUuid))
    .watches(VeleroResources.backups, ofNamespace)
    // A schedule made or deleted changes the others' places (the limit, the queue's share).
    .watches(type, (n) => nass.byIndex(ByNamespace, n.metadata.namespace!).map((o) => objectKey(o.metadata)))
    .watches(NonAdminBackupCrd.type, ownerMapper(type))
    .watchesAll(configType, generationChanged)
    .concurrency(2)
    .complete(reconciler);
}

export class ScheduleReconciler extends ObjectReconciler<ScheduleSources, NonAdminSchedule, Seen> {
  protected override finalize(seen: Seen): Promise<undefined> {
    return deleteSchedule(seen, this.from.schedules);
  }

  protected override async converge(seen: Seen): Promise<ReconcileResult | undefined> {
    const { nas, ns, ctx } = seen;
    const key = objectKey(nas.metadata);
    if (!seen.policy.enabled) {
      return backOff(seen.status, NonAdminDisabled, { action: 'Validate' });
    }
    // Checked on every change (a schedule stays editable); an invalid edit leaves the Velero Schedule as
    // it was last accepted.
    const problems = this.problems(seen);
    if (problems.length > 0) {
      ctx.logger.info({ nas: key, problems }, 'NonAdminSchedule rejected');
      return backOff(
        seen.status,
        { reason: 'InvalidSchedule', message: problems.join('; ') },
        { action: 'Validate' },
      );
    }
    // The admin's limit on schedules per namespace (admission refuses more; this holds any stored past it).
    const overLimit = limitHold(nas, this.siblings(ns), seen.policy.maxSchedulesPerNamespace);
    if (overLimit && !seen.schedule) {
      return backOff(seen.status, overLimit, { action: 'Validate' });
    }
    const current = await ensureFinalizer(ctx.client, NonAdminScheduleCrd.type, nas, NasFinalizer);
    if (!seen.uuid) return this.admit(seen, current.metadata.resourceVersion);
    // Step 2: the Velero Schedule, created or brought in line with the NAS.
    const template = this.template(seen, seen.uuid);
    if ('waiting' in template) return this.waitForLocation(seen, template.waiting);
    // Held: paused in Velero although the tenant did not pause it (hold.ts). A new Velero
    // Schedule starts paused; its first reconcile decides.
    const hold = seen.schedule ? (overLimit ?? this.holdOf(seen, seen.schedule)) : undefined;
    const desired: JsonObject = {
      schedule: nas.spec!.schedule,
      paused: nas.spec?.paused === true || hold !== undefined || !seen.schedule,
      useOwnerReferencesInBackup: false,
      template: template.template,
    };
    if (!seen.schedule) return this.create(seen, seen.uuid, desired);
    // Not held while its next run is far: looked at again before it is due, to take a place or be held.
    const recheck =
      hold || seen.policy.maxQueuedBackupsPerNamespace === 0
        ? undefined
        : queueRecheckAt(seen.schedule, Date.now());
    if (await this.update(seen, seen.schedule, desired)) return requeue(hold, recheck);
    await this.mirror(seen, seen.uuid, seen.schedule, hold);
    return requeue(hold, recheck);
  }

  /** The namespace's live schedules. */
  private siblings(ns: string): NonAdminSchedule[] {
    return this.from.nass.byIndex(ByNamespace, ns).filter((n) => !n.metadata.deletionTimestamp);
  }

  /** The Velero Schedule made for `nas`, if any. */
  private scheduleOf(nas: NonAdminSchedule, veleroNs: string): VeleroSchedule | undefined {
    const uuid = nas.status?.veleroSchedule?.nacuuid;
    return uuid
      ? this.from.schedules
          .byIndex(Index.nasUuid, uuid)
          .find((s) => s.metadata.name === uuid && s.metadata.namespace === veleroNs && madeFor(s, nas))
      : undefined;
  }

  /** The newest run Velero made for `schedule`: its status and its Backups, both in Velero's namespace. */
  private lastRun(schedule: VeleroSchedule, veleroNs: string): number {
    const uuid = schedule.metadata.name!;
    const times = this.from.runs.backups
      .byIndex(Index.nasUuid, uuid)
      .filter((b) => b.metadata.namespace === veleroNs && b.metadata.labels?.[ScheduleNameLabel] === uuid)
      .map((b) => Date.parse(b.metadata.creationTimestamp ?? ''));
    const last = schedule.status?.lastBackup;
    if (typeof last === 'string') times.push(Date.parse(last));
    const known = times.filter((t) => !Number.isNaN(t));
    return known.length > 0 ? Math.max(...known) : Number.NaN;
  }

  /** Why the schedule may not run now (interval since its last run, the namespace's queue share), if so. */
  private holdOf({ nas, ns, policy }: Seen, schedule: VeleroSchedule): Hold | undefined {
    const veleroNs = policy.veleroNamespace;
    const now = Date.now();
    const own = intervalHold(schedule, this.lastRun(schedule, veleroNs), policy, now);
    if (own) return own;
    const limit = policy.maxQueuedBackupsPerNamespace;
    if (limit === 0) return undefined;
    const siblings = this.siblings(ns);
    const candidates = siblings.flatMap((n) => {
      if (n.spec?.paused === true || limitHold(n, siblings, policy.maxSchedulesPerNamespace)) return [];
      const s = n === nas ? schedule : this.scheduleOf(n, veleroNs);
      if (!s || intervalHold(s, this.lastRun(s, veleroNs), policy, now)) return [];
      return [{ nas: n, schedule: s }];
    });
    const { nabs, runs } = inVeleroQueue(this.from.runs.backups.list(), veleroNs, ns);
    return queueHold(nas, candidates, nabs + runs, limit, now);
  }

  protected override read(nas: NonAdminSchedule, ctx: ReconcileContext): Seen {
    const policy = currentPolicy(this.from.configs);
    const uuid = nas.status?.veleroSchedule?.nacuuid;
    const veleroNs = policy.veleroNamespace;
    const schedule = uuid
      ? this.from.schedules
          .byIndex(Index.nasUuid, uuid)
          .find((s) => s.metadata.name === uuid && s.metadata.namespace === veleroNs && madeFor(s, nas))
      : undefined;
    const status = new StatusWriter<Status>(ctx, NonAdminScheduleCrd.type, nas);
    return { nas, ns: nas.metadata.namespace!, policy, uuid, schedule, base: status.current, status, ctx };
  }

  private problems({ nas, ns, policy }: Seen): string[] {
    return scheduleProblems(
      ns,
      nas.spec,
      policy.enforceBackupSpec,
      (name) => this.from.locations.find(ns, name) !== undefined,
      policy.minimumScheduleIntervalMs,
    );
  }

  /**
   * Step 1: the identity, in status, before anything exists in Velero's namespace; guarded by
   * resourceVersion so that a reconcile on a stale cache cannot write a second NACUUID over it.
   */
  private async admit({ nas, ns, base, policy, status }: Seen, resourceVersion?: string): Promise<undefined> {
    const name = scheduleObjectName(ns, nas.metadata.name!);
    await status.write(
      {
        ...base,
        phase: 'New',
        veleroSchedule: { nacuuid: name, name, namespace: policy.veleroNamespace },
        conditions: status.condition(base, accepted(policy)),
      },
      { ifVersion: resourceVersion },
    );
    return undefined;
  }

  /** The runs' BackupSpec: the tenant's with the admin's fields, this namespace only, its own location resolved. */
  private template({ nas, ns, policy }: Seen, uuid: string): { template: JsonObject } | { waiting: string } {
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
      const location = this.from.locations.resolve(ns, wanted);
      if ('waiting' in location) {
        return { waiting: location.waiting.replaceAll('spec.backupSpec', 'spec.template.backupSpec') };
      }
      template.storageLocation = location.bsl;
    }
    return { template };
  }

  private async waitForLocation({ base, status }: Seen, message: string): Promise<undefined> {
    await status.write({
      ...base,
      conditions: status.condition(base, {
        type: 'Queued',
        status: 'False',
        reason: 'StorageLocationNotReady',
        message,
      }),
    });
    return undefined;
  }

  /** The namespace's owner record (velero/ownership.ts); the cache must know the namespace. */
  private ownerRecord(ns: string): Record<string, string> {
    const namespace = this.from.runs.namespace(ns);
    if (!namespace?.metadata.uid) throw new Error(`namespace ${ns} is not in the cache yet; retrying`);
    return originRecord(namespace);
  }

  private async create(seen: Seen, uuid: string, desired: JsonObject): Promise<undefined> {
    const { nas, ns, policy, base, status, ctx } = seen;
    const skip = nas.spec?.skipImmediately === true;
    // Velero copies a Schedule's annotations onto every run: the runs' origin and owner record
    // (velero/ownership.ts).
    const metadata = managedMeta(uuid, policy.veleroNamespace, Labels.nasUuid, {
      [Annotations.nasName]: nas.metadata.name!,
      [Annotations.nasNamespace]: ns,
      ...this.ownerRecord(ns),
    });
    const spec = { ...desired, skipImmediately: skip };
    await createOnce(ctx, VeleroResources.schedules, { metadata, spec } as KubeObject);
    if (skip) await resetSkip(nas, ctx);
    await status.write({ ...base, conditions: status.condition(base, accepted(policy)) });
    return undefined;
  }

  /** Pushes what differs to the Velero Schedule; true when it did (the Schedule's event brings this back). */
  private async update(
    { nas, ns, status, ctx }: Seen,
    schedule: VeleroSchedule,
    desired: JsonObject,
  ): Promise<boolean> {
    const skip = nas.spec?.skipImmediately === true;
    const ops: { op: 'add'; path: string; value: unknown }[] = [];
    const have = schedule.spec ?? {};
    if (have.schedule !== desired.schedule)
      ops.push({ op: 'add', path: '/spec/schedule', value: desired.schedule });
    if ((have.paused === true) !== desired.paused)
      ops.push({ op: 'add', path: '/spec/paused', value: desired.paused });
    if (have.useOwnerReferencesInBackup !== false) {
      ops.push({ op: 'add', path: '/spec/useOwnerReferencesInBackup', value: false });
    }
    if (!jsonEqual(have.template, desired.template)) {
      ops.push({ op: 'add', path: '/spec/template', value: desired.template });
    }
    if (skip) ops.push({ op: 'add', path: '/spec/skipImmediately', value: true });
    // The owner record its future runs carry: added to Schedules made before it existed, and follows the
    // namespace's organization.
    const annotations = schedule.metadata.annotations ?? {};
    for (const [key, value] of Object.entries(this.ownerRecord(ns))) {
      if (annotations[key] === value) continue;
      const path = `/metadata/annotations/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
      ops.push({ op: 'add', path, value });
    }
    if (ops.length === 0) return false;
    const name = schedule.metadata.name!;
    await ctx.client.patch(VeleroResources.schedules, name, schedule.metadata.namespace, ops, PatchType.json);
    status.event({
      type: 'Normal',
      reason: 'ScheduleUpdated',
      action: 'Update',
      message: `Velero Schedule ${name}: ${[...new Set(ops.map((op) => (op.path.startsWith('/spec/') ? op.path.slice(6) : 'owner record')))].join(', ')} updated`,
    });
    if (skip) await resetSkip(nas, ctx);
    return true;
  }

  /** Step 3: the runs, each as a NAB owned by the NAS, and the Schedule's state. */
  private async mirror(
    seen: Seen,
    uuid: string,
    schedule: VeleroSchedule,
    hold: Hold | undefined,
  ): Promise<undefined> {
    const { nas, ns, policy, base, status, ctx } = seen;
    const veleroNs = policy.veleroNamespace;
    const type = NonAdminScheduleCrd.type;
    const owner = {
      apiVersion: apiVersionOf(type),
      kind: type.kind,
      name: nas.metadata.name!,
      uid: nas.metadata.uid!,
      controller: true,
    };
    const o = this.from.runs;
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
      if (!run.metadata.deletionTimestamp) await ensureSyncedNab(o, ctx, run, ns, [owner]);
    }
    const recent = runs
      .slice(0, recentRuns)
      .map((run) => scheduled(run, ns, o.nabsFor(ns, run.metadata.name!)));
    const paused = nas.spec?.paused === true;
    const conditions = status.condition(base, accepted(policy));
    await status.write({
      ...base,
      phase: 'Created',
      veleroSchedule: {
        nacuuid: uuid,
        name: uuid,
        namespace: veleroNs,
        ...(schedule.status ? { status: schedule.status as never } : {}),
      },
      ...(recent[0] ? { lastBackup: recent[0], recentBackups: recent } : {}),
      nextRun: hold ? undefined : nextRunOf(schedule, paused),
      conditions: status.condition(
        { ...base, conditions },
        hold && !paused
          ? { type: 'Scheduled', status: 'False', reason: hold.reason, message: hold.message }
          : scheduledCondition(schedule, paused),
      ),
    });
    return undefined;
  }
}

/**
 * A hold that ends by itself brings the schedule back then; others end with an event. A schedule not held
 * comes back at `recheckAt` (before its next run, to take a place in the queue share or be held).
 */
const requeue = (hold: Hold | undefined, recheckAt?: number) => {
  const at = hold?.untilMs ?? recheckAt;
  return at !== undefined ? { requeueAfterMs: Math.max(1000, at - Date.now() + 1000) } : undefined;
};

const accepted = (policy: BackupPolicy) => ({
  type: 'Accepted',
  status: 'True' as const,
  reason: 'ScheduleAccepted',
  message: `schedule accepted against NonAdminBackupConfig generation ${policy.generation}`,
});

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
  { nas, uuid, policy, status, ctx }: Seen,
  schedules: { byIndex(name: string, value: string): VeleroSchedule[] },
): Promise<undefined> {
  const veleroNs = policy.veleroNamespace;
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
  status.event({
    type: 'Normal',
    reason: 'ScheduleDeleted',
    action: 'Delete',
    message: `Velero Schedule ${uuid ?? '(none made)'} deleted; its ${runs.length} backups stay as NonAdminBackups (delete one with spec.deleteBackup: true to remove its data)`,
  });
  await removeFinalizer(ctx.client, type, nas, NasFinalizer);
  return undefined;
}
