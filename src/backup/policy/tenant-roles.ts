// The ClusterRoles that give tenants the backup capability: namespace admins and editors manage the
// non-admin kinds, viewers read them (the roles the seed's RBAC shows). Nothing in Velero's namespace.
import { crdTypes } from '../../crds/generated/crd-types.ts';
import type { KubeObject } from '../../kube/resources.ts';

// Storage location requests are the admin's (approval), not the tenant's.
export const tenantKinds: string[] = Object.values(crdTypes)
  .filter(
    (t) => t.group === crdTypes.NonAdminBackup.group && t !== crdTypes.NonAdminBackupStorageLocationRequest,
  )
  .map((t) => t.plural);
const aggregate = (...roles: string[]) =>
  Object.fromEntries(roles.map((r) => [`rbac.authorization.k8s.io/aggregate-to-${r}`, 'true']));

/**
 * What tenants get through the default roles, as the seed's RBAC shows: namespace admins and editors
 * manage the non-admin kinds, viewers read them. Nothing in Velero's namespace.
 */
export function backupUserClusterRoles(): KubeObject[] {
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'tenantkit:backup:editor', labels: aggregate('admin', 'edit') },
      rules: [
        {
          apiGroups: [crdTypes.NonAdminBackup.group],
          resources: tenantKinds,
          verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
        },
        {
          apiGroups: [crdTypes.NonAdminBackup.group],
          resources: tenantKinds.map((k) => `${k}/status`),
          verbs: ['get'],
        },
      ],
    } as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'tenantkit:backup:viewer', labels: aggregate('view') },
      rules: [
        {
          apiGroups: [crdTypes.NonAdminBackup.group],
          resources: tenantKinds,
          verbs: ['get', 'list', 'watch'],
        },
        {
          apiGroups: [crdTypes.NonAdminBackup.group],
          resources: tenantKinds.map((k) => `${k}/status`),
          verbs: ['get'],
        },
      ],
    } as KubeObject,
  ];
}
