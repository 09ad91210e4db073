// What a NonAdminRestore asks for, checked before its Velero Restore is made: the admin's rules, the
// NonAdminBackup it names and that backup's Velero Backup (one tenantkit made for it, or one its namespace
// owns), and who asked; then the Velero RestoreSpec made from it, bounded to the tenant's namespace.
import type { NonAdminBackup, NonAdminRestore } from '../../../crds/backup.ts';
import type { UserInfo } from '../../../kube/access.ts';
import type { Informer } from '../../../kube/informer.ts';
import { Annotations, Index, requesterOf, type VeleroObject } from '../../model.ts';
import type { BackupPolicy } from '../../policy/config.ts';
import { type JsonObject, withEnforced } from '../../policy/enforce.ts';
import { enforceableRestoreSpec, restoreSpecProblems } from '../../policy/validate.ts';
import { withForcedRestoreFields } from '../../policy/velero-filters.ts';
import type { Ownerships } from '../../velero/ownerships.ts';
import type { Refusal } from '../back-off.ts';
import { adoptedBackup } from '../sync/adopt.ts';

/** A request that passed every check: where it restores from and as whom. */
export interface Checked {
  nab: NonAdminBackup;
  backup: VeleroObject;
  requester: UserInfo;
  spec: JsonObject;
}

/** The caches the checks read. */
export interface RequestSources {
  nabs: Informer<NonAdminBackup>;
  backups: Informer<VeleroObject>;
  adoption: Ownerships;
}

/** The NAR as one reconcile sees it. */
export interface RequestSeen {
  nar: NonAdminRestore;
  ns: string;
  policy: BackupPolicy;
}

const restoreSpecOf = (nar: NonAdminRestore): JsonObject => ({
  ...((nar.spec?.restoreSpec ?? {}) as JsonObject),
});

/** The request against the admin's rules, the NonAdminBackup it names and who asked for it. */
export function checkRequest(
  from: RequestSources,
  { nar, ns, policy }: RequestSeen,
): Checked | { refusal: Refusal } {
  const spec = restoreSpecOf(nar);
  const findNab = (name: string) => from.nabs.get(`${ns}/${name}`);
  const problems = restoreSpecProblems(ns, spec, policy.enforceRestoreSpec, findNab);
  const nab = problems.length === 0 ? findNab(spec.backupName as string) : undefined;
  const source = nab?.status?.veleroBackup;
  const backup = nab && source ? sourceBackup(from, nab, policy) : undefined;
  if (nab && source && !backup) {
    problems.push(
      `spec.restoreSpec.backupName "${nab.metadata.name}": its Velero Backup ${source.name} no longer exists (expired or deleted); pick another NonAdminBackup`,
    );
  }
  if (problems.length > 0 || !nab || !backup) {
    return { refusal: { reason: 'InvalidRestoreSpec', message: problems.join('; ') } };
  }
  // The backup must be this namespace's now, as an instance or an organization, not by name (velero/ownerships.ts).
  const notOwned = from.adoption.restoreProblem(backup, ns);
  if (notOwned) {
    return {
      refusal: {
        reason: 'BackupNotOwned',
        message: `spec.restoreSpec.backupName "${nab.metadata.name}": ${notOwned}; restore only from this namespace's own backups (a cluster admin assigns a backup of an earlier namespace: docs/backup.md)`,
      },
    };
  }
  // Whose rights bound the restore: only as admission recorded it at the last change of the spec
  // (admission/requester.ts, model.ts).
  const requester = requesterOf(nar);
  if (typeof requester === 'string') {
    return { refusal: { reason: 'NoRequester', message: `this NonAdminRestore cannot run: ${requester}` } };
  }
  return { nab, backup, requester, spec };
}

/**
 * The Velero Backup the NAB reports, if it is one tenantkit made for that very NAB in Velero's
 * namespace, or, for a NAB of an existing Backup (schedule run, backup sync), one this namespace owns.
 */
function sourceBackup(
  from: RequestSources,
  nab: NonAdminBackup,
  policy: BackupPolicy,
): VeleroObject | undefined {
  const source = nab.status?.veleroBackup;
  if (!source) return undefined;
  const made = from.backups
    .byIndex(Index.nabUuid, source.nacuuid ?? '')
    .find(
      (b) =>
        b.metadata.name === source.name &&
        b.metadata.namespace === policy.veleroNamespace &&
        b.metadata.annotations?.[Annotations.nabNamespace] === nab.metadata.namespace &&
        b.metadata.annotations?.[Annotations.nabName] === nab.metadata.name,
    );
  if (made) return made;
  const adopted = adoptedBackup(from.adoption, nab, policy.veleroNamespace);
  return adopted?.metadata.name === source.name ? adopted : undefined;
}

/**
 * The Restore's spec: no cluster-scoped object ever (Velero skips cluster-scoped additional items, a
 * PVC's PV say, only when includeClusterResources is explicitly false), and never the kinds of
 * policy/velero-filters.ts; from a tenant's own storage location (whose contents the tenant writes), not
 * its RBAC either. A location tenantkit cannot identify as an admin's counts as the tenant's.
 */
export function veleroRestoreSpec(
  adoption: Ownerships,
  { ns, policy }: Pick<RequestSeen, 'ns' | 'policy'>,
  { backup, spec }: Checked,
): JsonObject {
  const owner = adoption.ownerOf(backup);
  const fromTenantLocation = owner.namespace === undefined || owner.via === 'tenant-location';
  const restoreSpec: JsonObject = withForcedRestoreFields(
    {
      ...withEnforced(spec, enforceableRestoreSpec(policy.enforceRestoreSpec)),
      backupName: backup.metadata.name!,
      includedNamespaces: [ns],
    },
    fromTenantLocation,
  );
  for (const field of ['scheduleName', 'excludedNamespaces', 'namespaceMapping'] as const) {
    delete restoreSpec[field];
  }
  return restoreSpec;
}
