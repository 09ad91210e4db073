// What `tenantkit dev` seeds for tenancy: an organization per example tenant (its group as members), the
// tenant's user record, its namespace, and the right to create more namespaces (which the tenancy policies
// then give to the creator's organization).

import type { DevSeedContext } from '../../capability.ts';
import { DefaultOrganizationLabel, OrganizationCrd, TenantUserCrd } from '../../crds/tenancy.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { namespaceCreatorRole } from '../policy/tenant-roles.ts';

export async function seedExampleTenants({ client, fieldManager, tenants }: DevSeedContext): Promise<void> {
  const apply = { fieldManager, force: true };
  // Earlier dev clusters gave tenants update/patch on every namespace through this role.
  await client.delete(Resources.clusterRoles, 'tenantkit:namespace-creator');
  for (const tenant of tenants) {
    const org = tenant.groups[0]!;
    const organization = {
      metadata: { name: org },
      spec: { displayName: `Team ${org}`, members: { groups: [org] } },
    };
    await client.apply(OrganizationCrd.type, organization as KubeObject, apply);
    const user = {
      metadata: { name: tenant.name },
      spec: { username: tenant.name, defaultOrganization: org },
    };
    await client.apply(TenantUserCrd.type, user as KubeObject, apply);
    const namespace = { metadata: { name: tenant.namespace, labels: { [DefaultOrganizationLabel]: org } } };
    await client.apply(Resources.namespaces, namespace, apply);
    await client.delete(Resources.clusterRoleBindings, `tenantkit:namespace-creator:${org}`);
    await client.apply(
      Resources.clusterRoleBindings,
      {
        metadata: { name: `${namespaceCreatorRole}:${org}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: namespaceCreatorRole },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: org }],
      } as KubeObject,
      apply,
    );
  }
}
