// Organizations, as their members see them: each Organization's status says which namespaces it owns and
// how many it may own (the same rule the namespace policy enforces), and its members may read their own
// Organization (`kubectl get organization acme`, the console's organization page) through a ClusterRole
// limited to that one object by resourceNames, bound to exactly the members. Both RBAC objects are owned
// by the Organization, so deleting it removes them; a member removed from spec.members loses read access
// with the next reconcile.
import { type Organization, OrganizationCrd, TenancyConfigCrd, UsageProfileCrd } from '../../crds/tenancy.ts';
import { isNotFound } from '../../kube/client.ts';
import type { ReconcileContext, ReconcileResult } from '../../kube/controller.ts';
import { generationChanged, ReconcilerOf } from '../../kube/controller.ts';
import { ensureOwned } from '../../kube/ensure.ts';
import { semanticEqual } from '../../kube/equality.ts';
import type { Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, Resources, type ResourceType } from '../../kube/resources.ts';
import { StatusWriter } from '../../kube/status.ts';
import {
  type ConfigSource,
  type Directory,
  isTerminating,
  type Namespace,
  organizationAnnotation,
  tenancyManagedBy,
} from '../model.ts';
import { type ClassKind, classKinds, guardrailsOf, usableClasses } from '../policy/guardrails.ts';
import { memberSubjects } from '../policy/members.ts';
import { namespaceQuotaOf } from '../policy/namespace-quota.ts';
import {
  type AdminNetworkPolicy,
  adminNetworkPolicies,
  isolationOf,
  isolationPolicy,
  isolationPolicyName,
} from '../policy/network-isolation.ts';
import {
  ByQuotaOrganization,
  organizationQuotas,
  type QuotaOutcome,
  quotaOrganization,
  quotaOrganizationIndex,
  type ResourceQuota,
  shareQuota,
} from './quota-sharing.ts';

const managedBy = tenancyManagedBy;
const fieldManager = tenancyManagedBy;
const selector = `app.kubernetes.io/managed-by=${managedBy}`;
/** Namespaces listed in status (the count is always complete). */
const maxListed = 1000;

const ByListedNamespace = 'tenancy.status-namespace';
const listedNamespaces = (o: Organization) => o.status?.namespaces ?? [];

/** The ClusterRole (and ClusterRoleBinding) that let the members of `organization` read it. */
export const readerRoleName = (organization: string) => `tenantkit:organization:${organization}`;

interface ClusterRole extends KubeObject {
  rules?: { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }[];
}

interface ClusterRoleBinding extends KubeObject {
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects?: { apiGroup: string; kind: string; name: string }[];
}

type OrganizationStatus = NonNullable<Organization['status']>;

/** The NetworkIsolated condition: whether the organization's Pods are apart from other organizations'. */
interface Isolation {
  status: 'True' | 'False';
  reason: string;
  message: string;
  warn?: boolean;
}

interface Sources {
  organizations: Informer<Organization>;
  /** The cluster's classes, by kind, for the classes an organization may use. */
  classes: Record<ClassKind, Informer<KubeObject>>;
  quotas: Informer<ResourceQuota>;
  roles: Informer<ClusterRole>;
  bindings: Informer<ClusterRoleBinding>;
  directory: Directory;
  config: ConfigSource;
}

export function registerOrganizationController(
  manager: Manager,
  config: ConfigSource,
  directory: Directory,
): void {
  const organizations = manager.informer<Organization>(OrganizationCrd.type);
  const roles = manager.informer<ClusterRole>({ ...Resources.clusterRoles, labelSelector: selector });
  const bindings = manager.informer<ClusterRoleBinding>({
    ...Resources.clusterRoleBindings,
    labelSelector: selector,
  });
  const quotas = manager.informer<ResourceQuota>(organizationQuotas);
  quotas.addIndex(ByQuotaOrganization, quotaOrganizationIndex);
  const classTypes: Record<ClassKind, ResourceType> = {
    storageClasses: Resources.storageClasses,
    ingressClasses: Resources.ingressClasses,
    priorityClasses: Resources.priorityClasses,
    runtimeClasses: Resources.runtimeClasses,
  };
  const classes = Object.fromEntries(
    classKinds.map((k) => [k, manager.informer<KubeObject>(classTypes[k])]),
  ) as Record<ClassKind, Informer<KubeObject>>;
  organizations.addIndex(ByListedNamespace, listedNamespaces);
  // A namespace concerns the organization its label names now and any whose status still lists it (it
  // moved to another organization, or went away).
  const organizationsOf = (ns: KubeObject) => {
    const label = ns.metadata.labels?.[config().organizationLabel];
    const listing = organizations.byIndex(ByListedNamespace, ns.metadata.name!).map((o) => o.metadata.name!);
    return [...new Set([...(label ? [label] : []), ...listing])];
  };
  manager
    .controller('organization')
    .for(OrganizationCrd.type, generationChanged)
    .owns(roles.type)
    .owns(bindings.type)
    // The status lists up to 1,000 namespace names and every watcher of Organizations (both controller
    // replicas, the webhooks, the search collector) receives each write: a tenant creating namespaces
    // back to back gets one status write per second, not one per namespace.
    .watches(Resources.namespaces, organizationsOf, { predicate: namespaceMoved, atMostEveryMs: 1000 })
    // Its status changing (its own writes, mostly) goes through the same once-a-second gate: otherwise
    // each write would start a reconcile at once that lists the namespaces created since, and a burst
    // would get a write per reconcile again. A status edited by hand is still put right within a second.
    .watches(OrganizationCrd.type, (o) => [o.metadata.name!], { predicate: statusOnly, atMostEveryMs: 1000 })
    // Each namespace's part of the organization's quota: what it uses changes the split.
    .watches(
      organizationQuotas,
      (q) => {
        const owner = quotaOrganization(q);
        return owner ? [owner] : [];
      },
      { atMostEveryMs: 250 },
    )
    // A class made or removed changes what every organization may use.
    .watchesAll(classTypes.storageClasses)
    .watchesAll(classTypes.ingressClasses)
    .watchesAll(classTypes.priorityClasses)
    .watchesAll(classTypes.runtimeClasses)
    // Where the quota comes from when the Organization does not set it.
    .watchesAll(TenancyConfigCrd.type, generationChanged)
    .watchesAll(UsageProfileCrd.type, generationChanged)
    .complete(
      new OrganizationReconciler({ organizations, quotas, classes, roles, bindings, directory, config }),
    );
}

/** Only a namespace's arrival, departure, organization label or termination changes an organization. */
function namespaceMoved(previous: KubeObject | undefined, current: KubeObject): boolean {
  if (!previous) return true;
  return (
    !semanticEqual(previous.metadata.labels, current.metadata.labels) ||
    isTerminating(previous as Namespace) !== isTerminating(current as Namespace)
  );
}

/** An update that `generationChanged` lets pass to the primary watch is not repeated here. */
function statusOnly(previous: KubeObject | undefined, current: KubeObject): boolean {
  return previous !== undefined && !generationChanged(previous, current);
}

export class OrganizationReconciler extends ReconcilerOf<Sources> {
  override async reconcile(name: string, ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const organization = this.from.organizations.get(name);
    // Deleted: the garbage collector removes the role and binding through their ownerReferences.
    if (!organization || organization.metadata.deletionTimestamp) return undefined;
    const problem = await this.grantRead(ctx, organization);
    const isolation = await this.isolate(ctx, organization);
    const quota = await shareQuota(
      ctx.client,
      organization,
      this.ownedNamespaces(organization),
      this.from.quotas,
    );
    if (quota.state === 'retry') return { requeueAfterMs: 20 };
    await this.report(ctx, organization, problem, isolation, quota);
    return undefined;
  }

  /** The classes of each kind that exist and its guardrails let it use. */
  private usable(organization: Organization): NonNullable<OrganizationStatus['classes']> {
    const g = guardrailsOf(this.from.config(), organization.metadata.name!, organization);
    const names = (kind: ClassKind) => this.from.classes[kind].list().map((c) => c.metadata.name!);
    return Object.fromEntries(classKinds.map((k) => [k, usableClasses(g, k, names(k))]));
  }

  /** The namespaces it owns now (terminating ones not counted), sorted. */
  private ownedNamespaces(organization: Organization): string[] {
    const config = this.from.config();
    return this.from.directory
      .organizationNamespaces(organization.metadata.name!, config.organizationLabel)
      .filter((ns) => {
        const object = this.from.directory.namespace(ns);
        return object !== undefined && !isTerminating(object);
      })
      .sort();
  }

  /** Its AdminNetworkPolicy (created, kept up to date, or removed when the admin exempts it). */
  private async isolate(ctx: ReconcileContext, organization: Organization): Promise<Isolation> {
    const config = this.from.config();
    const name = isolationPolicyName(organization.metadata.name!);
    const wanted = isolationOf(config, organization.metadata.name!);
    const current = await ctx.client.get<AdminNetworkPolicy>(adminNetworkPolicies, name);
    const ours = current?.metadata.ownerReferences?.some((r) => r.uid === organization.metadata.uid);
    if (!wanted.isolated) {
      if (current && ours) await ctx.client.delete(adminNetworkPolicies, name);
      return {
        status: 'False',
        reason: 'NotIsolated',
        message:
          'the cluster admin does not isolate this organization on the network (TenancyConfig spec.networkIsolation): Pods of other organizations may connect to its Pods',
      };
    }
    const policy = isolationPolicy(config, organization, wanted.allowFrom);
    try {
      const result = await ensureOwned<AdminNetworkPolicy>({
        client: ctx.client,
        type: adminNetworkPolicies,
        desired: { ...policy, metadata: { ...policy.metadata, ...ownedBy(organization) } },
        cached: current,
        ownerUid: organization.metadata.uid!,
        upToDate: (actual, desired) => semanticEqual(actual.spec, desired.spec),
        fieldManager,
      });
      if (result.outcome === 'conflict')
        return { status: 'False', reason: 'NetworkPolicyConflict', message: result.message, warn: true };
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return {
        status: 'False',
        reason: 'AdminNetworkPolicyUnavailable',
        message:
          'this cluster serves no AdminNetworkPolicy (policy.networking.k8s.io/v1alpha1), so Pods of other organizations may connect to its Pods; a cluster admin installs a NetworkPolicy enforcer that implements it (kube-network-policies with --admin-network-policy)',
        warn: true,
      };
    }
    const allowed = wanted.allowFrom.length
      ? ` and from ${wanted.allowFrom.length} namespace selector(s) the cluster admin allows`
      : '';
    return {
      status: 'True',
      reason: 'Isolated',
      message: `its Pods accept connections only from its own namespaces${allowed} (AdminNetworkPolicy ${name}); its NetworkPolicies decide within that`,
    };
  }

  /** The members' read access to this one Organization; a conflict's message, if any. */
  private async grantRead(ctx: ReconcileContext, organization: Organization): Promise<string | undefined> {
    const name = readerRoleName(organization.metadata.name!);
    const role = await ensureOwned<ClusterRole>({
      client: ctx.client,
      type: Resources.clusterRoles,
      desired: desiredRole(organization, name),
      cached: this.from.roles.get(name),
      ownerUid: organization.metadata.uid!,
      upToDate: (actual, desired) => semanticEqual(actual.rules, desired.rules),
      fieldManager,
    });
    if (role.outcome === 'conflict') return role.message;
    const binding = await ensureOwned<ClusterRoleBinding>({
      client: ctx.client,
      type: Resources.clusterRoleBindings,
      desired: desiredBinding(organization, name),
      cached: this.from.bindings.get(name),
      ownerUid: organization.metadata.uid!,
      upToDate: (actual, desired) => semanticEqual(actual.subjects ?? [], desired.subjects ?? []),
      fieldManager,
    });
    return binding.outcome === 'conflict' ? binding.message : undefined;
  }

  /** The status: owned namespaces, the quota that applies, and whether members can read it. */
  private async report(
    ctx: ReconcileContext,
    organization: Organization,
    problem: string | undefined,
    isolation: Isolation,
    shared: QuotaOutcome,
  ): Promise<void> {
    const status = new StatusWriter<OrganizationStatus>(ctx, OrganizationCrd.type, organization);
    const config = this.from.config();
    const owned = this.ownedNamespaces(organization);
    const quota = namespaceQuotaOf(this.from.directory, organization, config);
    const ready = problem
      ? { status: 'False' as const, reason: 'ReaderRoleConflict', message: problem }
      : {
          status: 'True' as const,
          reason: 'Reconciled',
          message: `owns ${owned.length} of ${quota} namespaces; its members may read it`,
        };
    if (problem && organization.status?.conditions?.find((c) => c.type === 'Ready')?.message !== problem) {
      status.event({ type: 'Warning', reason: 'ReaderRoleConflict', action: 'Reconcile', message: problem });
    }
    const { warn, ...network } = isolation;
    const before = organization.status?.conditions?.find((c) => c.type === 'NetworkIsolated');
    if (before?.reason !== network.reason) {
      status.event({
        type: warn ? 'Warning' : 'Normal',
        reason: network.reason,
        action: 'Reconcile',
        message: network.message,
      });
    }
    const conditions = status.condition(status.current, { type: 'Ready', ...ready });
    await status.write({
      observedGeneration: organization.metadata.generation ?? 0,
      conditions: status.condition(
        { ...status.current, conditions },
        { type: 'NetworkIsolated', ...network },
      ),
      namespaceCount: owned.length,
      namespaceQuota: quota,
      namespaces: owned.slice(0, maxListed),
      namespaceLabel: config.organizationLabel,
      classes: this.usable(organization),
      readerRole: readerRoleName(organization.metadata.name!),
      // Removed (null in the merge patch) when the organization no longer has a quota.
      ...(shared.state === 'shared'
        ? { quota: shared.summary }
        : organization.status?.quota
          ? { quota: null as unknown as OrganizationStatus['quota'] }
          : {}),
    });
  }
}

function ownedBy(organization: Organization) {
  return {
    labels: { 'app.kubernetes.io/managed-by': managedBy },
    annotations: { [organizationAnnotation]: organization.metadata.name! },
    ownerReferences: [
      {
        apiVersion: `${OrganizationCrd.type.group}/${OrganizationCrd.type.version}`,
        kind: 'Organization',
        name: organization.metadata.name!,
        uid: organization.metadata.uid!,
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  };
}

/** Read access to this one Organization: `get` and `watch` by name, never `list` (others stay unseen). */
function desiredRole(organization: Organization, name: string): ClusterRole {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name, ...ownedBy(organization) },
    rules: [
      {
        apiGroups: [OrganizationCrd.type.group],
        resources: [OrganizationCrd.type.plural],
        resourceNames: [organization.metadata.name!],
        verbs: ['get', 'watch'],
      },
    ],
  };
}

function desiredBinding(organization: Organization, name: string): ClusterRoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, ...ownedBy(organization) },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: memberSubjects(organization),
  };
}
