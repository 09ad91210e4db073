// What a tenant may ask of a backup or a restore, checked the same way by the admission webhook and the
// controller: every problem names the field, the rule and the fix. Tenant data is never trusted to widen
// the reach of a backup or restore: namespaces, cluster-scoped resources and storage locations are
// tenantkit's to set.
import type { NonAdminBackup } from '../api/backup.ts';
import { enforcedMessage, type JsonObject, unenforceable, violations } from './enforce.ts';

const path = 'spec.backupSpec';

export function backupSpecProblems(namespace: string, spec: JsonObject, enforced: JsonObject): string[] {
  const problems: string[] = [];
  const included = spec.includedNamespaces;
  if (Array.isArray(included) && included.some((n) => n !== namespace)) {
    problems.push(
      `${path}.includedNamespaces may only name this namespace (${namespace}); leave it out, tenantkit sets it`,
    );
  }
  const excluded = spec.excludedNamespaces;
  if (Array.isArray(excluded) && excluded.length > 0) {
    problems.push(
      `${path}.excludedNamespaces is not allowed: a backup covers this namespace only; leave it out`,
    );
  }
  if (spec.includeClusterResources === true) {
    problems.push(
      `${path}.includeClusterResources may not be true: tenants cannot back up cluster-scoped resources`,
    );
  }
  for (const field of ['includedClusterScopedResources', 'excludedClusterScopedResources'] as const) {
    const value = spec[field];
    if (Array.isArray(value) && value.length > 0) {
      problems.push(`${path}.${field} is not allowed: tenants cannot back up cluster-scoped resources`);
    }
  }
  if (typeof spec.storageLocation === 'string' && spec.storageLocation !== '') {
    problems.push(
      `${path}.storageLocation "${spec.storageLocation}" is not a NonAdminBackupStorageLocation of namespace ${namespace}; leave it out to use the default location`,
    );
  }
  for (const field of violations(spec, enforced)) problems.push(enforcedMessage('NonAdminBackup', field));
  return problems;
}

const restorePath = 'spec.restoreSpec';

/** The Velero phases a Backup ends in without being restorable (src/kube/velero.ts finishedPhases). */
const failedBackupPhases = ['PartiallyFailed', 'Failed', 'FailedValidation'];

/**
 * The admin's enforced RestoreSpec, less the fields tenantkit itself sets (the NonAdminBackupConfig CRD
 * refuses them; dropped here too, so that a config stored before that rule cannot turn the NAB name a
 * tenant writes in backupName, or the namespace tenantkit forces, into an "override").
 */
export function enforceableRestoreSpec(enforced: JsonObject): JsonObject {
  return Object.fromEntries(
    Object.entries(enforced).filter(([field]) => !(field in unenforceable.NonAdminRestore)),
  );
}

/**
 * What a tenant may ask of a restore. `backupName` names a NonAdminBackup of the same namespace (found
 * with `findNab`), never a Velero backup: tenantkit restores from that NAB's Velero backup, so a tenant
 * can only restore what it backed up itself, and only into its own namespace.
 */
export function restoreSpecProblems(
  namespace: string,
  spec: JsonObject,
  enforced: JsonObject,
  /** Omitted at admission: the NonAdminBackup may not exist or be complete yet, and the restore waits. */
  findNab?: (name: string) => NonAdminBackup | undefined,
): string[] {
  const problems: string[] = [];
  const backupName = spec.backupName;
  if (typeof backupName !== 'string' || backupName === '') {
    problems.push(
      `${restorePath}.backupName is required: set it to the name of a NonAdminBackup in namespace ${namespace} whose backup completed`,
    );
  } else if (findNab) {
    const problem = backupProblem(namespace, backupName, findNab(backupName));
    if (problem) problems.push(problem);
  }
  if (typeof spec.scheduleName === 'string' && spec.scheduleName !== '') {
    problems.push(
      `${restorePath}.scheduleName is not allowed: tenants restore from their own NonAdminBackups; leave it out and set backupName to a NonAdminBackup`,
    );
  }
  const included = spec.includedNamespaces;
  if (Array.isArray(included) && included.some((n) => n !== namespace)) {
    problems.push(
      `${restorePath}.includedNamespaces may only name this namespace (${namespace}); leave it out, tenantkit sets it`,
    );
  }
  const excluded = spec.excludedNamespaces;
  if (Array.isArray(excluded) && excluded.length > 0) {
    problems.push(
      `${restorePath}.excludedNamespaces is not allowed: a restore covers this namespace only; leave it out`,
    );
  }
  const mapping = spec.namespaceMapping;
  if (typeof mapping === 'object' && mapping !== null && Object.keys(mapping).length > 0) {
    problems.push(
      `${restorePath}.namespaceMapping is not allowed: a restore writes into this namespace (${namespace}) only; leave it out`,
    );
  }
  if (spec.includeClusterResources === true) {
    problems.push(
      `${restorePath}.includeClusterResources may not be true: tenants cannot restore cluster-scoped resources; leave it out`,
    );
  }
  const allowed = enforceableRestoreSpec(enforced);
  // A resource modifier is a ConfigMap in Velero's namespace, which is the admin's to choose (by
  // enforcing it), not the tenant's.
  const modifier = spec.resourceModifier;
  if (modifier !== undefined && modifier !== null && !('resourceModifier' in allowed)) {
    problems.push(
      `${restorePath}.resourceModifier is not allowed: it names a ConfigMap in Velero's namespace, which only an admin may choose; leave it out`,
    );
  }
  for (const field of violations(spec, allowed)) problems.push(enforcedMessage('NonAdminRestore', field));
  return problems;
}

/** Why a NonAdminBackup cannot be restored from, or undefined when it can. */
function backupProblem(namespace: string, name: string, nab: NonAdminBackup | undefined): string | undefined {
  const field = `${restorePath}.backupName "${name}"`;
  if (!nab) {
    return `${field} is not a NonAdminBackup in namespace ${namespace}: name one of this namespace's NonAdminBackups (kubectl get nonadminbackups -n ${namespace})`;
  }
  if (nab.metadata.deletionTimestamp || nab.spec?.deleteBackup === true) {
    return `${field}: that NonAdminBackup is being deleted; pick another NonAdminBackup`;
  }
  const velero = nab.status?.veleroBackup;
  const phase = velero?.status?.phase;
  if (phase === 'Completed' && velero?.name) return undefined;
  if (phase && failedBackupPhases.includes(phase)) {
    return `${field}: its backup ended ${phase}, and only a Completed backup can be restored; pick another NonAdminBackup`;
  }
  if (nab.status?.phase === 'BackingOff') {
    return `${field}: that NonAdminBackup was not accepted (BackingOff), so it has no backup; fix it or pick another NonAdminBackup`;
  }
  return `${field}: its backup is ${phase ?? nab.status?.phase ?? 'New'}, not Completed yet; wait for it to complete, or pick another NonAdminBackup`;
}
