// The contract between tenancy's parts (admission, controllers, policy, caches, the quota ledger): the
// effective configuration's shape, the readers of caches they share, and the labels, annotations and
// names tenantkit writes on tenants' objects.
import type { Guardrails, Organization, TenancyConfig, UsageProfile } from '../crds/tenancy.ts';
import type { UserInfo } from '../kube/access.ts';
import type { Informer } from '../kube/informer.ts';
import type { KubeObject } from '../kube/resources.ts';

/** The API group of tenancy's kinds (Organization, TenancyConfig, UsageProfile, TenantUser). */
export const tenancyGroup = 'tenancy.tenantkit.io';

// --- Configuration ---

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
  /** Every organization's guardrails unless its Organization sets the field (see policy/guardrails.ts). */
  guardrails: Guardrails;
}

type Selector = NonNullable<NonNullable<TenancyConfig['spec']['networkIsolation']>['allowFrom']>[number];

export interface NetworkIsolation {
  enabled: boolean;
  priority: number;
  allowFrom: Selector[];
  organizations: { name: string; isolated?: boolean; allowFrom?: Selector[] }[];
}

/** The effective configuration now (the TenancyConfig informer's, see caches/config.ts). */
export type ConfigSource = () => EffectiveConfig;

// --- Who asks, and the directory of organizations ---

/** Whether a user bypasses the namespace policies (admission/identity.ts answers it from caches). */
export type PrivilegeCheck = (user: UserInfo, config: EffectiveConfig) => boolean;

export interface Namespace extends KubeObject {
  status?: { phase?: string };
}

export const isTerminating = (ns: Namespace) =>
  Boolean(ns.metadata.deletionTimestamp) || ns.status?.phase === 'Terminating';

/** On OpenShift a user's default organization can also live on their User object, as this annotation. */
export const openshiftDefaultOrganizationAnnotation = 'appuio.io/default-organization';

/** Organizations, their members and users' default organizations, from caches (caches/directory.ts). */
export interface Directory {
  organization(name: string): Organization | undefined;
  /**
   * The organization from the cache, or from the API server when the cache has not seen it (one made a
   * moment ago): admission must not refuse a namespace for an organization that exists.
   */
  currentOrganization(name: string): Promise<Organization | undefined>;
  isMember(organization: Organization, user: UserInfo): boolean;
  defaultOrganization(username: string): string | undefined;
  namespace(name: string): Namespace | undefined;
  namespaces: Informer<Namespace>;
  /** Names of the namespaces labelled as belonging to `organization` (terminating ones included). */
  organizationNamespaces(organization: string, label: string): string[];
  /** The UsageProfile that applies to an organization: its own choice, else the active one. */
  profileFor(organization: Organization, active: string): UsageProfile | undefined;
}

// --- Labels, annotations and names ---

/**
 * Marks a namespace as the cluster's, not for tenants, whatever its name: tenants may not change it and
 * the organization RBAC controller never binds tenants there. Only privileged users may set or remove it
 * (tenantkit's own labels are never in a tenant's allowed labels).
 */
export const notForTenantsLabel = 'tenancy.tenantkit.io/not-for-tenants';

/**
 * The managed-by label value and field manager of what the organization controllers make: the members'
 * RoleBindings in its namespaces, its reader ClusterRole and binding, its AdminNetworkPolicy.
 */
export const tenancyManagedBy = 'tenantkit-tenancy';

/** On what tenantkit makes for an organization (bindings, quota parts, ledgers, its policy): whose it is. */
export const organizationAnnotation = 'tenancy.tenantkit.io/organization';

/** On ResourceQuotas and LimitRanges tenantkit manages in tenants' namespaces: tenants may not change them. */
export const reservedLabel = 'tenancy.tenantkit.io/reserved';

/** The managed-by label value of the ResourceQuotas that hold namespaces' parts of an organization's quota. */
export const quotaManagedBy = 'tenantkit-organization-quota';

/** The ResourceQuota that holds a namespace's part of its organization's quota. */
export const organizationQuotaName = 'organization-quota';
