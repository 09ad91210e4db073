// NonAdminBackup controller: a tenant's NAB becomes a Velero Backup in Velero's namespace, limited to the
// tenant's namespace, with the admin's enforced fields filled in; the Backup's progress is mirrored back.
// Crash safety: the NACUUID goes into status before any Velero object exists, the Backup is named by it
// and found by its label, so a controller killed at any step neither duplicates nor orphans anything.
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupCrd,
  NonAdminBackupStorageLocationCrd,
} from '../../../crds/backup.ts';
import { VeleroResources } from '../../../crds/velero.ts';
import { type Condition, findCondition } from '../../../kube/conditions.ts';
import {
  generationChanged,
  ObjectReconciler,
  type ReconcileContext,
  type ReconcileResult,
} from '../../../kube/controller.ts';
import { failpoint } from '../../../kube/failpoint.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../../../kube/finalizers.ts';
import { ByNamespace, type Informer } from '../../../kube/informer.ts';
import type { Manager } from '../../../kube/manager.ts';
import { type KubeObject, objectKey } from '../../../kube/resources.ts';
import { type StatusView, StatusWriter } from '../../../kube/status.ts';
import {
  Annotations,
  CreatedAtAnnotation,
  Index,
  Labels,
  NabFinalizer,
  NabIdentityWritten,
  syncedFromOf,
  type VeleroObject,
} from '../../model.ts';
import { type BackupPolicy, configType, currentPolicy, NonAdminDisabled } from '../../policy/config.ts';
import { type JsonObject, withEnforced } from '../../policy/enforce.ts';
import { backupSpecProblems } from '../../policy/validate.ts';
import { withForcedBackupFields } from '../../policy/velero-filters.ts';
import { isNacObjectName, nacObjectName } from '../../velero/names.ts';
import { originRecord } from '../../velero/ownership.ts';
import { type Ownerships, ownerships } from '../../velero/ownerships.ts';
import { backOff, type Refusal } from '../back-off.ts';
import { ManagedTypes, managedCache, Origin } from '../caches.ts';
import { type StorageLocationLookup, storageLocationLookup } from '../location/lookup.ts';
import { type LocationUse, locationUse } from '../location/use.ts';
import { outcomeEvent, outcomeOf } from '../outcome.ts';
import { backupProgress, type ProgressSource, withProgress } from '../progress.ts';
import { backupQueuePhases, backupRunningPhases, phaseOf, type QueueTracker, trackQueue } from '../queue.ts';
import { type StallTracker, stallOutcome, trackStalls } from '../stall.ts';
import { adoptedBackup, nabKeysFor, reconcileAdoption } from '../sync/adopt.ts';
import { createOnce, managedMeta } from '../velero-objects.ts';
import { deleteBackup } from './delete.ts';
import { freesPlaces, inVeleroQueue, queueLimitReached, waiting } from './queue-limit.ts';

type Status = NonNullable<NonAdminBackup['status']>;
type Result = Promise<ReconcileResult | undefined>;

/** What the NAB controller reads, wired by registerNabController. */
export interface NabSources {
  nabs: Informer<NonAdminBackup>;
  backups: Informer<VeleroObject>;
  deleteRequests: Informer<VeleroObject>;
  configs: Informer<NonAdminBackupConfig>;
  locations: StorageLocationLookup;
  use: LocationUse;
  progress: ProgressSource;
  adoption: Ownerships;
  queue: QueueTracker;
  stalls: StallTracker;
}

/** One reconcile's view of a NAB: read from the caches once, written through `status`. */
interface Seen extends StatusView<Status> {
  nab: NonAdminBackup;
  ns: string;
  policy: BackupPolicy;
  /** The NACUUID status records (tenantkit's step 1), if any. */
  uuid: string | undefined;
  /** The Velero Backup made (or adopted) for this NAB, if any. */
  backup: VeleroObject | undefined;
}

export function registerNabController(manager: Manager): void {
  // Velero's queue: every Backup in Velero's namespace counts, not only tenantkit's.
  const queue = trackQueue(manager, VeleroResources.backups, backupQueuePhases, Origin.nab);
  const nabs = manager.informer<NonAdminBackup>(NonAdminBackupCrd.type);
  // NABs of existing Backups (schedule runs, backup sync): see ../sync/adopt.ts.
  const adoption = ownerships(manager);
  // Counted objects map to the NAB by the Backup's annotations, or to the NAB that adopted it.
  const progress = backupProgress(manager, (b) => nabKeysFor(adoption, b));
  const stalls = trackStalls(
    manager,
    'Backup',
    queue,
    { queued: backupQueuePhases, running: backupRunningPhases },
    progress,
  );

  const reconciler = new NabReconciler(
    {
      nabs,
      backups: managedCache(manager, 'backups'),
      deleteRequests: managedCache(manager, 'deleteBackupRequests'),
      configs: manager.informer<NonAdminBackupConfig>(configType),
      locations: storageLocationLookup(manager),
      use: locationUse(manager),
      progress,
      adoption,
      queue,
      stalls,
    },
    nabs,
  );

  manager
    .controller('nonadminbackup')
    .for(NonAdminBackupCrd.type)
    .watches(ManagedTypes.backups, Origin.nab)
    .watches(ManagedTypes.deleteBackupRequests, Origin.nab)
    .watches(VeleroResources.backups, () => queue.drain())
    // A stalled queue moved again: every NAB in it says so (see ../stall.ts).
    .watches(VeleroResources.backups, () => stalls.drain())
    .watches(progress.podVolumes, () => stalls.drain())
    .watches(progress.dataMovers, () => stalls.drain())
    .watches(VeleroResources.backups, (b) => nabKeysFor(adoption, b))
    // NABs waiting for Velero: a location's phase moved, or a backup of their namespace finished.
    .watches(VeleroResources.backupStorageLocations, () => waiting(nabs.list()))
    .watches(ManagedTypes.backups, (b) =>
      waiting(
        nabs.list(),
        b.metadata.annotations?.[Annotations.nabNamespace] ??
          b.metadata.annotations?.[Annotations.nasNamespace] ??
          '',
      ),
    )
    // ... or an earlier NAB of their namespace was refused, deleted, or waits for its location instead.
    .watches(NonAdminBackupCrd.type, (n) =>
      freesPlaces(n as NonAdminBackup)
        ? waiting(nabs.byIndex(ByNamespace, n.metadata.namespace ?? ''), n.metadata.namespace)
        : [],
    )
    // Progress counts: a PodVolumeBackup or DataUpload of a tenant's Backup moved.
    .watches(progress.podVolumes, progress.map)
    .watches(progress.dataMovers, progress.map)
    // A policy change applies live: every NAB is checked again.
    .watchesAll(configType, generationChanged)
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
    .complete(reconciler);
}

export class NabReconciler extends ObjectReconciler<NabSources, NonAdminBackup, Seen> {
  protected override async converge(seen: Seen): Result {
    const { nab, ctx } = seen;
    if (spec(nab).deleteBackup === true) return this.deleteBackup(seen);
    const refusal = refusalOf(seen);
    if (refusal) return backOff(seen.status, refusal);
    // A NAB for an existing Backup adopts it (if its namespace owns it) and never makes one.
    if (!seen.backup && syncedFromOf(nab) !== undefined) {
      return reconcileAdoption(this.from.adoption, nab, ctx, { policy: seen.policy, status: seen.status });
    }
    if (!seen.backup && seen.uuid && seen.base.phase === 'Created') return this.reportMissing(seen);
    // Once a Velero Backup exists, the NAB's request is settled: mirror it, whatever the spec says now.
    if (seen.backup) return this.mirror(seen, seen.backup);
    return this.admitAndCreate(seen);
  }

  /** The NAB's policy, identity and Velero Backup, from the caches. */
  protected override read(nab: NonAdminBackup, ctx: ReconcileContext): Seen {
    const policy = currentPolicy(this.from.configs);
    const uuid = nab.status?.veleroBackup?.nacuuid;
    const ns = nab.metadata.namespace!;
    // Only in Velero's namespace (the config's, never the one status names: a velero.io Backup restored
    // into a tenant namespace carries tenantkit's labels too), by name too (a Backup synced from a
    // tenant's bucket may carry anyone's NACUUID label), and made for this very NAB.
    const backup = uuid
      ? (this.from.backups
          .byIndex(Index.nabUuid, uuid)
          .find(
            (b) =>
              b.metadata.name === uuid &&
              b.metadata.namespace === policy.veleroNamespace &&
              b.metadata.annotations?.[Annotations.nabNamespace] === ns &&
              b.metadata.annotations?.[Annotations.nabName] === nab.metadata.name,
          ) ?? adoptedBackup(this.from.adoption, nab, policy.veleroNamespace))
      : undefined;
    const status = new StatusWriter<Status>(ctx, NonAdminBackupCrd.type, nab);
    return { nab, ns, policy, uuid, backup, base: status.current, status, ctx };
  }

  /** Removed by the tenant: the Velero Backup object goes, its data stays in storage. */
  protected override async finalize({ nab, backup, ctx, status, policy }: Seen): Result {
    if (!hasFinalizer(nab, NabFinalizer)) return undefined;
    if (backup)
      await ctx.client.delete(VeleroResources.backups, backup.metadata.name!, backup.metadata.namespace);
    if (backup && !nab.spec?.deleteBackup) {
      // Velero's bucket sync makes the Backup again from its data, and backup sync (when on) a NAB for it:
      // the tenant should not be surprised by a NonAdminBackup she deleted coming back.
      const back =
        policy.enabled && policy.backupSyncPeriodMs > 0
          ? `, so Velero's bucket sync brings the backup back and backup sync makes a NonAdminBackup for it again (labelled ${Labels.syncedFrom}=${backup.metadata.name})`
          : '';
      status.event({
        type: 'Normal',
        reason: 'BackupDataKept',
        action: 'Delete',
        message: `Velero Backup ${backup.metadata.name} was removed but its data stays in object storage${back}; to be rid of a backup, set spec.deleteBackup: true (before deleting, or on the one that came back) to remove its data too`,
      });
    }
    await removeFinalizer(ctx.client, NonAdminBackupCrd.type, nab, NabFinalizer);
    return undefined;
  }

  /**
   * Seen before (phase Created is written only once the Velero Backup was observed) and gone now:
   * deleted outside tenantkit, expired (its TTL), or left in Velero's previous namespace. Making it
   * again would run a backup nobody asked for (after a namespace move, every old backup at once).
   */
  private async reportMissing({ nab, uuid, base, policy, status }: Seen): Result {
    const name = nab.status?.veleroBackup?.name ?? uuid;
    const known =
      findCondition(base.conditions as Condition[] | undefined, 'Queued')?.reason === 'VeleroBackupMissing';
    await status.write(
      {
        ...base,
        queueInfo: { estimatedQueuePosition: 0 },
        conditions: status.condition(base, {
          type: 'Queued',
          status: 'False',
          reason: 'VeleroBackupMissing',
          message: `Velero Backup ${name} no longer exists in namespace ${policy.veleroNamespace} (deleted outside tenantkit, expired, or Velero moved; Velero's bucket sync brings it back if its data is still there); create a new NonAdminBackup to back up again`,
        }),
      },
      known
        ? {}
        : {
            event: {
              type: 'Warning',
              reason: 'VeleroBackupMissing',
              action: 'Backup',
              message: `Velero Backup ${name} is gone`,
            },
          },
    );
    return undefined;
  }

  /** No Velero Backup yet: check the request, take a NACUUID (step 1), then make the Backup (step 2). */
  private async admitAndCreate(seen: Seen): Result {
    const { nab, ns, uuid, policy, ctx } = seen;
    const problems = backupSpecProblems(
      ns,
      tenantSpec(nab),
      policy.enforceBackupSpec,
      (name) => this.from.locations.find(ns, name) !== undefined,
    );
    if (problems.length > 0 && !uuid) {
      ctx.logger.info({ nab: objectKey(nab.metadata), problems }, 'NonAdminBackup rejected');
      return backOff(
        seen.status,
        { reason: 'InvalidBackupSpec', message: problems.join('; ') },
        { action: 'Validate', always: true },
      );
    }
    const current = await ensureFinalizer(ctx.client, NonAdminBackupCrd.type, nab, NabFinalizer);
    if (!uuid) return this.admit(seen, current.metadata.resourceVersion);
    const placed = this.placement(seen);
    if ('wait' in placed) return this.wait(seen, placed.wait);
    return this.create(seen, uuid, placed.spec);
  }

  /**
   * Step 1: the identity, in status, before anything exists in Velero's namespace. Guarded by
   * resourceVersion: a reconcile on a cache that has not seen an earlier step 1 yet would otherwise
   * write a second NACUUID over it, and two Velero Backups could follow.
   */
  private async admit({ nab, ns, base, policy, status }: Seen, resourceVersion: string | undefined): Result {
    const name = nacObjectName(ns, nab.metadata.name!);
    await status.write(
      {
        ...base,
        phase: 'New',
        veleroBackup: { nacuuid: name, name, namespace: policy.veleroNamespace },
        conditions: status.condition(base, {
          type: 'Accepted',
          status: 'True',
          reason: 'BackupAccepted',
          message: `backup accepted against NonAdminBackupConfig generation ${policy.generation}`,
        }),
      },
      { ifVersion: resourceVersion },
    );
    // The crash point between step 1 and step 2, held open for the fault suite (off by default).
    await failpoint(NabIdentityWritten);
    return undefined;
  }

  /**
   * The Velero BackupSpec to hand on, or why the NAB waits: a tenant location (a NABSL of this namespace,
   * by name) is used only once approved and its Velero BSL exists; Velero fails (and may stall on) a
   * backup whose location is not Available; a namespace holds at most the admin's number of places in
   * Velero's queue.
   */
  private placement({ nab, ns, policy }: Seen): { spec: JsonObject } | { wait: Refusal } {
    const backupSpec: JsonObject = withForcedBackupFields({
      ...withEnforced(tenantSpec(nab), policy.enforceBackupSpec),
      includedNamespaces: [ns],
    });
    delete backupSpec.storageLocation;
    const wanted = tenantSpec(nab).storageLocation;
    if (typeof wanted === 'string' && wanted !== '') {
      const location = this.from.locations.resolve(ns, wanted);
      if ('waiting' in location)
        return { wait: { reason: 'StorageLocationNotReady', message: location.waiting } };
      backupSpec.storageLocation = location.bsl;
    }
    const unusable = this.from.use.unusable(
      policy.veleroNamespace,
      backupSpec.storageLocation as string | undefined,
    );
    if (unusable) return { wait: { reason: 'StorageLocationUnavailable', message: unusable } };
    const { runs } = inVeleroQueue(this.from.backups.list(), policy.veleroNamespace, ns);
    const full = queueLimitReached(nab, this.from.nabs.list(), policy, (n) => this.veleroBackupOf(n), runs);
    return full ? { wait: full } : { spec: backupSpec };
  }

  /** Waiting before Velero gets the backup: condition Queued False saying why (the events bring it back). */
  private async wait({ base, status }: Seen, why: Refusal): Result {
    await status.write({
      ...base,
      conditions: status.condition(base, { type: 'Queued', status: 'False', ...why }),
    });
    return undefined;
  }

  /** Step 2: the Velero Backup, named and labelled by the NACUUID. */
  private async create({ nab, ns, policy, ctx }: Seen, uuid: string, backupSpec: JsonObject): Result {
    // The NACUUID and the config's namespace: never a name or namespace read back from status. Which
    // namespace instance and organization it is taken from (velero/ownership.ts): the cache must know it.
    const namespace = this.from.adoption.namespace(ns);
    if (!namespace?.metadata.uid) throw new Error(`namespace ${ns} is not in the cache yet; retrying`);
    const metadata = managedMeta(uuid, policy.veleroNamespace, Labels.nabUuid, {
      [Annotations.nabName]: nab.metadata.name!,
      [Annotations.nabNamespace]: ns,
      [CreatedAtAnnotation]: new Date().toISOString(),
      ...originRecord(namespace),
    });
    await createOnce(ctx, VeleroResources.backups, { metadata, spec: backupSpec } as KubeObject);
    return undefined;
  }

  /**
   * Step 3: mirror the Velero Backup, with its place in Velero's queue. Until the queue's informer saw the
   * Backup its position is unknown; that informer's event brings this NAB back.
   */
  private async mirror({ nab, base, status }: Seen, backup: VeleroObject): Result {
    const veleroNs = backup.metadata.namespace!;
    const name = backup.metadata.name!;
    if (!this.from.queue.has(veleroNs, name)) return undefined;
    const veleroPhase = phaseOf(backup) || 'New';
    const before = nab.status?.veleroBackup?.status?.phase;
    const outcome = outcomeOf('Backup', nab.metadata.name!, name, veleroPhase, backup.status);
    const ended = outcomeEvent('Backup', before, veleroPhase, outcome);
    if (ended) status.event(ended);
    const position = this.from.queue.position(veleroNs, name);
    const stall = await stallOutcome(this.from.stalls, {
      name,
      phase: veleroPhase,
      unfinished: unfinished(veleroPhase),
      position,
      veleroNamespace: veleroNs,
      conditions: base.conditions as Condition[] | undefined,
    });
    if (stall.event) status.event(stall.event);
    const mirrored: Status = {
      ...base,
      phase: 'Created',
      queueInfo: { estimatedQueuePosition: position },
      veleroBackup: {
        ...base.veleroBackup,
        name,
        namespace: veleroNs,
        spec: backup.spec as never,
        ...(backup.status ? { status: backup.status as never } : {}),
      },
      conditions: status.condition(base, {
        type: 'Queued',
        status: 'True',
        ...(stall.stalled ?? { reason: 'BackupScheduled', message: outcome }),
      }),
    };
    // Pod volume and data mover counts; written only when they change (see progress.ts).
    await status.write(withProgress(mirrored, this.from.progress.counts(veleroNs, name)));
    // A queue becomes stalled by time passing, not by an event: look again when it would be, and while
    // it is (a move that ends it also brings this NAB back, see the watches).
    return stall.requeue;
  }

  /** spec.deleteBackup: see delete.ts. */
  private async deleteBackup(seen: Seen): Result {
    const { uuid, backup } = seen;
    const request = uuid
      ? this.from.deleteRequests
          .byIndex(Index.nabUuid, uuid)
          .find((r) => r.metadata.name === uuid && r.metadata.namespace === backup?.metadata.namespace)
      : undefined;
    return deleteBackup(seen, request);
  }

  /** The Velero Backup tenantkit made under `nab`'s NACUUID, if any (for counting, not acting on). */
  private veleroBackupOf(nab: NonAdminBackup): VeleroObject | undefined {
    const uuid = nab.status?.veleroBackup?.nacuuid;
    return uuid
      ? this.from.backups.byIndex(Index.nabUuid, uuid).find((b) => b.metadata.name === uuid)
      : undefined;
  }
}

/** Why a NAB is not acted on at all: a NACUUID tenantkit did not write, or non-admin backup turned off. */
export function refusalOf({
  nab,
  ns,
  uuid,
  policy,
}: Pick<Seen, 'nab' | 'ns' | 'uuid' | 'policy'>): Refusal | undefined {
  // A NACUUID tenantkit did not write (a status forged through a restore, say) is never acted on.
  if (
    uuid !== undefined &&
    syncedFromOf(nab) === undefined &&
    !isNacObjectName(ns, nab.metadata.name!, uuid)
  ) {
    return {
      reason: 'InvalidStatus',
      message: `status.veleroBackup.nacuuid ${uuid} was not written by tenantkit for this NonAdminBackup; delete it and create a new one`,
    };
  }
  if (!policy.enabled) {
    return NonAdminDisabled;
  }
  return undefined;
}

const spec = (nab: NonAdminBackup) => nab.spec ?? { backupSpec: {} };

/** Whether a Velero Backup in this phase still holds its place in Velero's queue. */
const unfinished = (phase: string): boolean => backupQueuePhases.includes(phase);

const tenantSpec = (nab: NonAdminBackup): JsonObject => ({ ...((spec(nab).backupSpec ?? {}) as JsonObject) });
