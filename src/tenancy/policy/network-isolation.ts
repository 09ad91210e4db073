// Organizations apart on the network: for each isolated organization an AdminNetworkPolicy (SIG Network's
// cluster-scoped policy, evaluated before any namespace's NetworkPolicy) whose subject is the
// organization's namespaces and whose ingress rules, in order, pass connections from the organization's own
// namespaces and from what the admin allows to the namespaces' own NetworkPolicies, and deny every other
// Pod. Tenants cannot write AdminNetworkPolicies (cluster-scoped, admin only), and no NetworkPolicy of
// theirs can let in what the Deny rule drops: the guardrail lives above their policies. Pure: the
// organization reconciler decides when to apply it.
import type { Organization } from '../../crds/tenancy.ts';
import type { KubeObject, ResourceType } from '../../kube/resources.ts';
import { type EffectiveConfig, notForTenantsLabel } from '../model.ts';

export const adminNetworkPolicies: ResourceType = {
  group: 'policy.networking.k8s.io',
  version: 'v1alpha1',
  plural: 'adminnetworkpolicies',
  kind: 'AdminNetworkPolicy',
  namespaced: false,
};

type Selector = NonNullable<EffectiveConfig['networkIsolation']['allowFrom'][number]['namespaceSelector']>;

interface IngressRule {
  name: string;
  action: 'Allow' | 'Deny' | 'Pass';
  from: { namespaces: Selector }[];
}

export interface AdminNetworkPolicy extends KubeObject {
  spec: { priority: number; subject: { namespaces: Selector }; ingress: IngressRule[] };
}

/** The policy's name: the organization's, prefixed (names of both are at most 253 characters). */
export const isolationPolicyName = (organization: string) =>
  `tenantkit-organization-${organization}`.slice(0, 253);

/** Whether `organization` is isolated, and what it accepts connections from besides itself. */
export function isolationOf(
  config: EffectiveConfig,
  organization: string,
): { isolated: false } | { isolated: true; allowFrom: Selector[] } {
  const settings = config.networkIsolation;
  const own = settings.organizations.find((o) => o.name === organization);
  if (!settings.enabled || own?.isolated === false) return { isolated: false };
  return {
    isolated: true,
    allowFrom: [...settings.allowFrom, ...(own?.allowFrom ?? [])].map((p) => p.namespaceSelector),
  };
}

/** The AdminNetworkPolicy (metadata without ownership) that isolates `organization`. */
export function isolationPolicy(
  config: EffectiveConfig,
  organization: Organization,
  allowFrom: Selector[],
): AdminNetworkPolicy {
  const name = organization.metadata.name!;
  const members: Selector = {
    matchLabels: { [config.organizationLabel]: name },
    // A namespace reserved for the cluster stays out of any organization, whatever its label says.
    matchExpressions: [{ key: notForTenantsLabel, operator: 'NotIn', values: ['true'] }],
  };
  const ingress: IngressRule[] = [
    { name: 'same-organization', action: 'Pass', from: [{ namespaces: members }] },
    ...(allowFrom.length
      ? [
          {
            name: 'allowed-by-the-cluster-admin',
            action: 'Pass' as const,
            from: allowFrom.map((namespaces) => ({ namespaces })),
          },
        ]
      : []),
    { name: 'other-namespaces', action: 'Deny', from: [{ namespaces: {} }] },
  ];
  return {
    apiVersion: `${adminNetworkPolicies.group}/${adminNetworkPolicies.version}`,
    kind: adminNetworkPolicies.kind,
    metadata: { name: isolationPolicyName(name) },
    spec: { priority: config.networkIsolation.priority, subject: { namespaces: members }, ingress },
  };
}
