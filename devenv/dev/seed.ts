// What `tenantkit dev` puts in a new cluster before tenantkit starts: the namespace tenantkit runs in, two
// example organizations each with one member and one namespace, and the tenant roles the chart would give.
import { OrganizationCrd, TenantUserCrd } from '../../src/api/tenancy.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { namespaceCreatorRole, tenancyUserClusterRoles } from '../../src/tenancy/policy/tenant-roles.ts';

/** Two example tenants: each owns one namespace through their group. */
export const exampleTenants = [
  { name: 'alice', groups: ['team-a'], namespace: 'team-a' },
  { name: 'bob', groups: ['team-b'], namespace: 'team-b' },
];

export const systemNamespace = 'tenantkit-system';
export const fieldManager = 'tenantkit-dev';

/**
 * Two organizations with one member each, their namespaces, and the right to create more namespaces
 * (which the tenancy policies then assign to the creator's organization).
 */
export async function seedTenants(client: KubeClient): Promise<void> {
  const apply = { fieldManager, force: true };
  const orgLabel = 'appuio.io/organization';
  await client.apply(Resources.namespaces, { metadata: { name: systemNamespace } }, apply);
  // The chart's tenant roles: create namespaces, and edit (only) those of one's organizations.
  for (const role of tenancyUserClusterRoles()) await client.apply(Resources.clusterRoles, role, apply);
  // Earlier dev clusters gave tenants update/patch on every namespace through this role.
  await client.delete(Resources.clusterRoles, 'tenantkit:namespace-creator');
  for (const tenant of exampleTenants) {
    const org = tenant.groups[0]!;
    await client.apply(
      OrganizationCrd.type,
      {
        metadata: { name: org },
        spec: { displayName: `Team ${org}`, members: { groups: [org] } },
      } as KubeObject,
      apply,
    );
    await client.apply(
      TenantUserCrd.type,
      {
        metadata: { name: tenant.name },
        spec: { username: tenant.name, defaultOrganization: org },
      } as KubeObject,
      apply,
    );
    await client.apply(
      Resources.namespaces,
      { metadata: { name: tenant.namespace, labels: { [orgLabel]: org } } },
      apply,
    );
    await client.delete(Resources.clusterRoleBindings, `tenantkit:namespace-creator:${org}`);
    await client.apply(
      Resources.clusterRoleBindings,
      {
        metadata: { name: `${namespaceCreatorRole}:${org}` },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: namespaceCreatorRole,
        },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: org }],
      } as KubeObject,
      apply,
    );
  }
}
