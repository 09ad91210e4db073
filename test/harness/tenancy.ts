// The tenancy guardrails an admin sets once (TenancyConfig "cluster": organizations by label, a namespace
// quota) and one tenant in one organization who may create namespaces, for files that act as that tenant.
// Everything goes at the file's cleanup.
import { OrganizationCrd, TenancyConfigCrd } from '../../src/api/tenancy.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/resources.ts';
import type { TestCluster } from './cluster.ts';

export const organizationLabel = 'appuio.io/organization';

export interface OrganizationTenant {
  organization: string;
  user: string;
  client: KubeClient;
}

export async function organizationTenant(
  cluster: TestCluster,
  options: { prefix: string; namespaceVerbs: string[] },
): Promise<OrganizationTenant> {
  const apply = { fieldManager: 'tenantkit-test', force: true };
  const id = cluster.unique('o');
  const organization = `${id}-org`;
  const user = `${options.prefix}-${id}`;
  await cluster.admin.apply(
    TenancyConfigCrd.type,
    { metadata: { name: 'cluster' }, spec: { organizationLabel, defaultNamespaceQuota: 5 } } as KubeObject,
    apply,
  );
  cluster.defer(() => cluster.admin.delete(TenancyConfigCrd.type, 'cluster'));
  await cluster.admin.apply(
    OrganizationCrd.type,
    {
      metadata: { name: organization },
      spec: { displayName: organization, members: { users: [user] } },
    } as KubeObject,
    apply,
  );
  cluster.defer(() => cluster.admin.delete(OrganizationCrd.type, organization));
  await cluster.grant(
    { kind: 'User', name: user },
    {
      name: `${id}-namespaces`,
      rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: options.namespaceVerbs }],
    },
  );
  return { organization, user, client: await cluster.user(user) };
}
