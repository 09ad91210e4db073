// The search capability: no controllers and no webhooks, two components of its own (the API with the
// indexer, and a collector per cluster), what they need from the API server (rendered into the Helm
// chart's RBAC) and the ClusterRoles it gives tenants. The parts themselves start from service.ts (api,
// indexer) and collector/.
import type { Capability, PolicyRule } from '../capability.ts';
import { accessProviderRules } from './access/rules.ts';
import { searchUserClusterRoles } from './access/search-api.ts';
import { collectorRules } from './collector/rules.ts';

/** The API and indexer: RBAC informers for access sets, TokenReview for callers, and SubjectAccessReview
 * for collectors of managed clusters (may this identity write that cluster's rows?). */
export const searchServiceRules: PolicyRule[] = [
  ...accessProviderRules,
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  // Deletions of ServiceAccounts end their cached token reviews at once.
  { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['list', 'watch'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  // The Projects API serves namespaces (from a cache) as each caller's projects.
  { apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] },
];

export { SearchUserClusterRoleName, searchUserClusterRoles } from './access/search-api.ts';

export const search: Capability = {
  name: 'search',
  controllerRules: [],
  webhookRules: [],
  components: [
    { name: 'search', rules: searchServiceRules, command: 'tenantkit search api' },
    { name: 'search-collector', rules: collectorRules, command: 'tenantkit search collector' },
  ],
  userClusterRoles: searchUserClusterRoles,
  commands: {
    search: {
      usage: `  tenantkit search QUERY [-o table|json|yaml|name]
                                            search everything you may list, e.g. 'kind:Pod name:web*'
  tenantkit search api|collector|verify-access ...
                                            run the search service's parts; see tenantkit search --help`,
      run: async (args, stop) => (await import('./cli/search.ts')).searchCommand(args, () => stop()),
    },
    namespaces: {
      usage: `  tenantkit namespaces [-o table|name|json] the namespaces you may use (the Projects API search serves)`,
      run: async (args) => (await import('./cli/namespaces.ts')).namespacesCommand(args),
    },
  },
  consoleCalls: [
    // The namespaces a user may pick from (the Projects API this capability serves).
    {
      methods: ['GET'],
      resource: { group: 'project.openshift.io', version: 'v1', plural: 'projects' },
      namespaced: false,
      scope: 'collection',
    },
  ],
};
