// The search capability: what its processes need from the API server (rendered into the Helm chart's
// RBAC) and the ClusterRoles it installs. The parts themselves start from service.ts (api, indexer) and
// collector/ (one per cluster).
import type { PolicyRule } from '../capability.ts';
import { accessProviderRules } from './access/index.ts';

/** The API and indexer: RBAC informers for access sets, TokenReview for callers, and SubjectAccessReview
 * for collectors of managed clusters (may this identity write that cluster's rows?). */
export const searchServiceRules: PolicyRule[] = [
  ...accessProviderRules,
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  // Deletions of ServiceAccounts end their cached token reviews at once.
  { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['list', 'watch'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

export { SearchUserClusterRoleName, searchUserClusterRoles } from './access/search-api.ts';
