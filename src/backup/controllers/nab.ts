// NonAdminBackup controller: a tenant's NAB becomes a Velero Backup in Velero's namespace, limited to the
// tenant's namespace, with the admin's enforced fields filled in; the Backup's progress is mirrored back.
// Crash safety: the NACUUID goes into status before any Velero object exists, the Backup is named by it
// and found by its label, so a controller killed at any step neither duplicates nor orphans anything.
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupCrd,
  NonAdminBackupStorageLocationCrd,
} from '../../api/backup.ts';
import { finishedPhases, VeleroResources } from '../../api/velero.ts';
import { isAlreadyExists, PatchType } from '../../kube/client.ts';
import { type Condition, findCondition, setCondition } from '../../kube/conditions.ts';
import { generationChanged, type ReconcileContext } from '../../kube/controller.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../../kube/finalizers.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, objectKey } from '../../kube/resources.ts';
import { type BackupPolicy, configType, currentPolicy } from '../policy/config.ts';
import { type JsonObject, jsonEqual, withEnforced } from '../policy/enforce.ts';
import { backupSpecProblems } from '../policy/validate.ts';
import { withForcedBackupFields } from '../policy/velero-filters.ts';
import { Annotations, isNacObjectName, Labels, ManagedByValue, nacObjectName } from '../velero/names.ts';
import { adoptedBackup, nabKeysFor, ownerships, reconcileAdoption, syncedFromOf } from './adopt.ts';
import { Index, isManaged, ManagedTypes, managedCache, type VeleroObject } from './caches.ts';
import { storageLocationLookup } from './location-lookup.ts';
import { locationUse } from './location-use.ts';
import { backupProgress, withProgress } from './progress.ts';
import { backupQueuePhases, CreatedAtAnnotation, changedFields, QueueTracker } from './queue.ts';

export const NabFinalizer = 'tenantkit.io/nonadminbackup';
type Status = NonNullable<NonAdminBackup['status']>;

/** The NAB a Velero object was made for, from the annotations tenantkit wrote (tenants cannot write there). */
const originOf = (o: KubeObject): string[] => {
  const ns = o.metadata.annotations?.[Annotations.nabNamespace];
  const name = o.metadata.annotations?.[Annotations.nabName];
  return ns && name ? [`${ns}/${name}`] : [];
};

export function registerNabController(manager: Manager): void {
  // Velero's queue: every Backup in Velero's namespace counts, not only tenantkit's, so this informer
  // is unfiltered. The tracker's handlers run before the controller's (registered first), so the watch
  // below maps each event to the NABs whose position it changed, and to nothing else.
  const queue = new QueueTracker({
    queuePhases: backupQueuePhases,
    originOf: (o) => (isManaged(o) ? originOf(o)[0] : undefined),
  });
  manager.informer(VeleroResources.backups).addHandlers(queue.handlers());
  const nabs = manager.informer<NonAdminBackup>(NonAdminBackupCrd.type);
  const backups = managedCache(manager, 'backups');
  const deleteRequests = managedCache(manager, 'deleteBackupRequests');
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  const locations = storageLocationLookup(manager);
  const use = locationUse(manager);
  /** The Velero Backup tenantkit made under `nab`'s NACUUID, if any (for counting, not acting on). */
  const veleroBackupOf = (nab: NonAdminBackup): VeleroObject | undefined => {
    const uuid = nab.status?.veleroBackup?.nacuuid;
    return uuid ? backups.byIndex(Index.nabUuid, uuid).find((b) => b.metadata.name === uuid) : undefined;
  };
  // Counted objects map to the NAB by the Backup's annotations, or to the NAB that adopted it.
  const progress = backupProgress(manager, (b) => nabKeysFor(adoption, b));
  // NABs of existing Backups (schedule runs, backup sync): see adopt.ts.
  const adoption = ownerships(manager);

  manager
    .controller('nonadminbackup')
    .for(NonAdminBackupCrd.type)
    .watches(ManagedTypes.backups, originOf)
    .watches(ManagedTypes.deleteBackupRequests, originOf)
    .watches(VeleroResources.backups, () => queue.drain())
    .watches(VeleroResources.backups, (b) => nabKeysFor(adoption, b))
    // NABs waiting for Velero: a location's phase moved, or a backup of their namespace finished.
    .watches(VeleroResources.backupStorageLocations, () => waiting(nabs.list()))
    .watches(ManagedTypes.backups, (b) =>
      waiting(nabs.list(), b.metadata.annotations?.[Annotations.nabNamespace] ?? ''),
    )
    // Progress counts: a PodVolumeBackup or DataUpload of a tenant's Backup moved.
    .watches(progress.podVolumes, progress.map)
    .watches(progress.dataMovers, progress.map)
    // A policy change applies live: every NAB is checked again.
    .watches(configType, () => nabs.list().map((n) => objectKey(n.metadata)), generationChanged)
    // A NAB naming a tenant storage location goes on when that location is ready (or refuses it when gone).
    .watches(NonAdminBackupStorageLocationCrd.type, (l) =>
      nabs
        .list()
        .filter(
          (n) =>
            n.metadata.namespace === l.metadata.namespace &&
            n.spec?.backupSpec?.storageLocation === l.metadata.name,
        )
        .map((n) => objectKey(n.metadata)),
    )
    .concurrency(4)
    .complete(async (key, ctx) => {
      const nab = nabs.get(key);
      if (!nab) return undefined;
      const policy = currentPolicy(configs);
      const uuid = nab.status?.veleroBackup?.nacuuid;
      const type = NonAdminBackupCrd.type;
      const ns = nab.metadata.namespace!;
      // Only in Velero's namespace (the config's, never the one status names: a velero.io Backup restored
      // into a tenant namespace carries tenantkit's labels too), by name too (a Backup synced from a
      // tenant's bucket may carry anyone's NACUUID label), and made for this very NAB.
      const backup = uuid
        ? (backups
            .byIndex(Index.nabUuid, uuid)
            .find(
              (b) =>
                b.metadata.name === uuid &&
                b.metadata.namespace === policy.veleroNamespace &&
                b.metadata.annotations?.[Annotations.nabNamespace] === ns &&
                b.metadata.annotations?.[Annotations.nabName] === nab.metadata.name,
            ) ?? adoptedBackup(adoption, nab, policy.veleroNamespace))
        : undefined;
      // A NACUUID tenantkit did not write (a status forged through a restore, say) is never acted on.
      const forged =
        uuid !== undefined &&
        syncedFromOf(nab) === undefined &&
        !isNacObjectName(ns, nab.metadata.name!, uuid);
      const generation = nab.metadata.generation;

      /** `ifVersion`: fail (409, retried) unless the object is still at that resourceVersion. */
      const writeStatus = async (status: Status, ifVersion?: string) => {
        if (jsonEqual(status as never, (nab.status ?? {}) as never)) return;
        await ctx.client.patch(
          type,
          nab.metadata.name!,
          ns,
          {
            ...(ifVersion ? { metadata: { resourceVersion: ifVersion } } : {}),
            status: changedFields(status as JsonObject, (nab.status ?? {}) as JsonObject),
          },
          PatchType.merge,
          'status',
        );
      };
      const condition = (status: Status, c: Omit<Condition, 'lastTransitionTime'>): Condition[] =>
        setCondition(status.conditions as Condition[] | undefined, { ...c, observedGeneration: generation });

      // Removed by the tenant: the Velero Backup object goes, its data stays in storage.
      if (nab.metadata.deletionTimestamp) {
        if (!hasFinalizer(nab, NabFinalizer)) return undefined;
        for (const b of backup ? [backup] : []) {
          await ctx.client.delete(VeleroResources.backups, b.metadata.name!, b.metadata.namespace);
        }
        if (backup && !nab.spec?.deleteBackup) {
          ctx.events.record(
            nab,
            'Normal',
            'BackupDataKept',
            'Delete',
            `Velero Backup ${backup.metadata.name} was removed but its data stays in object storage; set spec.deleteBackup: true before deleting to remove the data too`,
          );
        }
        await removeFinalizer(ctx.client, type, nab, NabFinalizer);
        return undefined;
      }

      if (spec(nab).deleteBackup === true) {
        const request = uuid
          ? deleteRequests
              .byIndex(Index.nabUuid, uuid)
              .find((r) => r.metadata.name === uuid && r.metadata.namespace === backup?.metadata.namespace)
          : undefined;
        return deleteBackup(nab, backup, uuid, request, ctx, writeStatus, condition);
      }

      const base: Status = { ...(nab.status ?? {}) };
      if (forged) {
        const message = `status.veleroBackup.nacuuid ${uuid} was not written by tenantkit for this NonAdminBackup; delete it and create a new one`;
        await writeStatus({
          ...base,
          phase: 'BackingOff',
          conditions: condition(base, {
            type: 'Accepted',
            status: 'False',
            reason: 'InvalidStatus',
            message,
          }),
        });
        return undefined;
      }
      if (!policy.enabled) {
        const message =
          'non-admin backups are not enabled: an admin must set spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"';
        await writeStatus({
          ...base,
          phase: 'BackingOff',
          conditions: condition(base, {
            type: 'Accepted',
            status: 'False',
            reason: 'NonAdminDisabled',
            message,
          }),
        });
        return undefined;
      }

      // A NAB for an existing Backup adopts it (if its namespace owns it) and never makes one.
      if (!backup && syncedFromOf(nab) !== undefined) {
        return reconcileAdoption(adoption, nab, ctx, { policy, writeStatus, condition });
      }

      // Seen before (phase Created is written only once the Velero Backup was observed) and gone now:
      // deleted outside tenantkit, expired (its TTL), or left in Velero's previous namespace. Making it
      // again would run a backup nobody asked for (after a namespace move, every old backup at once).
      if (!backup && uuid && base.phase === 'Created') {
        const name = nab.status?.veleroBackup?.name ?? uuid;
        if (
          findCondition(base.conditions as Condition[] | undefined, 'Queued')?.reason !==
          'VeleroBackupMissing'
        ) {
          ctx.events.record(nab, 'Warning', 'VeleroBackupMissing', 'Backup', `Velero Backup ${name} is gone`);
        }
        await writeStatus({
          ...base,
          queueInfo: { estimatedQueuePosition: 0 },
          conditions: condition(base, {
            type: 'Queued',
            status: 'False',
            reason: 'VeleroBackupMissing',
            message: `Velero Backup ${name} no longer exists in namespace ${policy.veleroNamespace} (deleted outside tenantkit, expired, or Velero moved; Velero's bucket sync brings it back if its data is still there); create a new NonAdminBackup to back up again`,
          }),
        });
        return undefined;
      }

      // Once a Velero Backup exists, the NAB's request is settled: mirror it, whatever the spec says now.
      if (!backup) {
        const problems = backupSpecProblems(
          ns,
          tenantSpec(nab),
          policy.enforceBackupSpec,
          (name) => locations.find(ns, name) !== undefined,
        );
        if (problems.length > 0 && !uuid) {
          const message = problems.join('; ');
          ctx.events.record(nab, 'Warning', 'InvalidBackupSpec', 'Validate', message);
          ctx.logger.info({ nab: key, problems }, 'NonAdminBackup rejected');
          await writeStatus({
            ...base,
            phase: 'BackingOff',
            conditions: condition(base, {
              type: 'Accepted',
              status: 'False',
              reason: 'InvalidBackupSpec',
              message,
            }),
          });
          return undefined;
        }
        const current = await ensureFinalizer(ctx.client, type, nab, NabFinalizer);
        if (!uuid) {
          // Step 1: the identity, in status, before anything exists in Velero's namespace. Guarded by
          // resourceVersion: a reconcile on a cache that has not seen an earlier step 1 yet would
          // otherwise write a second NACUUID over it, and two Velero Backups could follow.
          const name = nacObjectName(ns, nab.metadata.name!);
          await writeStatus(
            {
              ...base,
              phase: 'New',
              veleroBackup: { nacuuid: name, name, namespace: policy.veleroNamespace },
              conditions: condition(base, {
                type: 'Accepted',
                status: 'True',
                reason: 'BackupAccepted',
                message: `backup accepted against NonAdminBackupConfig generation ${policy.generation}`,
              }),
            },
            current.metadata.resourceVersion,
          );
          return undefined;
        }
        // Step 2: the Velero Backup, named and labelled by the NACUUID.
        const backupSpec: JsonObject = withForcedBackupFields({
          ...withEnforced(tenantSpec(nab), policy.enforceBackupSpec),
          includedNamespaces: [ns],
        });
        delete backupSpec.storageLocation;
        // A tenant location (a NABSL of this namespace, by name) is used only once approved and its
        // Velero BSL exists; until then the NAB waits, saying why (the NABSL's events bring it back).
        const wanted = tenantSpec(nab).storageLocation;
        if (typeof wanted === 'string' && wanted !== '') {
          const location = locations.resolve(ns, wanted);
          if ('waiting' in location) {
            await writeStatus({
              ...base,
              conditions: condition(base, {
                type: 'Queued',
                status: 'False',
                reason: 'StorageLocationNotReady',
                message: location.waiting,
              }),
            });
            return undefined;
          }
          backupSpec.storageLocation = location.bsl;
        }
        // Velero fails (and may stall on) a backup whose location is not Available; a namespace holds
        // at most the admin's number of places in Velero's queue. Either way the NAB waits, saying why.
        const bslName = backupSpec.storageLocation as string | undefined;
        const unusable = use.unusable(policy.veleroNamespace, bslName);
        const wait = unusable
          ? { reason: 'StorageLocationUnavailable', message: unusable }
          : queueLimitReached(nab, nabs.list(), policy, veleroBackupOf);
        if (wait) {
          await writeStatus({
            ...base,
            conditions: condition(base, { type: 'Queued', status: 'False', ...wait }),
          });
          return undefined;
        }
        try {
          await ctx.client.create(VeleroResources.backups, {
            metadata: {
              // The NACUUID and the config's namespace: never a name or namespace read back from status.
              name: uuid,
              namespace: policy.veleroNamespace,
              labels: {
                [Labels.managedBy]: ManagedByValue,
                [Labels.oadp]: 'True',
                [Labels.nabUuid]: uuid,
              },
              annotations: {
                [Annotations.nabName]: nab.metadata.name!,
                [Annotations.nabNamespace]: ns,
                [CreatedAtAnnotation]: new Date().toISOString(),
              },
            },
            spec: backupSpec,
          } as KubeObject);
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
        }
        return undefined;
      }

      // Step 3: mirror the Velero Backup, with its place in Velero's queue. Until the queue's informer
      // saw the Backup its position is unknown; that informer's event brings this NAB back.
      const veleroNs = backup.metadata.namespace!;
      if (!queue.has(veleroNs, backup.metadata.name!)) return undefined;
      const veleroPhase = (backup.status?.phase as string | undefined) ?? 'New';
      // One Event when the outcome is known (not one per step: that would double the API writes per NAB).
      const before = nab.status?.veleroBackup?.status?.phase;
      if (before !== veleroPhase && (finishedPhases as readonly string[]).includes(veleroPhase)) {
        const ok = veleroPhase === 'Completed';
        ctx.events.record(
          nab,
          ok ? 'Normal' : 'Warning',
          `Backup${veleroPhase}`,
          'Backup',
          `Velero Backup ${backup.metadata.name} ended ${veleroPhase}${ok ? '' : '; see its logs and status.veleroBackup.status'}`,
        );
      }
      const mirrored: Status = {
        ...base,
        phase: 'Created',
        queueInfo: { estimatedQueuePosition: queue.position(veleroNs, backup.metadata.name!) },
        veleroBackup: {
          ...base.veleroBackup,
          name: backup.metadata.name!,
          namespace: backup.metadata.namespace!,
          spec: backup.spec as never,
          ...(backup.status ? { status: backup.status as never } : {}),
        },
        conditions: condition(base, {
          type: 'Queued',
          status: 'True',
          reason: 'BackupScheduled',
          message: `Velero Backup ${backup.metadata.name} is ${veleroPhase}`,
        }),
      };
      // Pod volume and data mover counts; written only when they change (see progress.ts).
      await writeStatus(withProgress(mirrored, progress.counts(veleroNs, backup.metadata.name!)));
      return undefined;
    });
}

const spec = (nab: NonAdminBackup) => nab.spec ?? { backupSpec: {} };

/** Reasons a NAB with a NACUUID waits before its Velero Backup is made (see the gate in the reconcile). */
const waitingReasons = new Set(['StorageLocationUnavailable', 'NamespaceQueueLimit']);

/** The keys of NABs (of `namespace`, when given) waiting for Velero's queue or a location. */
function waiting(nabs: NonAdminBackup[], namespace?: string): string[] {
  return nabs
    .filter(
      (n) =>
        (namespace === undefined || n.metadata.namespace === namespace) &&
        waitingReasons.has(
          findCondition(n.status?.conditions as Condition[] | undefined, 'Queued')?.reason ?? '',
        ),
    )
    .map((n) => objectKey(n.metadata));
}

/** Whether `n` comes before `nab` in its namespace's line: creation time, then name. */
const before = (n: NonAdminBackup, nab: NonAdminBackup) => {
  const a = n.metadata.creationTimestamp ?? '';
  const b = nab.metadata.creationTimestamp ?? '';
  return a < b || (a === b && n.metadata.name! < nab.metadata.name!);
};

/**
 * The namespace's share of Velero's queue (policy.maxQueuedBackupsPerNamespace): `nab` waits while that
 * many earlier NABs of its namespace are unfinished in Velero or about to be handed to it. Decided by
 * creation order, so two reconciles at once cannot both take the last place, and a NAB waiting for its
 * own location (not Velero's queue) holds no place.
 */
function queueLimitReached(
  nab: NonAdminBackup,
  all: NonAdminBackup[],
  policy: BackupPolicy,
  veleroBackupOf: (n: NonAdminBackup) => VeleroObject | undefined,
): { reason: string; message: string } | undefined {
  const limit = policy.maxQueuedBackupsPerNamespace;
  if (limit === 0) return undefined;
  const ns = nab.metadata.namespace;
  const inLine = (n: NonAdminBackup) => {
    if (n.metadata.namespace !== ns || n === nab || !before(n, nab)) return false;
    if (!n.status?.veleroBackup?.nacuuid || n.metadata.deletionTimestamp || n.spec?.deleteBackup)
      return false;
    if (syncedFromOf(n) !== undefined) return false;
    const b = veleroBackupOf(n);
    if (b) return !(finishedPhases as readonly string[]).includes(String(b.status?.phase ?? ''));
    const reason = findCondition(n.status?.conditions as Condition[] | undefined, 'Queued')?.reason;
    return (
      n.status?.phase !== 'Created' &&
      reason !== 'StorageLocationNotReady' &&
      reason !== 'StorageLocationUnavailable'
    );
  };
  const ahead = all.filter(inLine).length;
  if (ahead < limit) return undefined;
  return {
    reason: 'NamespaceQueueLimit',
    message: `${ahead} earlier NonAdminBackups of namespace ${ns} are in Velero's queue or waiting for it, and the admin allows ${limit} at once (NonAdminBackupConfig "cluster" spec.nonAdmin.maxQueuedBackupsPerNamespace); this one is handed to Velero when one of them finishes`,
  };
}
const tenantSpec = (nab: NonAdminBackup): JsonObject => ({ ...((spec(nab).backupSpec ?? {}) as JsonObject) });

/** How long after a refused DeleteBackupRequest tenantkit asks Velero again: doubling, at most 5 minutes. */
export const deleteRetryMs = (attempt: number) => Math.min(15_000 * 2 ** Math.max(0, attempt - 1), 300_000);
const AttemptAnnotation = 'tenantkit.io/delete-attempt';

/**
 * spec.deleteBackup: a DeleteBackupRequest removes the data and the Backup, then the NAB goes. Velero
 * processes a request once: when it refuses (the backup still running, its location unavailable or
 * read-only, a restore of it still being finalised), the tenant sees Velero's reasons and tenantkit asks
 * again after a back-off, instead of the NAB staying "Deleting" for ever.
 */
async function deleteBackup(
  nab: NonAdminBackup,
  backup: VeleroObject | undefined,
  uuid: string | undefined,
  request: VeleroObject | undefined,
  ctx: ReconcileContext,
  writeStatus: (s: Status) => Promise<void>,
  condition: (s: Status, c: Omit<Condition, 'lastTransitionTime'>) => Condition[],
): Promise<{ requeueAfterMs: number } | undefined> {
  const type = NonAdminBackupCrd.type;
  const base: Status = { ...(nab.status ?? {}) };
  if (!backup || !uuid) {
    // Nothing (left) in Velero: the NAB itself goes.
    await removeFinalizer(ctx.client, type, nab, NabFinalizer);
    await ctx.client.delete(type, nab.metadata.name!, nab.metadata.namespace);
    return undefined;
  }
  const attempt = Number(request?.metadata.annotations?.[AttemptAnnotation] ?? '1') || 1;
  const errors = (request?.status?.errors as string[] | undefined) ?? [];
  if (request && request.status?.phase === 'Processed' && errors.length > 0) {
    const wait = Date.parse(request.metadata.creationTimestamp ?? '') + deleteRetryMs(attempt) - Date.now();
    const message = `Velero did not delete backup ${backup.metadata.name} (attempt ${attempt}): ${errors.join('; ')}; tenantkit asks again in ${Math.max(1, Math.ceil(wait / 1000))} s`;
    if (wait > 0) {
      if (base.conditions?.find((c) => c.type === 'Deleting')?.reason !== 'VeleroRefused') {
        ctx.events.record(nab, 'Warning', 'DeleteRefused', 'Delete', message);
      }
      await writeStatus({
        ...base,
        phase: 'Deleting',
        conditions: condition(base, { type: 'Deleting', status: 'True', reason: 'VeleroRefused', message }),
      });
      return { requeueAfterMs: wait };
    }
    // Velero keeps one request per backup: the refused one goes before the next is made.
    await ctx.client
      .delete(VeleroResources.deleteBackupRequests, uuid, backup.metadata.namespace)
      .catch(() => {});
    return createDeleteRequest(nab, backup, uuid, attempt + 1, ctx, writeStatus, condition);
  }
  // No request yet, or one Velero is working on (then the create is refused as existing and only the
  // status is made sure of).
  return createDeleteRequest(nab, backup, uuid, request ? attempt : 1, ctx, writeStatus, condition);
}

async function createDeleteRequest(
  nab: NonAdminBackup,
  backup: VeleroObject,
  uuid: string,
  attempt: number,
  ctx: ReconcileContext,
  writeStatus: (s: Status) => Promise<void>,
  condition: (s: Status, c: Omit<Condition, 'lastTransitionTime'>) => Condition[],
): Promise<undefined> {
  const base: Status = { ...(nab.status ?? {}) };
  const name = backup.metadata.name!;
  try {
    await ctx.client.create(VeleroResources.deleteBackupRequests, {
      metadata: {
        name: uuid,
        namespace: backup.metadata.namespace,
        labels: {
          [Labels.managedBy]: ManagedByValue,
          [Labels.oadp]: 'True',
          [Labels.nabUuid]: uuid,
          [Labels.backupName]: name,
          ...(backup.metadata.uid ? { [Labels.backupUid]: backup.metadata.uid } : {}),
        },
        annotations: {
          [Annotations.nabName]: nab.metadata.name!,
          [Annotations.nabNamespace]: nab.metadata.namespace!,
          [AttemptAnnotation]: String(attempt),
        },
      },
      spec: { backupName: name },
    } as KubeObject);
    ctx.events.record(
      nab,
      'Normal',
      'DeleteRequested',
      'Delete',
      `asked Velero to delete backup ${name} and its data`,
    );
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  await writeStatus({
    ...base,
    phase: 'Deleting',
    veleroDeleteBackupRequest: { nacuuid: uuid, name: uuid, namespace: backup.metadata.namespace! },
    conditions: condition(base, {
      type: 'Deleting',
      status: 'True',
      reason: 'DeletionPending',
      message: `Velero is deleting backup ${name} and its data`,
    }),
  });
  return undefined;
}
