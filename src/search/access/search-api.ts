// Who may use search at all, and who may see a managed cluster: both are plain RBAC permissions, so
// admins grant them with the tools they already use (and the default admin/edit/view roles include
// the first one through aggregation).
import type { KubeObject } from '../../kube/resources.ts';
import type { RbacRule } from './rbac.ts';

/** Using search is `create` on the virtual resource `searches.search.tenantkit.io`, in any namespace. */
export const SearchApiGroup = 'search.tenantkit.io';
export const SearchResource = 'searches';
export const SearchVerb = 'create';

/** ACM's rule: who may create ManagedClusterViews in a cluster's namespace may view that cluster. */
export const ManagedClusterViewGroup = 'view.open-cluster-management.io';
export const ManagedClusterViewResource = 'managedclusterviews';
export const ManagedClusterViewVerb = 'create';

export const SearchUserClusterRoleName = 'tenantkit:search:user';
/**
 * Lets its holders ask kube-apiserver for projects (project.openshift.io/v1): bound to every
 * authenticated user where tenantkit serves that API, as OpenShift does; the Projects API then answers
 * each with only the namespaces they may use.
 */
export const ProjectsReaderClusterRoleName = 'tenantkit:projects:reader';

/**
 * ClusterRoles that let their holders use search, labelled so kube-controller-manager aggregates them
 * into the default `admin`, `edit` and `view` roles: anyone who can view a namespace can search (and
 * search still shows them only what they may list).
 */
export function searchUserClusterRoles(): (KubeObject & { rules: RbacRule[] })[] {
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: {
        name: SearchUserClusterRoleName,
        labels: {
          'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
          'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
          'rbac.authorization.k8s.io/aggregate-to-view': 'true',
        },
      },
      rules: [{ apiGroups: [SearchApiGroup], resources: [SearchResource], verbs: [SearchVerb] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: ProjectsReaderClusterRoleName },
      rules: [
        { apiGroups: ['project.openshift.io'], resources: ['projects'], verbs: ['get', 'list', 'watch'] },
      ],
    },
  ];
}
