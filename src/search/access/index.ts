// Search authorization: what each user may list, computed locally from RBAC informers. The query
// engine depends only on AccessSet/AccessProvider (../model.ts); this is where they come from.
import type { PolicyRule } from '../../capability.ts';
import { ManagedClusterType } from './managed-clusters.ts';

export { allows, type ObjectAttributes } from './allows.ts';
export { computeAccessSet, digestOf, type RbacSnapshot } from './compute.ts';
export { ManagedClusterCrdName, ManagedClusterTracker, ManagedClusterType } from './managed-clusters.ts';
export { BySubject, RbacAccessProvider, type RbacAccessProviderOptions, userCacheKey } from './provider.ts';
export * from './rbac.ts';
export * from './search-api.ts';
export { type RbacObjects, staticSnapshot } from './static-snapshot.ts';
export {
  type AccessDifference,
  compareWithRulesReview,
  impersonationHeaders,
  type RulesReviewComparison,
  rightsInNamespace,
} from './verify.ts';

/** Exactly what the RbacAccessProvider reads: the RBAC kinds, ManagedClusters, and CRDs (to notice ACM). */
export const accessProviderRules: PolicyRule[] = [
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings', 'clusterroles', 'clusterrolebindings'],
    verbs: ['list', 'watch'],
  },
  { apiGroups: [ManagedClusterType.group], resources: [ManagedClusterType.plural], verbs: ['list', 'watch'] },
  { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['list', 'watch'] },
];

/** Only for the verification mode (compareWithRulesReview): acting as the user being checked. */
export const accessVerificationRules: PolicyRule[] = [
  { apiGroups: [''], resources: ['users', 'groups', 'serviceaccounts'], verbs: ['impersonate'] },
  { apiGroups: ['authentication.k8s.io'], resources: ['uids', 'userextras'], verbs: ['impersonate'] },
];
