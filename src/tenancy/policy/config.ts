// The effective tenancy configuration, worked out from the TenancyConfig named "cluster" with defaults
// filled in, and the pure rules read from it (wildcards, reserved namespaces, policy switches). The
// live source of it is caches/config.ts.
import {
  DefaultOrganizationLabel,
  type switchablePolicies,
  type TenancyConfig,
  tenancyConfigKeys,
} from '../../crds/tenancy.ts';
import { type ConfigSource, type EffectiveConfig, notForTenantsLabel } from '../model.ts';

export const defaults: EffectiveConfig = {
  organizationLabel: DefaultOrganizationLabel,
  // tenantkit's own service accounts, whatever the release is called.
  privilegedUsers: ['system:serviceaccount:tenantkit-system:*'],
  privilegedGroups: ['system:masters'],
  privilegedClusterRoles: ['cluster-admin'],
  // Velero's usual namespace too: a tenant who made `velero` before Velero is installed would own the
  // namespace that then holds Velero's cloud credentials and every tenant's repository password.
  reservedNamespaces: ['kube-*', 'openshift*', 'default', 'tenantkit-*', 'system-*', 'velero'],
  allowedLabels: [],
  allowedAnnotations: [],
  defaultOrganizationClusterRoles: ['admin'],
  defaultNamespaceQuota: 25,
  quotaNamespace: 'tenantkit-system',
  namespaceQuotaHoldSeconds: 10,
  runOnceActiveDeadlineSeconds: 1800,
  runOnceActiveDeadlineMaxSeconds: 86400,
  runOnceActiveDeadlineAnnotation: 'appuio.io/active-deadline-seconds-override',
  defaultNodeSelector: {},
  nodeSelectorAnnotation: 'appuio.io/default-node-selector',
  fairUseRatios: [],
  activeUsageProfile: '',
  disabledPolicies: [],
  // Organizations apart on the network unless the admin says otherwise (needs an AdminNetworkPolicy enforcer).
  networkIsolation: { enabled: true, priority: 900, allowFrom: [], organizations: [] },
  // Nothing restricted until the admin says what (the namespace policies above already hold).
  guardrails: {},
};

/** The effective configuration; `namespace` is where tenantkit runs (its own identity, its ledger). */
export function effective(
  config: TenancyConfig | undefined,
  namespace = defaults.quotaNamespace,
): EffectiveConfig {
  const spec = (config?.spec ?? {}) as Partial<EffectiveConfig>;
  const out = {
    ...defaults,
    quotaNamespace: namespace,
    privilegedUsers: [`system:serviceaccount:${namespace}:*`],
  };
  for (const key of Object.keys(defaults) as (keyof EffectiveConfig)[]) {
    if (spec[key] !== undefined) (out as Record<string, unknown>)[key] = spec[key];
  }
  out.networkIsolation = { ...defaults.networkIsolation, ...spec.networkIsolation };
  return out;
}

/**
 * Which of several policies are on now, by the names an admin switches them off with
 * (TenancyConfig.spec.disabledPolicies): for a webhook that answers for more than one policy in one call.
 */
export function policiesOn<K extends string>(
  config: ConfigSource,
  names: Record<K, (typeof switchablePolicies)[number]>,
): Record<K, boolean> {
  const disabled = config().disabledPolicies;
  const on = {} as Record<K, boolean>;
  for (const key of Object.keys(names) as K[]) on[key] = !disabled.includes(names[key]);
  return on;
}

const compiled = new Map<string, RegExp>();

/** Shell-style wildcard match where `*` stands for any run of characters. */
export function wildcard(pattern: string, value: string): boolean {
  if (!pattern.includes('*')) return pattern === value;
  let re = compiled.get(pattern);
  if (!re) {
    // Patterns come from one admin-written object: few, so the cache stays small; clear it if not.
    if (compiled.size > 1000) compiled.clear();
    const parts = pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
    re = new RegExp(`^${parts.join('.*')}$`);
    compiled.set(pattern, re);
  }
  return re.test(value);
}

export const matchesAny = (patterns: readonly string[], value: string) =>
  patterns.some((p) => wildcard(p, value));

/**
 * Why a namespace is reserved for the cluster (a reserved name, or the not-for-tenants label), or
 * undefined when it is not. The one rule the namespace policy and the organization RBAC controller share.
 */
export function reservedFor(
  config: EffectiveConfig,
  namespace: { metadata: { name?: string; labels?: Record<string, string> } },
): string | undefined {
  const name = namespace.metadata.name ?? '';
  const pattern = config.reservedNamespaces.find((p) => wildcard(p, name));
  if (pattern !== undefined) return `pattern "${pattern}"`;
  if (namespace.metadata.labels?.[notForTenantsLabel] === 'true') return `label ${notForTenantsLabel}=true`;
  return undefined;
}

/** Admission check for TenancyConfig: unknown keys are mistakes, and mistakes are rejected loudly. */
export function unknownConfigKeys(spec: Record<string, unknown> | undefined): string[] {
  return Object.keys(spec ?? {}).filter((k) => !(tenancyConfigKeys as readonly string[]).includes(k));
}
