// The tenancy guardrails an admin sets once (TenancyConfig "cluster": organizations by label, a namespace
// quota) and one tenant in one organization who may create namespaces, for files that act as that tenant.
// Everything goes at the file's cleanup.
import { OrganizationCrd, TenancyConfigCrd } from '../../src/crds/tenancy.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { organizationBindingName } from '../../src/tenancy/controllers/org-rbac.ts';
import { eventually, type TestCluster } from './cluster.ts';

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

/**
 * A namespace the tenant creates in their organization through the tenancy webhooks (retried while
 * they come up), with `annotations` (e.g. the run-once deadline and default node selector the policy lets
 * tenants set). Resolves once its default ServiceAccount exists and the API server lets the tenant
 * create Pods there (the organization's admin binding); deleted at the file's cleanup.
 */
export async function organizationNamespace(
  cluster: TestCluster,
  tenant: OrganizationTenant,
  /** `name` makes a namespace of that name (again: e.g. after it was deleted), else one from `prefix`. */
  options: { prefix: string; name?: string; annotations?: Record<string, string> },
): Promise<string> {
  const name = options.name ?? cluster.unique(options.prefix);
  cluster.defer(() => cluster.admin.delete(Resources.namespaces, name));
  await eventually(
    async () =>
      tenant.client
        .create<KubeObject>(Resources.namespaces, {
          metadata: {
            name,
            labels: { [organizationLabel]: tenant.organization },
            annotations: options.annotations ?? {},
          },
        })
        .catch((err: Error) => (err.message.includes('AlreadyExists') ? {} : Promise.reject(err))),
    { what: 'tenant namespace created through the tenancy webhooks', timeoutMs: 30_000 },
  );
  await eventually(
    async () =>
      (await cluster.admin.get(Resources.serviceAccounts, 'default', name)) !== undefined &&
      (await cluster.admin.get(Resources.roleBindings, organizationBindingName('admin'), name)) !== undefined,
    { what: 'default service account and the organization admin binding' },
  );
  // The API server authorizes from its own RBAC cache, a moment behind the binding: ask it as the tenant.
  await eventually(
    async () => {
      const review = await tenant.client.create<KubeObject & { status?: { allowed?: boolean } }>(
        Resources.selfSubjectAccessReviews,
        {
          metadata: {},
          spec: { resourceAttributes: { namespace: name, verb: 'create', resource: 'pods' } },
        } as KubeObject,
      );
      return review.status?.allowed === true;
    },
    { what: `the tenant may create Pods in ${name}` },
  );
  return name;
}
