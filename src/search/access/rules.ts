// What the access provider and the verification mode need of the API server: the RBAC the search
// components' ClusterRoles are rendered from (declarations only, so the capability's entry point stays light).
import type { PolicyRule } from '../../capability.ts';

/** Exactly what the RbacAccessProvider reads: the RBAC kinds, ManagedClusters, and CRDs (to notice ACM). */
export const accessProviderRules: PolicyRule[] = [
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings', 'clusterroles', 'clusterrolebindings'],
    verbs: ['list', 'watch'],
  },
  {
    apiGroups: ['cluster.open-cluster-management.io'],
    resources: ['managedclusters'],
    verbs: ['list', 'watch'],
  },
  { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['list', 'watch'] },
];

/** Only for the verification mode (compareWithRulesReview): acting as the user being checked. */
export const accessVerificationRules: PolicyRule[] = [
  { apiGroups: [''], resources: ['users', 'groups', 'serviceaccounts'], verbs: ['impersonate'] },
  { apiGroups: ['authentication.k8s.io'], resources: ['uids', 'userextras'], verbs: ['impersonate'] },
];
