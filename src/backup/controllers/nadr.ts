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
} from '../../api/backup.ts';
import { finishedPhases, VeleroResources } from '../../api/velero.ts';
import { isAlreadyExists, PatchType } from '../../kube/client.ts';
import { type Condition, findCondition, isTrue, setCondition } from '../../kube/conditions.ts';
import { generationChanged } from '../../kube/controller.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../../kube/finalizers.ts';
import type { Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, objectKey } from '../../kube/resources.ts';
import { configType, currentPolicy } from '../policy/config.ts';
import { type JsonObject, jsonEqual } from '../policy/enforce.ts';
import { msUntilExpiry, type TargetOwner, targetOwner, targetProblems } from '../policy/nadr-target.ts';
import { Annotations, Labels, managedLabels, nacObjectName } from '../velero/names.ts';
import { Index, ManagedTypes, managedCache, type VeleroObject } from './caches.ts';
import { changedFields } from './queue.ts';

export const NadrFinalizer = 'tenantkit.io/nonadmindownloadrequest';
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

const origin =
  (nameKey: string, namespaceKey: string) =>
  (o: KubeObject): string[] => {
    const ns = o.metadata.annotations?.[namespaceKey];
    const name = o.metadata.annotations?.[nameKey];
    return ns && name ? [`${ns}/${name}`] : [];
  };
const nadrOrigin = origin(Annotations.nadrName, Annotations.nadrNamespace);
const nabOrigin = origin(Annotations.nabName, Annotations.nabNamespace);
const narOrigin = origin(Annotations.narName, Annotations.narNamespace);

/** Why a target cannot be downloaded (yet): a reason for the condition and a message for the tenant. */
interface Blocked {
  reason: string;
  message: string;
  /** A wait, not a mistake: a Normal Event instead of a Warning. */
  waiting?: boolean;
}

export function registerNadrController(manager: Manager): void {
  const nadrs = manager.informer<NonAdminDownloadRequest>(NonAdminDownloadRequestCrd.type);
  const nabs = manager.informer<NonAdminBackup>(NonAdminBackupCrd.type);
  const nars = manager.informer<NonAdminRestore>(NonAdminRestoreCrd.type);
  const requests = managedCache<VeleroDownloadRequest>(manager, 'downloadRequests');
  const backups = managedCache(manager, 'backups');
  const restores = managedCache(manager, 'restores');
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  nadrs.addIndex(ByTarget, targetOf);
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
    .watches(ManagedTypes.downloadRequests, nadrOrigin)
    // A request waiting for its backup or restore to finish goes on when it does.
    .watches(NonAdminBackupCrd.type, (o) => ofBackup([objectKey(o.metadata)]))
    .watches(NonAdminRestoreCrd.type, (o) => ofRestore([objectKey(o.metadata)]))
    .watches(ManagedTypes.backups, (o) => ofBackup(nabOrigin(o)))
    .watches(ManagedTypes.restores, (o) => ofRestore(narOrigin(o)))
    .watches(configType, () => nadrs.list().map((n) => objectKey(n.metadata)), generationChanged)
    .concurrency(2)
    .complete(async (key, ctx) => {
      const nadr = nadrs.get(key);
      if (!nadr) return undefined;
      const type = NonAdminDownloadRequestCrd.type;
      const ns = nadr.metadata.namespace!;
      const name = nadr.metadata.name!;
      const generation = nadr.metadata.generation;
      const policy = currentPolicy(configs);
      const base: Status = { ...(nadr.status ?? {}) };
      const uuid = nacuuidOf(nadr);
      // The config's namespace, never the one status names; only DownloadRequests found there count.
      const ref = { nacuuid: uuid, name: uuid, namespace: policy.veleroNamespace };
      const found = requests
        .byIndex(Index.nadrUuid, uuid)
        .filter((r) => r.metadata.namespace === ref.namespace);
      const request = found[0];

      const writeStatus = async (status: Status) => {
        if (jsonEqual(status as never, (nadr.status ?? {}) as never)) return;
        await ctx.client.patch(
          type,
          name,
          ns,
          { status: changedFields(status as JsonObject, (nadr.status ?? {}) as JsonObject) },
          PatchType.merge,
          'status',
        );
      };
      const condition = (c: Omit<Condition, 'lastTransitionTime'>): Condition[] =>
        setCondition(base.conditions as Condition[] | undefined, { ...c, observedGeneration: generation });
      const removeDownloadRequests = async () => {
        for (const r of found) {
          await ctx.client.delete(VeleroResources.downloadRequests, r.metadata.name!, r.metadata.namespace);
        }
        // Also by name: one created just now may not be in the cache yet.
        if (!found.some((r) => r.metadata.name === uuid)) {
          await ctx.client.delete(VeleroResources.downloadRequests, uuid, ref.namespace);
        }
      };

      if (nadr.metadata.deletionTimestamp) {
        if (!hasFinalizer(nadr, NadrFinalizer)) return undefined;
        await removeDownloadRequests();
        await removeFinalizer(ctx.client, type, nadr, NadrFinalizer);
        return undefined;
      }

      // Expired: the URL no longer works. Velero deletes its own expired DownloadRequests too, so one that
      // was processed and is gone has expired (or an admin revoked it): either way the request is over.
      // Both objects go, the DownloadRequest first so that none is left behind.
      const veleroStatus = (request?.status ?? base.velero?.status) as DownloadRequestStatus | undefined;
      const expiration = veleroStatus?.expiration;
      const expired = msUntilExpiry(expiration) === 0;
      if (expired || (!request && base.velero?.status?.phase === 'Processed')) {
        await removeDownloadRequests();
        ctx.events.record(
          nadr,
          'Normal',
          'Expired',
          'Delete',
          expired
            ? `the download URL expired at ${expiration}; this request and its Velero DownloadRequest were removed (create a new one to download again)`
            : `Velero DownloadRequest ${uuid} is gone (expired or removed by an admin); this request was removed too (create a new one to download again)`,
        );
        await ctx.client.delete(type, name, ns);
        return undefined;
      }

      // Velero made the DownloadRequest's URL (or will): mirror it, and come back when it expires.
      if (request) {
        const vs = request.status ?? {};
        const ready = vs.phase === 'Processed' && Boolean(vs.downloadURL);
        const age = Date.now() - Date.parse(request.metadata.creationTimestamp ?? '');
        const late = !ready && age >= unprocessedAfterMs;
        // Accepted may be missing or False (a status written from a stale cache, or a check made before the
        // DownloadRequest existed): it exists, so the request was accepted.
        const accepted = isTrue(base.conditions as Condition[] | undefined, 'Accepted')
          ? base.conditions
          : condition({
              type: 'Accepted',
              status: 'True',
              reason: 'TargetResolved',
              message: `Velero DownloadRequest ${request.metadata.name} was created for the ${nadr.spec?.target?.kind} of ${nadr.spec?.target?.name}`,
            });
        await writeStatus({
          ...base,
          phase: 'Created',
          velero: { ...ref, ...(request.status ? { status: request.status as never } : {}) },
          conditions: setCondition(accepted as Condition[] | undefined, {
            observedGeneration: generation,
            ...(ready
              ? {
                  type: 'Processed',
                  status: 'True',
                  reason: 'DownloadURLReady',
                  message: `status.velero.status.downloadURL is ready; it expires at ${vs.expiration} and this request is removed then`,
                }
              : late
                ? {
                    type: 'Processed',
                    status: 'False',
                    reason: 'VeleroNotProcessing',
                    message: `Velero has not processed DownloadRequest ${request.metadata.name} for ${Math.round(age / 1000)} s: Velero may be down or unable to reach the storage location; ask a cluster admin to check Velero's log`,
                  }
                : {
                    type: 'Processed',
                    status: 'False',
                    reason: 'Pending',
                    message: `waiting for Velero to sign a URL for DownloadRequest ${request.metadata.name}`,
                  }),
          }),
        });
        const left = msUntilExpiry(vs.expiration);
        if (left !== undefined) return { requeueAfterMs: left + 1000 };
        // Not processed yet: its update brings this back; check once more for a Velero that never answers.
        return late ? undefined : { requeueAfterMs: Math.max(1000, unprocessedAfterMs - age + 500) };
      }

      const backOff = async (blocked: Blocked) => {
        const previous = findCondition(base.conditions as Condition[] | undefined, 'Accepted');
        if (previous?.message !== blocked.message) {
          ctx.events.record(
            nadr,
            blocked.waiting ? 'Normal' : 'Warning',
            blocked.reason,
            'Validate',
            blocked.message,
          );
        }
        await writeStatus({
          ...base,
          phase: 'BackingOff',
          conditions: condition({
            type: 'Accepted',
            status: 'False',
            reason: blocked.reason,
            message: blocked.message,
          }),
        });
        return undefined;
      };

      if (!policy.enabled) {
        return backOff({
          reason: 'NonAdminDisabled',
          message:
            'non-admin backups are not enabled: an admin must set spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"',
          waiting: true,
        });
      }
      const problems = targetProblems(nadr.spec?.target);
      if (problems.length > 0) return backOff({ reason: 'InvalidTarget', message: problems.join('; ') });
      const kind = nadr.spec!.target.kind;
      const target = resolveTarget(ns, kind, nadr.spec!.target.name, {
        nabs,
        nars,
        backups,
        restores,
        veleroNamespace: policy.veleroNamespace,
      });
      if ('reason' in target) return backOff(target);

      // The finalizer first: from here on, a deleted request still gets its DownloadRequest removed.
      await ensureFinalizer(ctx.client, type, nadr, NadrFinalizer);
      if (base.velero?.nacuuid !== uuid) {
        // Step 1: the identity, in status, before anything exists in Velero's namespace.
        await writeStatus({
          ...base,
          phase: 'New',
          velero: ref,
          conditions: condition({
            type: 'Accepted',
            status: 'True',
            reason: 'TargetResolved',
            message: `${kind} of ${target.owner} ${nadr.spec!.target.name} (Velero ${target.veleroKind} ${target.veleroName})`,
          }),
        });
        return undefined;
      }
      // Step 2: the Velero DownloadRequest, named and labelled by the NACUUID.
      try {
        await ctx.client.create(VeleroResources.downloadRequests, {
          metadata: {
            name: uuid,
            namespace: ref.namespace,
            labels: { ...managedLabels, [Labels.nadrUuid]: uuid },
            annotations: { [Annotations.nadrName]: name, [Annotations.nadrNamespace]: ns },
          },
          spec: { target: { kind, name: target.veleroName } },
        } as KubeObject);
        ctx.events.record(
          nadr,
          'Normal',
          'DownloadRequestCreated',
          'Create',
          `asked Velero for the ${kind} of ${target.owner} ${nadr.spec!.target.name}`,
        );
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      return undefined;
    });
}

export interface Caches {
  nabs: Informer<NonAdminBackup>;
  nars: Informer<NonAdminRestore>;
  backups: Informer<VeleroObject>;
  restores: Informer<VeleroObject>;
  /** When set, only Velero objects in this namespace (Velero's, from the config) count. */
  veleroNamespace?: string;
}

type Resolved = { owner: TargetOwner; veleroKind: 'Backup' | 'Restore'; veleroName: string };

/**
 * The Velero Backup or Restore behind a NAB/NAR name in `ns`: only one that tenantkit made for that very
 * object (by its NACUUID label and origin annotations, which tenants cannot write), and only once it
 * finished (Velero writes the files at the end).
 */
export function resolveTarget(ns: string, kind: string, name: string, caches: Caches): Resolved | Blocked {
  const owner = targetOwner(kind)!;
  const isBackup = owner === 'NonAdminBackup';
  const short = isBackup ? 'nab' : 'nar';
  const object = isBackup ? caches.nabs.get(`${ns}/${name}`) : caches.nars.get(`${ns}/${name}`);
  if (!object) {
    return {
      reason: 'TargetNotFound',
      message: `spec.target.name "${name}": there is no ${owner} "${name}" in namespace ${ns} (a ${kind} belongs to a ${owner}); name one of this namespace's (kubectl get ${short} -n ${ns})`,
      waiting: true,
    };
  }
  const ref = isBackup
    ? (object as NonAdminBackup).status?.veleroBackup
    : (object as NonAdminRestore).status?.veleroRestore;
  const veleroKind = isBackup ? 'Backup' : 'Restore';
  const cache = isBackup ? caches.backups : caches.restores;
  const index = isBackup ? Index.nabUuid : Index.narUuid;
  const [nameKey, nsKey] = isBackup
    ? [Annotations.nabName, Annotations.nabNamespace]
    : [Annotations.narName, Annotations.narNamespace];
  const velero = cache
    .byIndex(index, ref?.nacuuid ?? '')
    .find(
      (o) =>
        o.metadata.name === ref?.name &&
        (caches.veleroNamespace === undefined || o.metadata.namespace === caches.veleroNamespace) &&
        o.metadata.annotations?.[nsKey] === ns &&
        o.metadata.annotations?.[nameKey] === name,
    );
  if (!velero) {
    const seen = Boolean(ref?.status);
    return seen
      ? {
          reason: 'TargetGone',
          message: `${owner} "${name}": its Velero ${veleroKind} ${ref?.name} no longer exists (expired or deleted), so there are no files to download`,
        }
      : {
          reason: 'TargetNotReady',
          message: `${owner} "${name}" has no Velero ${veleroKind} yet (request phase ${object.status?.phase ?? 'none'}); this request goes on once it ran (kubectl describe ${short} ${name})`,
          waiting: true,
        };
  }
  const phase = (velero.status?.phase as string | undefined) ?? 'New';
  if (phase === 'FailedValidation') {
    return {
      reason: 'TargetFailedValidation',
      message: `${owner} "${name}" failed Velero's validation, so Velero wrote no files for it: see status.${isBackup ? 'veleroBackup' : 'veleroRestore'}.status.validationErrors (kubectl get ${short} ${name} -o yaml)`,
    };
  }
  if (!(finishedPhases as readonly string[]).includes(phase)) {
    return {
      reason: 'TargetNotFinished',
      message: `${owner} "${name}" is still running (Velero phase ${phase}): Velero writes its files when it finishes; this request goes on then`,
      waiting: true,
    };
  }
  return { owner, veleroKind, veleroName: velero.metadata.name! };
}
