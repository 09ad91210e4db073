// What a tenant may do with namespace objects, as ClusterRoles the chart ships and `tenantkit dev` seeds:
// - namespace-owner, aggregated into `admin`: get, update and patch of the namespace itself. The
//   organization RBAC controller binds `admin` in each organization namespace, and a RoleBinding in a
//   namespace grants rights on that namespace object only, so members edit their own namespaces and no
//   other (labels and annotations the admin allows, the transfer to another of their organizations).
// - namespace-creator, bound by the admin to tenants' groups with a ClusterRoleBinding: create (the
//   namespace policy assigns the new namespace to the creator's organization), get, list and watch.
// Neither grants update or patch on every namespace. An admin who grants more is still held by the
// namespace policy (no adopting unowned namespaces, no change to reserved ones).
import type { KubeObject } from '../../kube/resources.ts';

export const namespaceOwnerRole = 'tenantkit:tenancy:namespace-owner';
export const namespaceCreatorRole = 'tenantkit:tenancy:namespace-creator';

export function tenancyUserClusterRoles(): KubeObject[] {
  const role = (name: string, verbs: string[], labels: Record<string, string> = {}) =>
    ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name, labels },
      rules: [{ apiGroups: [''], resources: ['namespaces'], verbs }],
    }) as KubeObject;
  return [
    role(namespaceOwnerRole, ['get', 'update', 'patch'], {
      'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
    }),
    role(namespaceCreatorRole, ['create', 'get', 'list', 'watch']),
  ];
}
