// The search service's own identity in a test cluster, as the chart sets it up: a ServiceAccount holding
// exactly the chart's rules, and the ClusterRoles that let users search installed.
import type { KubeClient } from '../../src/kube/client.ts';
import { Resources } from '../../src/kube/resources.ts';
import { collectorRules } from '../../src/search/collector/rules.ts';
import { searchServiceRules, searchUserClusterRoles } from '../../src/search/index.ts';
import type { TestCluster } from './cluster.ts';

export async function searchServiceIdentity(
  cluster: TestCluster,
  options: { alsoCollects?: boolean } = {},
): Promise<KubeClient> {
  const namespace = await cluster.namespace('search-sys');
  const { client } = await cluster.serviceAccount(namespace, 'search');
  // With alsoCollects, the one process collects this cluster too (as `tenantkit dev` runs it), with the
  // collector's rules besides the API's.
  const rules = options.alsoCollects ? [...searchServiceRules, ...collectorRules] : searchServiceRules;
  await cluster.grant({ kind: 'ServiceAccount', name: 'search', namespace }, { rules });
  for (const role of searchUserClusterRoles()) {
    await cluster.admin.apply(Resources.clusterRoles, role, { fieldManager: 'tenantkit-test', force: true });
  }
  return client;
}
