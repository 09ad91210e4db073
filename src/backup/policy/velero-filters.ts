// What tenantkit forces into every Velero Backup and Restore it makes, whatever the tenant or the admin asked:
// resources a tenant's backup must not carry back in, and a restore must never write. Pure, shared by the
// NAB, NAR and schedule controllers.
//
// Velero resolves each excludedResources entry to `resource.group` through discovery and matches it (as a
// glob) against the group-resource of each item, so entries are written fully qualified (`*.velero.io`
// matches every velero.io kind; an entry Velero cannot resolve is kept as written, so the glob stays a glob).
import type { JsonObject } from './enforce.ts';

const group = 'oadp.openshift.io';
/** The tenant-facing kinds: a restore recreating one would re-run an operation or carry forged status. */
export const nonAdminKinds: readonly string[] = [
  'nonadminbackups',
  'nonadminrestores',
  'nonadmindownloadrequests',
  'nonadminbackupstoragelocations',
  'nonadminschedules',
  'nonadminbackupstoragelocationrequests',
].map((k) => `${k}.${group}`);
/** Velero's own kinds, all of them: a tenant namespace must never hold Backups, Restores, locations, … */
export const veleroKinds = '*.velero.io';
/**
 * RBAC of the namespace: from a tenant's own storage location (bucket contents the tenant can write) Velero
 * would create whatever Role or RoleBinding the bucket holds, under its own identity, past the API server's
 * escalation checks (a RoleBinding to cluster-admin, say).
 */
export const rbacKinds: readonly string[] = [
  'roles.rbac.authorization.k8s.io',
  'rolebindings.rbac.authorization.k8s.io',
];
/** Operations: a backup of them, restored, would run them again (or show stale status). */
export const operationKinds: readonly string[] = nonAdminKinds.slice(0, 3);

const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === 'string') : []);
const merged = (have: unknown, add: readonly string[]) => [...new Set([...list(have), ...add])];

/** What every Velero Restore made for a NonAdminRestore excludes. */
export function restoreExclusions(fromTenantLocation: boolean): string[] {
  return [...nonAdminKinds, veleroKinds, ...(fromTenantLocation ? rbacKinds : [])];
}

/**
 * The Velero RestoreSpec with tenantkit's forced fields: no cluster-scoped object at all (Velero skips
 * cluster-scoped additional items, such as a restored PVC's PV, only when this is explicitly false), and
 * {@link restoreExclusions} added to excludedResources (the tenant's and the admin's stay).
 */
export function withForcedRestoreFields(spec: JsonObject, fromTenantLocation: boolean): JsonObject {
  return {
    ...spec,
    includeClusterResources: false,
    excludedResources: merged(spec.excludedResources, restoreExclusions(fromTenantLocation)),
  };
}

/** Velero's "new" resource filters: a Backup using them may not use excludedResources (and vice versa). */
const newFilters = [
  'includedNamespaceScopedResources',
  'excludedNamespaceScopedResources',
  'includedClusterScopedResources',
  'excludedClusterScopedResources',
];

/**
 * The Velero BackupSpec (of a Backup or a Schedule's template) with the operation kinds excluded, in the
 * filter style the spec already uses (Velero refuses a mix of old and new filters).
 */
export function withForcedBackupFields(spec: JsonObject): JsonObject {
  const usesNew = newFilters.some((f) => list(spec[f]).length > 0);
  const field = usesNew ? 'excludedNamespaceScopedResources' : 'excludedResources';
  return { ...spec, [field]: merged(spec[field], operationKinds) };
}
