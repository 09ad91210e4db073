// Which tenant spec fields an admin may enforce, part of the backup API: the NonAdminBackupConfig CRD
// refuses the others at admission (with these reasons), and the controllers check them the same way.

export type EnforcedKind = 'NonAdminBackup' | 'NonAdminRestore' | 'NonAdminBackupStorageLocation';

/** Where each kind's enforced spec lives in the tenant object, for messages. */
export const specPathOf: Record<EnforcedKind, string> = {
  NonAdminBackup: 'spec.backupSpec',
  NonAdminRestore: 'spec.restoreSpec',
  NonAdminBackupStorageLocation: 'spec.backupStorageLocationSpec',
};

/** Fields the admin may not enforce, with the reason the configuration reports. */
export const unenforceable: Record<EnforcedKind, Record<string, string>> = {
  NonAdminBackup: {
    includedNamespaces: "tenantkit always sets it to the tenant's own namespace",
    excludedNamespaces: "a tenant's backup covers its own namespace only",
    includeClusterResources: 'tenants may never back up cluster-scoped resources',
    includedClusterScopedResources: 'tenants may never back up cluster-scoped resources',
    excludedClusterScopedResources: 'tenants may never back up cluster-scoped resources',
    storageLocation:
      "tenantkit chooses it: the default location, or one of the tenant's own NonAdminBackupStorageLocations",
  },
  NonAdminRestore: {
    backupName: "tenantkit sets it to the Velero backup of the tenant's NonAdminBackup",
    scheduleName: 'tenants restore from their own backups only',
    includedNamespaces: "tenantkit always sets it to the tenant's own namespace",
    excludedNamespaces: "a tenant's restore covers its own namespace only",
    namespaceMapping: "a tenant's restore may not write into other namespaces",
    includeClusterResources: 'tenants may never restore cluster-scoped resources',
  },
  NonAdminBackupStorageLocation: {
    credential: "tenantkit points it at the copy of the tenant's own Secret",
    objectStorage: "tenantkit keeps the tenant's objects under a prefix of the tenant's namespace",
  },
};
