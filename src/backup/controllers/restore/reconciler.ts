// NonAdminRestore controller: a tenant's NAR becomes a Velero Restore in Velero's namespace, from the
// Velero backup of one of the tenant's own NonAdminBackups, into the tenant's namespace only, with the
// admin's enforced fields filled in; the Restore's progress is mirrored back.
// Crash safety as for backups: the NACUUID goes into status before any Velero object exists, the Restore
// is named by it and found by its label, so a controller killed at any step neither duplicates nor
// orphans anything. A Restore is never run twice behind the tenant's back: once tenantkit has seen it,
// a Restore that disappears is reported, not made again.
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../../../crds/backup.ts';
import { finishedPhases, VeleroResources } from '../../../crds/velero.ts';
import { type Condition, findCondition, isTrue } from '../../../kube/conditions.ts';
import {
  generationChanged,
  ObjectReconciler,
  type ReconcileContext,
  type ReconcileResult,
} from '../../../kube/controller.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../../../kube/finalizers.ts';
import type { Informer } from '../../../kube/informer.ts';
import type { Manager } from '../../../kube/manager.ts';
import { type KubeObject, objectKey } from '../../../kube/resources.ts';
import { type StatusView, StatusWriter } from '../../../kube/status.ts';
import {
  Annotations,
  CreatedAtAnnotation,
  Index,
  Labels,
  NarFinalizer,
  RequesterAnnotation,
  requesterOf,
  requesterValue,
  type VeleroObject,
} from '../../model.ts';
import { type BackupPolicy, configType, currentPolicy } from '../../policy/config.ts';
import { isNacObjectName, nacObjectName } from '../../velero/names.ts';
import { type Ownerships, ownerships } from '../../velero/ownerships.ts';
import { backOff, type Refusal } from '../back-off.ts';
import { ManagedTypes, managedCache, Origin } from '../caches.ts';
import { type LocationUse, locationUse } from '../location/use.ts';
import { outcomeEvent, outcomeOf } from '../outcome.ts';
import { type ProgressSource, restoreProgress, withProgress } from '../progress.ts';
import { type QueueTracker, restoreQueuePhases, restoreRunningPhases, trackQueue } from '../queue.ts';
import { type StallTracker, stallOutcome, trackStalls } from '../stall.ts';
import { createOnce, managedMeta } from '../velero-objects.ts';
import { RestoreGuardPresence, readRefusals, refusalSummary } from './guard.ts';
import { RepositoryPasswordBuiltIn, weakRepositoryPassword } from './repository-key.ts';
import { type Checked, checkRequest, veleroRestoreSpec } from './request.ts';

/** The Queued reason of a NAR whose Velero Restore waits for the backup's location to be Available. */
const LocationUnavailable = 'StorageLocationUnavailable';
const queuedReason = (nar: NonAdminRestore) =>
  findCondition(nar.status?.conditions as Condition[] | undefined, 'Queued')?.reason;
/** NARs by the NonAdminBackup they restore from, as `namespace/name`. */
const ByBackupRef = 'backup/nar-backup';
const backupRefOf = (nar: NonAdminRestore): string[] => {
  const name = nar.spec?.restoreSpec?.backupName;
  return name ? [`${nar.metadata.namespace}/${name}`] : [];
};
type Status = NonNullable<NonAdminRestore['status']>;
type Result = Promise<ReconcileResult | undefined>;

/** What the NAR controller reads, wired by registerNarController. */
export interface NarSources {
  nars: Informer<NonAdminRestore>;
  nabs: Informer<NonAdminBackup>;
  restores: Informer<VeleroObject>;
  backups: Informer<VeleroObject>;
  configs: Informer<NonAdminBackupConfig>;
  adoption: Ownerships;
  progress: ProgressSource;
  queue: QueueTracker;
  stalls: StallTracker;
  guard: RestoreGuardPresence;
  use: LocationUse;
}

/** One reconcile's view of a NAR: read from the caches once, written through `status`. */
interface Seen extends StatusView<Status> {
  nar: NonAdminRestore;
  ns: string;
  policy: BackupPolicy;
  /** The NACUUID status records, if any, and whether tenantkit could have written it for this NAR. */
  uuid: string | undefined;
  trusted: boolean;
  /** The Velero Restores made for this NAR that the cache holds (one, or none yet). */
  found: VeleroObject[];
}

export function registerNarController(manager: Manager): void {
  // Velero's queue of Restores, anyone's.
  const queue = trackQueue(manager, VeleroResources.restores, restoreQueuePhases, Origin.nar);
  const nars = manager.informer<NonAdminRestore>(NonAdminRestoreCrd.type);
  nars.addIndex(ByBackupRef, backupRefOf);
  const progress = restoreProgress(manager);
  const stalls = trackStalls(
    manager,
    'Restore',
    queue,
    { queued: restoreQueuePhases, running: restoreRunningPhases },
    progress,
  );

  const reconciler = new NarReconciler(
    {
      nars,
      nabs: manager.informer<NonAdminBackup>(NonAdminBackupCrd.type),
      restores: managedCache(manager, 'restores'),
      backups: managedCache(manager, 'backups'),
      configs: manager.informer<NonAdminBackupConfig>(configType),
      adoption: ownerships(manager),
      progress,
      queue,
      stalls,
      guard: new RestoreGuardPresence(),
      use: locationUse(manager),
    },
    nars,
  );

  manager
    .controller('nonadminrestore')
    .for(NonAdminRestoreCrd.type)
    .watches(ManagedTypes.restores, Origin.nar)
    .watches(VeleroResources.restores, () => queue.drain())
    // A stalled queue moved again: every NAR in it says so (see ../stall.ts).
    .watches(VeleroResources.restores, () => stalls.drain())
    .watches(progress.podVolumes, () => stalls.drain())
    .watches(progress.dataMovers, () => stalls.drain())
    // Progress counts: a PodVolumeRestore or DataDownload of a tenant's Restore moved.
    .watches(progress.podVolumes, progress.map)
    .watches(progress.dataMovers, progress.map)
    // A NAR waiting for its backup to complete (or to exist) goes on when it does.
    .watches(NonAdminBackupCrd.type, (nab) =>
      nars.byIndex(ByBackupRef, objectKey(nab.metadata)).map((n) => objectKey(n.metadata)),
    )
    // NARs waiting for the backup's location: its phase moved.
    .watches(VeleroResources.backupStorageLocations, () =>
      nars
        .list()
        .filter((n) => queuedReason(n) === LocationUnavailable)
        .map((n) => objectKey(n.metadata)),
    )
    // A policy change applies live: every NAR is checked again.
    .watchesAll(configType, generationChanged)
    .concurrency(4)
    .complete(reconciler);
}

export class NarReconciler extends ObjectReconciler<NarSources, NonAdminRestore, Seen> {
  protected override async converge(seen: Seen): Result {
    const { nar, ctx } = seen;
    const key = objectKey(nar.metadata);
    const refusal = refusalOf(seen);
    if (refusal) return backOff(seen.status, refusal);
    // Once a Velero Restore exists, the NAR's request is settled: mirror it, whatever the spec says now.
    const restore = seen.found[0];
    if (restore) return this.mirror(seen, restore);
    // Seen before (Queued is only set once the Restore was observed) and gone now: deleted outside
    // tenantkit. Making it again would restore a second time, unasked.
    const queued = queuedReason(seen.nar);
    if (seen.uuid && queued !== undefined && queued !== LocationUnavailable) return this.reportDeleted(seen);
    // Checked again before the Restore is made (not only before the NACUUID is): the backup named must
    // still be there and complete when Velero is asked to restore it.
    const checked = checkRequest(this.from, seen);
    if ('refusal' in checked) {
      ctx.logger.info({ nar: key, reason: checked.refusal.reason }, 'NonAdminRestore rejected');
      return backOff(seen.status, checked.refusal, { action: 'Validate', always: true });
    }
    const current = await ensureFinalizer(ctx.client, NonAdminRestoreCrd.type, nar, NarFinalizer);
    if (!seen.uuid) return this.admit(seen, checked.nab, current.metadata.resourceVersion);
    return this.create(seen, seen.uuid, checked);
  }

  protected override read(nar: NonAdminRestore, ctx: ReconcileContext): Seen {
    const policy = currentPolicy(this.from.configs);
    const uuid = nar.status?.veleroRestore?.nacuuid;
    const ns = nar.metadata.namespace!;
    // A NACUUID tenantkit did not write (a status forged through a restore, say) is never acted on.
    const trusted = uuid !== undefined && isNacObjectName(ns, nar.metadata.name!, uuid);
    // Only the Restore named by the NACUUID in Velero's namespace (the config's, never the one status
    // names) and made for this very NAR.
    const ours = (r: KubeObject) =>
      r.metadata.name === uuid &&
      r.metadata.namespace === policy.veleroNamespace &&
      Origin.nar(r)[0] === `${ns}/${nar.metadata.name}`;
    const found = trusted ? this.from.restores.byIndex(Index.narUuid, uuid).filter(ours) : [];
    const status = new StatusWriter<Status>(ctx, NonAdminRestoreCrd.type, nar);
    return { nar, ns, policy, uuid, trusted, found, base: status.current, status, ctx };
  }

  /**
   * Removed by the tenant: the Velero Restore object goes too (Velero then removes its own finalizer and
   * the restore's logs and results); what was restored stays in the namespace.
   */
  protected override async finalize({ nar, uuid, trusted, found, policy, ctx }: Seen): Result {
    if (!hasFinalizer(nar, NarFinalizer)) return undefined;
    for (const r of found) {
      await ctx.client.delete(VeleroResources.restores, r.metadata.name!, r.metadata.namespace);
    }
    // Also by name: a Restore created just now may not be in the cache yet. Only the NACUUID tenantkit
    // wrote, in Velero's namespace: a forged status must not delete anyone's Restore.
    if (trusted && uuid && found.length === 0) {
      await ctx.client.delete(VeleroResources.restores, uuid, policy.veleroNamespace);
    }
    await removeFinalizer(ctx.client, NonAdminRestoreCrd.type, nar, NarFinalizer);
    return undefined;
  }

  private async reportDeleted({ uuid, nar, base, status }: Seen): Result {
    await status.write({
      ...base,
      conditions: status.condition(base, {
        type: 'Queued',
        status: 'False',
        reason: 'VeleroRestoreDeleted',
        message: `Velero Restore ${nar.status?.veleroRestore?.name ?? uuid} no longer exists (it was deleted outside tenantkit); create a new NonAdminRestore to restore again`,
      }),
    });
    return undefined;
  }

  /**
   * Step 1: the identity, in status, before anything exists in Velero's namespace. Guarded by
   * resourceVersion: a reconcile on a cache that has not seen an earlier step 1 yet would otherwise write
   * a second NACUUID over it, and two Velero Restores could follow.
   */
  private async admit(
    { nar, ns, base, policy, status }: Seen,
    nab: NonAdminBackup,
    version?: string,
  ): Result {
    const name = nacObjectName(ns, nar.metadata.name!);
    await status.write(
      {
        ...base,
        phase: 'New',
        veleroRestore: { nacuuid: name, name, namespace: policy.veleroNamespace },
        conditions: status.condition(base, {
          type: 'Accepted',
          status: 'True',
          reason: 'RestoreAccepted',
          message: `restore from NonAdminBackup ${nab.metadata.name} accepted against NonAdminBackupConfig generation ${policy.generation}`,
        }),
      },
      { ifVersion: version },
    );
    return undefined;
  }

  /**
   * Step 2: the Velero Restore, named and labelled by the NACUUID, from the NAB's Velero backup (the
   * tenant's backupName is a NAB name, never passed to Velero), into this namespace only, and only while
   * Velero runs the restore guard (without it Velero would write every item with its own rights).
   */
  private async create(seen: Seen, uuid: string, checked: Checked): Result {
    const { nar, ns, policy, status, ctx } = seen;
    const location = checked.backup.spec?.storageLocation;
    const unreadable = this.from.use.unreadable(policy.veleroNamespace, location as string | undefined);
    if (unreadable) return this.waitForLocation(seen, unreadable);
    if (this.from.use.tenantOwned(policy.veleroNamespace, location as string | undefined)) {
      const weak = await weakRepositoryPassword(ctx.client, policy.veleroNamespace);
      if (weak) {
        ctx.logger.warn({ nar: objectKey(nar.metadata), veleroNamespace: policy.veleroNamespace }, weak);
        await backOff(
          seen.status,
          { reason: RepositoryPasswordBuiltIn, message: weak },
          { action: 'Create' },
        );
        return { requeueAfterMs: 15_000 };
      }
    }
    const missing = await this.from.guard.missing(ctx.client, policy.veleroNamespace);
    if (missing) {
      ctx.logger.info({ nar: objectKey(nar.metadata), veleroNamespace: policy.veleroNamespace }, missing);
      await backOff(seen.status, { reason: 'RestoreGuardMissing', message: missing });
      return { requeueAfterMs: 30_000 };
    }
    // The NACUUID and the config's namespace: never a name or namespace read back from status.
    const metadata = managedMeta(uuid, policy.veleroNamespace, Labels.narUuid, {
      [Annotations.narName]: nar.metadata.name!,
      [Annotations.narNamespace]: ns,
      [CreatedAtAnnotation]: new Date().toISOString(),
      // The guard plugin checks every item as this user (admission/requester.ts).
      [RequesterAnnotation]: requesterValue(checked.requester),
    });
    const spec = veleroRestoreSpec(this.from.adoption, seen, checked);
    if (await createOnce(ctx, VeleroResources.restores, { metadata, spec } as KubeObject)) {
      status.event({
        type: 'Normal',
        reason: 'RestoreCreated',
        action: 'Create',
        message: `created Velero Restore ${uuid} from Velero Backup ${checked.backup.metadata.name} (NonAdminBackup ${checked.nab.metadata.name})`,
      });
    }
    return undefined;
  }

  /** Waiting for the backup's location to be Available: condition Queued False saying why. */
  private async waitForLocation({ base, status }: Seen, message: string): Result {
    const reason = LocationUnavailable;
    await status.write({
      ...base,
      conditions: status.condition(base, { type: 'Queued', status: 'False', reason, message }),
    });
    return undefined;
  }

  /** Step 3: mirror the Velero Restore, with its place in Velero's queue and, once finished, what the guard refused. */
  private async mirror(seen: Seen, restore: VeleroObject): Result {
    const { base, status } = seen;
    const veleroNs = restore.metadata.namespace!;
    const name = restore.metadata.name!;
    // Until the queue's informer saw the Restore its position is unknown; its event brings this back.
    if (!this.from.queue.has(veleroNs, name)) return undefined;
    const veleroPhase = (restore.status?.phase as string | undefined) ?? 'New';
    // Accepted may read False from a check made while the Restore was being created (or while the
    // feature was disabled): the Restore exists, so the request was accepted.
    const conditions = isTrue(base.conditions as Condition[] | undefined, 'Accepted')
      ? base.conditions
      : status.condition(base, {
          type: 'Accepted',
          status: 'True',
          reason: 'RestoreAccepted',
          message: `Velero Restore ${name} was created for this restore`,
        });
    // One Event when the outcome is known, as for a NonAdminBackup: what failed and where to read why.
    const outcome = outcomeOf('Restore', seen.nar.metadata.name!, name, veleroPhase, restore.status);
    const before = seen.nar.status?.veleroRestore?.status?.phase;
    const ended = outcomeEvent('Restore', before, veleroPhase, outcome);
    if (ended) status.event(ended);
    const position = this.from.queue.position(veleroNs, name);
    const stall = await stallOutcome(this.from.stalls, {
      name,
      phase: veleroPhase,
      unfinished: restoreQueuePhases.includes(veleroPhase),
      position,
      veleroNamespace: veleroNs,
      conditions: base.conditions as Condition[] | undefined,
    });
    if (stall.event) status.event(stall.event);
    const mirrored: Status = {
      ...base,
      phase: 'Created',
      queueInfo: { estimatedQueuePosition: position },
      veleroRestore: {
        ...base.veleroRestore,
        name,
        namespace: veleroNs,
        ...(restore.status ? { status: restore.status as never } : {}),
      },
      conditions: status.condition({ ...base, conditions } as Status, {
        type: 'Queued',
        status: 'True',
        ...(stall.stalled ?? { reason: 'RestoreScheduled', message: outcome }),
      }),
    };
    const finished = (finishedPhases as readonly string[]).includes(veleroPhase);
    if (finished && base.refusedItems === undefined) await this.withRefusals(seen, restore, mirrored);
    // Pod volume and data mover counts; written only when they change (see progress.ts).
    await status.write(withProgress(mirrored, this.from.progress.counts(veleroNs, name)));
    return stall.requeue;
  }

  /** Once finished: what the restore guard left out, read once (then kept in status), into `mirrored`. */
  private async withRefusals(
    { nar, status, ctx }: Seen,
    restore: VeleroObject,
    mirrored: Status,
  ): Promise<void> {
    const refusals = await readRefusals(ctx.client, restore);
    // Velero counts every item it processed as restored, the ones the guard skipped included.
    const processed =
      (restore.status?.progress as { itemsRestored?: number } | undefined)?.itemsRestored ?? 0;
    const requester = requesterOf(nar);
    const who = typeof requester === 'string' ? 'the requester' : requester.username;
    const nothingRestored = refusals.count > 0 && refusals.count >= processed;
    const message =
      refusals.count === 0
        ? `every object of the backup passed the checks as ${who}`
        : refusalSummary(refusals, who, nothingRestored);
    const reason =
      refusals.count === 0 ? 'NoneRefused' : nothingRestored ? 'AllItemsRefused' : 'SomeItemsRefused';
    mirrored.refusedItems = { count: refusals.count, items: refusals.items };
    mirrored.conditions = status.condition(mirrored, {
      type: 'ItemsRefused',
      status: refusals.count > 0 ? 'True' : 'False',
      reason,
      message,
    });
    if (refusals.count > 0) {
      status.event({
        type: 'Warning',
        reason: nothingRestored ? 'AllItemsRefused' : 'ItemsRefused',
        action: 'Restore',
        message,
      });
    }
  }
}

/** Why a NAR is not acted on at all: a NACUUID tenantkit did not write, or non-admin backup turned off. */
export function refusalOf({
  uuid,
  trusted,
  policy,
}: Pick<Seen, 'uuid' | 'trusted' | 'policy'>): Refusal | undefined {
  if (uuid !== undefined && !trusted) {
    return {
      reason: 'InvalidStatus',
      message: `status.veleroRestore.nacuuid ${uuid} was not written by tenantkit for this NonAdminRestore; delete it and create a new one`,
    };
  }
  if (!policy.enabled) {
    return {
      reason: 'NonAdminDisabled',
      message:
        'non-admin restores are not enabled: an admin must set spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"',
    };
  }
  return undefined;
}
