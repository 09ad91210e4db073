// Organization RBAC: in every namespace of an organization, a RoleBinding per configured ClusterRole
// (default `admin`) for the organization's members. A binding tenantkit created keeps following the
// membership; once an organization takes it over (removes the managed-by label) it is left alone,
// unless marked `tenancy.tenantkit.io/uninitialized: "true"`. Namespaces labelled
// `tenancy.tenantkit.io/skip-organization-rbac: "true"` are skipped. A namespace reserved for the cluster
// (a reserved name, or labelled `tenancy.tenantkit.io/not-for-tenants: "true"`) never gets tenants bound,
// whatever its organization label says (an admin's slip or a disabled webhook must not make a tenant admin
// of kube-system), and loses the bindings tenantkit made there before.
import { createHash } from 'node:crypto';
import { type Organization, OrganizationCrd, TenancyConfigCrd } from '../../crds/tenancy.ts';
import { isAlreadyExists } from '../../kube/client.ts';
import {
  generationChanged,
  type ReconcileContext,
  type ReconcileResult,
  ReconcilerOf,
} from '../../kube/controller.ts';
import { semanticEqual } from '../../kube/equality.ts';
import { ByNamespace, type Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import {
  type ConfigSource,
  type Directory,
  isTerminating,
  organizationAnnotation,
  tenancyManagedBy,
} from '../model.ts';
import { reservedFor } from '../policy/config.ts';
import { memberSubjects } from '../policy/members.ts';

export const skipLabel = 'tenancy.tenantkit.io/skip-organization-rbac';
export const uninitializedAnnotation = 'tenancy.tenantkit.io/uninitialized';
const managedBy = tenancyManagedBy;
const fieldManager = tenancyManagedBy;

interface RoleBinding extends KubeObject {
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects?: { apiGroup?: string; kind: string; name: string }[];
}

export const organizationBindingName = (clusterRole: string) =>
  `organization-${clusterRole.replace(/[^a-z0-9-]/g, '-').slice(0, 40)}-${createHash('sha256').update(clusterRole).digest('hex').slice(0, 6)}`;

type Subject = ReturnType<typeof memberSubjects>[number];

interface Sources {
  organizations: Informer<Organization>;
  /** Only the RoleBindings this controller made (its managed-by label). */
  bindings: Informer<RoleBinding>;
  directory: Directory;
  config: ConfigSource;
}

export function registerOrgRbacController(
  manager: Manager,
  config: ConfigSource,
  directory: Directory,
): void {
  const organizations = manager.informer<Organization>(OrganizationCrd.type);
  const bindings = manager.informer<RoleBinding>({
    ...Resources.roleBindings,
    labelSelector: `app.kubernetes.io/managed-by=${managedBy}`,
  });

  manager
    .controller('organization-rbac')
    .for(Resources.namespaces)
    // Its members are in spec; its status (rewritten on every namespace it gains) does not concern the
    // bindings of all its namespaces.
    .watches(
      OrganizationCrd.type,
      (org) => directory.organizationNamespaces(org.metadata.name!, config().organizationLabel),
      { predicate: generationChanged },
    )
    .watches(bindings.type, (b) => (b.metadata.namespace ? [b.metadata.namespace] : []))
    // Reserved names are configuration: a namespace they come to cover loses its bindings at once.
    .watches(TenancyConfigCrd.type, () => [...new Set(bindings.list().map((b) => b.metadata.namespace!))], {
      predicate: generationChanged,
    })
    // Namespaces are independent of each other: a burst of new ones is worked through four at a time.
    .concurrency(4)
    .complete(new OrgRbacReconciler({ organizations, bindings, directory, config }));
}

/** One namespace: its organization's members bound by each configured ClusterRole, or none if reserved. */
export class OrgRbacReconciler extends ReconcilerOf<Sources> {
  override async reconcile(name: string, ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const ns = this.from.directory.namespace(name);
    const config = this.from.config();
    const orgName = ns?.metadata.labels?.[config.organizationLabel];
    if (ns && !isTerminating(ns) && reservedFor(config, ns)) {
      await this.removeManagedBindings(ctx, ns, reservedFor(config, ns)!);
      return undefined;
    }
    if (!ns || isTerminating(ns) || !orgName || ns.metadata.labels?.[skipLabel] === 'true') return undefined;
    const organization = this.from.organizations.get(orgName);
    if (!organization) return undefined;
    const subjects = memberSubjects(organization);
    for (const role of config.defaultOrganizationClusterRoles) {
      await this.bindRole(ctx, ns, orgName, role, subjects);
    }
    return undefined;
  }

  /** Deletes the RoleBindings tenantkit made in a namespace reserved for the cluster, with an Event each. */
  private async removeManagedBindings(ctx: ReconcileContext, ns: KubeObject, why: string): Promise<void> {
    for (const binding of this.from.bindings.byIndex(ByNamespace, ns.metadata.name!)) {
      await ctx.client.delete(Resources.roleBindings, binding.metadata.name!, ns.metadata.name);
      ctx.events.record(
        ns,
        'Warning',
        'OrganizationAccessRemoved',
        'Reconcile',
        `RoleBinding ${binding.metadata.name} removed: namespace ${ns.metadata.name} is reserved for the cluster (${why}) and never gets organization access; a cluster admin removes the reservation to give it to tenants`,
      );
    }
  }

  /** The binding of one ClusterRole to the members: created, kept following them, or adopted if marked. */
  private async bindRole(
    ctx: ReconcileContext,
    ns: KubeObject,
    orgName: string,
    role: string,
    subjects: Subject[],
  ): Promise<void> {
    const { client, events } = ctx;
    const name = ns.metadata.name!;
    const bindingName = organizationBindingName(role);
    const desired = desiredBinding(name, bindingName, orgName, role, subjects);
    const cached = this.from.bindings.get(`${name}/${bindingName}`);
    if (cached) {
      if (
        semanticEqual(cached.subjects ?? [], subjects) &&
        cached.metadata.annotations?.[uninitializedAnnotation] !== 'true'
      )
        return;
      await client.apply(Resources.roleBindings, desired, { fieldManager, force: true });
      events.record(
        ns,
        'Normal',
        'OrganizationAccessUpdated',
        'Reconcile',
        `RoleBinding ${bindingName} follows the members of ${orgName}`,
      );
      return;
    }
    try {
      await client.create(Resources.roleBindings, desired, { fieldManager });
      events.record(
        ns,
        'Normal',
        'OrganizationAccessGranted',
        'Reconcile',
        `members of ${orgName} get ClusterRole ${role} here`,
      );
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      // Not ours (the organization took it over): adopt it only when explicitly marked uninitialized.
      const existing = await client.get<RoleBinding>(Resources.roleBindings, bindingName, name);
      if (existing?.metadata.annotations?.[uninitializedAnnotation] === 'true') {
        await client.apply(Resources.roleBindings, desired, { fieldManager, force: true });
      }
    }
  }
}

function desiredBinding(
  namespace: string,
  name: string,
  orgName: string,
  role: string,
  subjects: Subject[],
): RoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: {
      name,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': managedBy },
      annotations: { [organizationAnnotation]: orgName },
    },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects,
  };
}
