// Search authorization: what each user may list, computed locally from RBAC informers. The query
// engine depends only on AccessSet/AccessProvider (../model.ts); this is where they come from.

export { allows, type ObjectAttributes } from './allows.ts';
export { computeAccessSet, digestOf, type RbacSnapshot } from './compute.ts';
export { ManagedClusterCrdName, ManagedClusterTracker, ManagedClusterType } from './managed-clusters.ts';
export {
  AccessTypes,
  BySubject,
  RbacAccessProvider,
  type RbacAccessProviderOptions,
  userCacheKey,
} from './provider.ts';
export * from './rbac.ts';
export { accessProviderRules, accessVerificationRules } from './rules.ts';
export * from './search-api.ts';
export { type RbacObjects, staticSnapshot } from './static-snapshot.ts';
export {
  type AccessDifference,
  compareWithRulesReview,
  impersonationHeaders,
  type RulesReviewComparison,
  rightsInNamespace,
} from './verify.ts';
