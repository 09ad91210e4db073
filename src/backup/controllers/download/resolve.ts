// What a NonAdminDownloadRequest's target is in Velero: the Backup or Restore behind one of the tenant's
// own NonAdminBackups or NonAdminRestores, found through the caches, or why it cannot be downloaded (yet).
import type { NonAdminBackup, NonAdminRestore } from '../../../crds/backup.ts';
import { finishedPhases } from '../../../crds/velero.ts';
import type { Informer } from '../../../kube/informer.ts';
import { Annotations, Index, type VeleroObject } from '../../model.ts';
import type { TargetOwner } from '../../policy/nadr-target.ts';
import { targetOwner } from '../../policy/nadr-target.ts';

/** Why a target cannot be downloaded (yet): a reason for the condition and a message for the tenant. */
export interface Blocked {
  reason: string;
  message: string;
  /** A wait, not a mistake: a Normal Event instead of a Warning. */
  waiting?: boolean;
}

export interface Caches {
  nabs: Informer<NonAdminBackup>;
  nars: Informer<NonAdminRestore>;
  backups: Informer<VeleroObject>;
  restores: Informer<VeleroObject>;
  /** When set, only Velero objects in this namespace (Velero's, from the config) count. */
  veleroNamespace?: string;
}

export type Resolved = { owner: TargetOwner; veleroKind: 'Backup' | 'Restore'; veleroName: string };

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
