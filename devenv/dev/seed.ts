// What `tenantkit dev` puts in a new cluster before tenantkit starts: the namespace tenantkit runs in, every
// capability's tenant roles (as the chart gives them), and what each capability seeds for the example
// tenants (tenancy their organizations and namespaces, backup its configuration).
import { capabilities } from '../../src/capabilities.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { Resources } from '../../src/kube/resources.ts';

/** Two example tenants: each owns one namespace through their group. */
export const exampleTenants = [
  { name: 'alice', groups: ['team-a'], namespace: 'team-a' },
  { name: 'bob', groups: ['team-b'], namespace: 'team-b' },
];

export const systemNamespace = 'tenantkit-system';
export const fieldManager = 'tenantkit-dev';

export async function seedCluster(client: KubeClient, veleroNamespace: string): Promise<void> {
  const apply = { fieldManager, force: true };
  await client.apply(Resources.namespaces, { metadata: { name: systemNamespace } }, apply);
  for (const c of capabilities) {
    for (const role of c.userClusterRoles?.() ?? []) await client.apply(Resources.clusterRoles, role, apply);
  }
  for (const c of capabilities) {
    await c.devSeed?.({ client, fieldManager, veleroNamespace, tenants: exampleTenants });
  }
}
