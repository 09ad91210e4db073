// NonAdminDownloadRequest controller: a tenant asks for a log or result file of one of its own
// NonAdminBackups or NonAdminRestores; tenantkit resolves that name to the Velero object through the
// NAB's/NAR's status (never a Velero name the tenant writes), makes a Velero DownloadRequest in Velero's
// namespace, and mirrors the presigned URL Velero signs back into the request's status.
// Crash safety: the NACUUID is `<namespace>-<name>-<the request's UID>` (OADP labels with the UID too):
// server-assigned and immutable, so tenants cannot forge it, and the same on every retry. It goes into
// status.velero (a field tenantkit adds to OADP's schema; garbage collection reads it) before the
// DownloadRequest exists, which is named by it and found by its label, so a controller killed at any step
// neither duplicates nor orphans one. Unlike OADP, files of backups on the default storage location are
// served too. When the URL expires (Velero's DownloadRequest TTL is 10 minutes), the DownloadRequest
// and the NonAdminDownloadRequest are both deleted, as OADP does: an expired request is of no use.
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupCrd,
  type NonAdminDownloadRequest,
  NonAdminDownloadRequestCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../../../crds/backup.ts';
import { VeleroResources } from '../../../crds/velero.ts';
import { type Condition, type ConditionInput, isTrue } from '../../../kube/conditions.ts';
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
import { Annotations, Index, Labels, NadrFinalizer } from '../../model.ts';
import { type BackupPolicy, configType, currentPolicy, NonAdminDisabled } from '../../policy/config.ts';
import { msUntilExpiry, type TargetOwner, targetOwner, targetProblems } from '../../policy/nadr-target.ts';
import { nacObjectName } from '../../velero/names.ts';
import { backOff } from '../back-off.ts';
import { ManagedTypes, managedCache, Origin } from '../caches.ts';
import { createOnce, managedMeta } from '../velero-objects.ts';
import { type Blocked, type Caches, type Resolved, resolveTarget } from './resolve.ts';

/** NADRs by what they target, as `namespace/Kind/name`. */
const ByTarget = 'backup/nadr-target';
const targetOf = (o: NonAdminDownloadRequest): string[] => {
  const owner = targetOwner(o.spec?.target?.kind);
  const name = o.spec?.target?.name;
  return owner && name ? [`${o.metadata.namespace}/${owner}/${name}`] : [];
};
/** How long Velero may leave a DownloadRequest unprocessed before the tenant is told something is wrong. */
export const unprocessedAfterMs = 60_000;

/** The NACUUID of a request: its DownloadRequest's name and label value (at most 63 characters). */
export const nacuuidOf = (nadr: NonAdminDownloadRequest): string =>
  nacObjectName(nadr.metadata.namespace!, nadr.metadata.name!, nadr.metadata.uid!);

type DownloadRequestStatus = { phase?: string; downloadURL?: string; expiration?: string | null };
type VeleroDownloadRequest = KubeObject & { status?: DownloadRequestStatus };
type Status = NonNullable<NonAdminDownloadRequest['status']>;

/** What the NADR controller reads, wired by registerNadrController. */
export interface NadrSources extends Caches {
  nadrs: Informer<NonAdminDownloadRequest>;
  requests: Informer<VeleroDownloadRequest>;
  configs: Informer<NonAdminBackupConfig>;
}

/** One reconcile's view of a NADR: read from the caches once, written through `status`. */
interface Seen extends StatusView<Status> {
  nadr: NonAdminDownloadRequest;
  ns: string;
  name: string;
  policy: BackupPolicy;
  uuid: string;
  /** Where its DownloadRequest is (or goes): the config's namespace, never the one status names. */
  ref: { nacuuid: string; name: string; namespace: string };
  /** Its DownloadRequests in that namespace the cache holds (one, or none yet). */
  found: VeleroDownloadRequest[];
}

export function registerNadrController(manager: Manager): void {
  const nadrs = manager.informer<NonAdminDownloadRequest>(NonAdminDownloadRequestCrd.type);
  nadrs.addIndex(ByTarget, targetOf);
  const reconciler = new NadrReconciler(
    {
      nadrs,
      nabs: manager.informer<NonAdminBackup>(NonAdminBackupCrd.type),
      nars: manager.informer<NonAdminRestore>(NonAdminRestoreCrd.type),
      requests: managedCache<VeleroDownloadRequest>(manager, 'downloadRequests'),
      backups: managedCache(manager, 'backups'),
      restores: managedCache(manager, 'restores'),
      configs: manager.informer<NonAdminBackupConfig>(configType),
    },
    nadrs,
  );
  const targeting = (owner: TargetOwner) => (keys: string[]) =>
    keys.flatMap((key) => {
      const [ns, name] = key.split('/');
      return nadrs.byIndex(ByTarget, `${ns}/${owner}/${name}`).map((n) => objectKey(n.metadata));
    });
  const ofBackup = targeting('NonAdminBackup');
  const ofRestore = targeting('NonAdminRestore');

  manager
    .controller('nonadmindownloadrequest')
    .for(NonAdminDownloadRequestCrd.type)
    .watches(ManagedTypes.downloadRequests, Origin.nadr)
    // A request waiting for its backup or restore to finish goes on when it does.
    .watches(NonAdminBackupCrd.type, (o) => ofBackup([objectKey(o.metadata)]))
    .watches(NonAdminRestoreCrd.type, (o) => ofRestore([objectKey(o.metadata)]))
    .watches(ManagedTypes.backups, (o) => ofBackup(Origin.nab(o)))
    .watches(ManagedTypes.restores, (o) => ofRestore(Origin.nar(o)))
    .watchesAll(configType, generationChanged)
    .concurrency(2)
    .complete(reconciler);
}

export class NadrReconciler extends ObjectReconciler<NadrSources, NonAdminDownloadRequest, Seen> {
  protected override async converge(seen: Seen): Promise<ReconcileResult | undefined> {
    const { nadr, ctx } = seen;
    if (isOver(seen)) return this.expire(seen);
    // Velero made the DownloadRequest's URL (or will): mirror it, and come back when it expires.
    const request = seen.found[0];
    if (request) return this.mirror(seen, request);
    const resolved = this.resolve(seen);
    if ('reason' in resolved) {
      const { reason, message, waiting } = resolved;
      return backOff(
        seen.status,
        { reason, message },
        { action: 'Validate', type: waiting ? 'Normal' : 'Warning' },
      );
    }
    // The finalizer first: from here on, a deleted request still gets its DownloadRequest removed.
    await ensureFinalizer(ctx.client, NonAdminDownloadRequestCrd.type, nadr, NadrFinalizer);
    if (seen.base.velero?.nacuuid !== seen.uuid) return this.admit(seen, resolved);
    return this.create(seen, resolved);
  }

  protected override read(nadr: NonAdminDownloadRequest, ctx: ReconcileContext): Seen {
    const policy = currentPolicy(this.from.configs);
    const uuid = nacuuidOf(nadr);
    const ref = { nacuuid: uuid, name: uuid, namespace: policy.veleroNamespace };
    const found = this.from.requests
      .byIndex(Index.nadrUuid, uuid)
      .filter((r) => r.metadata.namespace === ref.namespace);
    const status = new StatusWriter<Status>(ctx, NonAdminDownloadRequestCrd.type, nadr);
    const { namespace, name } = nadr.metadata;
    return { nadr, ns: namespace!, name: name!, policy, uuid, ref, found, base: status.current, status, ctx };
  }

  protected override async finalize(seen: Seen): Promise<undefined> {
    if (!hasFinalizer(seen.nadr, NadrFinalizer)) return undefined;
    await removeDownloadRequests(seen);
    await removeFinalizer(seen.ctx.client, NonAdminDownloadRequestCrd.type, seen.nadr, NadrFinalizer);
    return undefined;
  }

  /** The request is over (see isOver): both objects go, the DownloadRequest first so none is left behind. */
  private async expire(seen: Seen): Promise<undefined> {
    const { uuid, status, ctx } = seen;
    const expiration = veleroStatusOf(seen)?.expiration;
    await removeDownloadRequests(seen);
    status.event({
      type: 'Normal',
      reason: 'Expired',
      action: 'Delete',
      message:
        msUntilExpiry(expiration) === 0
          ? `the download URL expired at ${expiration}; this request and its Velero DownloadRequest were removed (create a new one to download again)`
          : `Velero DownloadRequest ${uuid} is gone (expired or removed by an admin); this request was removed too (create a new one to download again)`,
    });
    await ctx.client.delete(NonAdminDownloadRequestCrd.type, seen.name, seen.ns);
    return undefined;
  }

  private async mirror(
    { nadr, base, ref, status }: Seen,
    request: VeleroDownloadRequest,
  ): Promise<ReconcileResult | undefined> {
    const vs = request.status ?? {};
    const age = Date.now() - Date.parse(request.metadata.creationTimestamp ?? '');
    // Accepted may be missing or False (a status written from a stale cache, or a check made before the
    // DownloadRequest existed): it exists, so the request was accepted.
    const accepted = isTrue(base.conditions as Condition[] | undefined, 'Accepted')
      ? base.conditions
      : status.condition(base, {
          type: 'Accepted',
          status: 'True',
          reason: 'TargetResolved',
          message: `Velero DownloadRequest ${request.metadata.name} was created for the ${nadr.spec?.target?.kind} of ${nadr.spec?.target?.name}`,
        });
    const processed = processedCondition(request, age);
    await status.write({
      ...base,
      phase: 'Created',
      velero: { ...ref, ...(request.status ? { status: request.status as never } : {}) },
      conditions: status.condition({ ...base, conditions: accepted } as Status, processed),
    });
    const left = msUntilExpiry(vs.expiration);
    if (left !== undefined) return { requeueAfterMs: left + 1000 };
    // Not processed yet: its update brings this back; check once more for a Velero that never answers.
    return processed.reason === 'VeleroNotProcessing'
      ? undefined
      : { requeueAfterMs: Math.max(1000, unprocessedAfterMs - age + 500) };
  }

  /** What the request's target is in Velero, or why it cannot be downloaded (yet). */
  private resolve({ nadr, ns, policy }: Seen): Resolved | Blocked {
    if (!policy.enabled) {
      return { ...NonAdminDisabled, waiting: true };
    }
    const problems = targetProblems(nadr.spec?.target);
    if (problems.length > 0) return { reason: 'InvalidTarget', message: problems.join('; ') };
    return resolveTarget(ns, nadr.spec!.target.kind, nadr.spec!.target.name, {
      ...this.from,
      veleroNamespace: policy.veleroNamespace,
    });
  }

  /** Step 1: the identity, in status, before anything exists in Velero's namespace. */
  private async admit({ nadr, base, ref, status }: Seen, target: Resolved): Promise<undefined> {
    await status.write({
      ...base,
      phase: 'New',
      velero: ref,
      conditions: status.condition(base, {
        type: 'Accepted',
        status: 'True',
        reason: 'TargetResolved',
        message: `${nadr.spec!.target.kind} of ${target.owner} ${nadr.spec!.target.name} (Velero ${target.veleroKind} ${target.veleroName})`,
      }),
    });
    return undefined;
  }

  /** Step 2: the Velero DownloadRequest, named and labelled by the NACUUID. */
  private async create(
    { nadr, ns, name, uuid, ref, status, ctx }: Seen,
    target: Resolved,
  ): Promise<undefined> {
    const kind = nadr.spec!.target.kind;
    const metadata = managedMeta(uuid, ref.namespace, Labels.nadrUuid, {
      [Annotations.nadrName]: name,
      [Annotations.nadrNamespace]: ns,
    });
    const spec = { target: { kind, name: target.veleroName } };
    if (await createOnce(ctx, VeleroResources.downloadRequests, { metadata, spec } as KubeObject)) {
      status.event({
        type: 'Normal',
        reason: 'DownloadRequestCreated',
        action: 'Create',
        message: `asked Velero for the ${kind} of ${target.owner} ${nadr.spec!.target.name}`,
      });
    }
    return undefined;
  }
}

const veleroStatusOf = ({ found, base }: Pick<Seen, 'found' | 'base'>) =>
  (found[0]?.status ?? base.velero?.status) as DownloadRequestStatus | undefined;

/**
 * Expired: the URL no longer works. Velero deletes its own expired DownloadRequests too, so one that was
 * processed and is gone has expired (or an admin revoked it): either way the request is over.
 */
export function isOver(seen: Pick<Seen, 'found' | 'base'>): boolean {
  const expired = msUntilExpiry(veleroStatusOf(seen)?.expiration) === 0;
  return expired || (seen.found.length === 0 && seen.base.velero?.status?.phase === 'Processed');
}

/** The Processed condition for a DownloadRequest `ageMs` old: ready, pending, or late (Velero not answering). */
export function processedCondition(
  request: VeleroDownloadRequest,
  ageMs: number,
): Omit<ConditionInput, 'observedGeneration'> {
  const vs = request.status ?? {};
  if (vs.phase === 'Processed' && vs.downloadURL) {
    return {
      type: 'Processed',
      status: 'True',
      reason: 'DownloadURLReady',
      message: `status.velero.status.downloadURL is ready; it expires at ${vs.expiration} and this request is removed then`,
    };
  }
  if (ageMs >= unprocessedAfterMs) {
    return {
      type: 'Processed',
      status: 'False',
      reason: 'VeleroNotProcessing',
      message: `Velero has not processed DownloadRequest ${request.metadata.name} for ${Math.round(ageMs / 1000)} s: Velero may be down or unable to reach the storage location; ask a cluster admin to check Velero's log`,
    };
  }
  return {
    type: 'Processed',
    status: 'False',
    reason: 'Pending',
    message: `waiting for Velero to sign a URL for DownloadRequest ${request.metadata.name}`,
  };
}

/** Removes the request's DownloadRequests, and by name one created just now that the cache may not hold yet. */
async function removeDownloadRequests({ found, uuid, ref, ctx }: Seen): Promise<void> {
  for (const r of found) {
    await ctx.client.delete(VeleroResources.downloadRequests, r.metadata.name!, r.metadata.namespace);
  }
  if (!found.some((r) => r.metadata.name === uuid)) {
    await ctx.client.delete(VeleroResources.downloadRequests, uuid, ref.namespace);
  }
}
