// The effective tenancy configuration: the TenancyConfig named "cluster" with defaults filled in.
// Read from the informer on every request, so an edit takes effect without a restart.
import {
  type Guardrails,
  type switchablePolicies,
  type TenancyConfig,
  TenancyConfigCrd,
  tenancyConfigKeys,
} from '../api/tenancy.ts';
import type { Informer } from '../kube/informer.ts';
import type { Manager } from '../kube/manager.ts';

export interface EffectiveConfig {
  organizationLabel: string;
  privilegedUsers: string[];
  privilegedGroups: string[];
  privilegedClusterRoles: string[];
  reservedNamespaces: string[];
  allowedLabels: string[];
  allowedAnnotations: string[];
  defaultOrganizationClusterRoles: string[];
  defaultNamespaceQuota: number;
  quotaNamespace: string;
  namespaceQuotaHoldSeconds: number;
  runOnceActiveDeadlineSeconds: number;
  runOnceActiveDeadlineMaxSeconds: number;
  runOnceActiveDeadlineAnnotation: string;
  defaultNodeSelector: Record<string, string>;
  nodeSelectorAnnotation: string;
  fairUseRatios: { nodeSelector?: Record<string, string>; memoryPerCpu: string }[];
  activeUsageProfile: string;
  disabledPolicies: string[];
  networkIsolation: NetworkIsolation;
  /** Every organization's guardrails unless its Organization sets the field (see guardrails.ts). */
  guardrails: Guardrails;
}

type Selector = NonNullable<NonNullable<TenancyConfig['spec']['networkIsolation']>['allowFrom']>[number];

export interface NetworkIsolation {
  enabled: boolean;
  priority: number;
  allowFrom: Selector[];
  organizations: { name: string; isolated?: boolean; allowFrom?: Selector[] }[];
}

export const defaults: EffectiveConfig = {
  organizationLabel: 'appuio.io/organization',
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

export type ConfigSource = () => EffectiveConfig;

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

export function configSource(manager: Manager, namespace: string): ConfigSource {
  const informer: Informer<TenancyConfig> = manager.informer(TenancyConfigCrd.type);
  // Worked out once per version of the object (the cache replaces it on every change), not per request.
  let last: { source: TenancyConfig | undefined; config: EffectiveConfig } | undefined;
  return () => {
    const source = informer.get('cluster');
    if (last?.source !== source || !last)
      last = { source, config: Object.freeze(effective(source, namespace)) };
    return last.config;
  };
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
 * Marks a namespace as the cluster's, not for tenants, whatever its name: tenants may not change it and
 * the organization RBAC controller never binds tenants there. Only privileged users may set or remove it
 * (tenantkit's own labels are never in a tenant's allowed labels).
 */
export const notForTenantsLabel = 'tenancy.tenantkit.io/not-for-tenants';

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
