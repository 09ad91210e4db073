// What a tenant may ask of a backup, checked the same way by the admission webhook and the controller:
// every problem names the field, the rule and the fix. Tenant data is never trusted to widen the
// backup's reach: namespaces, cluster-scoped resources and storage locations are tenantkit's to set.
import { enforcedMessage, type JsonObject, violations } from './enforce.ts';

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
