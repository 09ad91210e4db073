// The benchmarks' one tenant: "alice", member of organization bench-org (a quota no bench reaches), with a
// ClusterRole granting `rules` cluster-wide. Applied by the admin client before a bench measures her.
import { OrganizationCrd, TenancyConfigCrd } from '../src/crds/tenancy.ts';
import type { KubeClient } from '../src/kube/client.ts';
import { type KubeObject, Resources, type ResourceType } from '../src/kube/resources.ts';

export const benchOrganization = 'bench-org';
const apply = { fieldManager: 'bench', force: true };

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** The TenancyConfig `spec`, bench-org and alice's cluster-wide role, applied in this order. */
export async function applyBenchTenant(
  admin: KubeClient,
  options: { config: Record<string, unknown>; rules: PolicyRule[] },
): Promise<void> {
  const objects: [ResourceType, object][] = [
    [TenancyConfigCrd.type, { metadata: { name: 'cluster' }, spec: options.config }],
    [
      OrganizationCrd.type,
      {
        metadata: { name: benchOrganization },
        spec: { members: { users: ['alice'] }, namespaceQuota: 100000 },
      },
    ],
    [Resources.clusterRoles, { metadata: { name: 'bench-tenant' }, rules: options.rules }],
    [
      Resources.clusterRoleBindings,
      {
        metadata: { name: 'bench-tenant' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'bench-tenant' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
      },
    ],
  ];
  for (const [type, object] of objects) await admin.apply(type, object as KubeObject, apply);
}
