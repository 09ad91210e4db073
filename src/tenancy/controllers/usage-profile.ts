// UsageProfile apply: every organization namespace holds the ResourceQuotas and LimitRanges of its
// organization's profile, labelled as reserved (so tenants cannot change them). A cluster admin can
// adjust one value per namespace with an annotation
//   resourcequota.tenantkit.io/<quota name>.<resource>: "<quantity>"
// (tenants cannot set it: it is not among their allowed annotations). An object of the same name that
// tenantkit did not create is left alone and reported as a conflict.
import {
  type Organization,
  OrganizationCrd,
  TenancyConfigCrd,
  type UsageProfile,
  UsageProfileCrd,
} from '../../crds/tenancy.ts';
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
import { type KubeObject, Resources, type ResourceType } from '../../kube/resources.ts';
import { type ConfigSource, type Directory, isTerminating, type Namespace, reservedLabel } from '../model.ts';
import { desiredObjects, managedBy, type ProfileKind, type SpecObject } from '../policy/usage-profile.ts';

const selector = `app.kubernetes.io/managed-by=${managedBy}`;
const fieldManager = 'tenantkit-usage-profile';

/** The informer of each kind a profile may hold (only the objects of ours). */
const kinds: Record<ProfileKind, ResourceType> = {
  ResourceQuota: { ...Resources.resourceQuotas, labelSelector: selector },
  LimitRange: { ...Resources.limitRanges, labelSelector: selector },
};

interface Sources {
  organizations: Informer<Organization>;
  profiles: Informer<UsageProfile>;
  /** The objects of ours, by kind (ResourceQuota, LimitRange). */
  informers: Record<ProfileKind, Informer<SpecObject>>;
  directory: Directory;
  config: ConfigSource;
}

export function registerUsageProfileController(
  manager: Manager,
  config: ConfigSource,
  directory: Directory,
): void {
  const organizations = manager.informer<Organization>(OrganizationCrd.type);
  const profiles = manager.informer<UsageProfile>(UsageProfileCrd.type);
  const informers = Object.fromEntries(
    Object.entries(kinds).map(([kind, type]) => [kind, manager.informer<SpecObject>(type)]),
  ) as Record<ProfileKind, Informer<SpecObject>>;
  const orgNamespaces = () =>
    directory.namespaces
      .list()
      .filter((n) => n.metadata.labels?.[config().organizationLabel])
      .map((n) => n.metadata.name!);
  const inNamespace = (o: KubeObject) => (o.metadata.namespace ? [o.metadata.namespace] : []);

  // A change of spec concerns every namespace of the organization (or of all organizations); a status
  // write does not (the organization controller rewrites its Organization's status on every namespace
  // it gains, which would reconcile all of that organization's namespaces each time).
  const builder = manager
    .controller('usage-profile')
    .for(Resources.namespaces)
    .watches(UsageProfileCrd.type, orgNamespaces, { predicate: generationChanged })
    .watches(TenancyConfigCrd.type, orgNamespaces, { predicate: generationChanged })
    .watches(
      OrganizationCrd.type,
      (org) => directory.organizationNamespaces(org.metadata.name!, config().organizationLabel),
      { predicate: generationChanged },
    );
  for (const type of Object.values(kinds)) builder.watches(type, inNamespace);
  // Namespaces are independent of each other: a burst of new ones is worked through four at a time.
  builder
    .concurrency(4)
    .complete(new UsageProfileReconciler({ organizations, profiles, informers, directory, config }));
}

/** One organization namespace: its profile's objects applied, and ours the profile no longer lists gone. */
export class UsageProfileReconciler extends ReconcilerOf<Sources> {
  override async reconcile(name: string, ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const ns = this.from.directory.namespace(name);
    const config = this.from.config();
    const orgName = ns?.metadata.labels?.[config.organizationLabel];
    if (!ns || isTerminating(ns) || !orgName) return undefined;
    const organization = this.from.organizations.get(orgName);
    const profileName = organization?.spec.usageProfile ?? config.activeUsageProfile;
    const profile = profileName ? this.from.profiles.get(profileName) : undefined;
    const { objects, problems } = profile ? desiredObjects(profile, ns) : { objects: [], problems: [] };
    for (const problem of problems)
      ctx.events.record(profile!, 'Warning', 'InvalidResource', 'Reconcile', problem);
    for (const object of objects) await this.applyObject(ctx, ns, object, profileName);
    await this.prune(ctx, name, new Set(objects.map((o) => `${o.kind}/${o.metadata.name}`)));
    return undefined;
  }

  /** One of the profile's objects, written unless up to date; an object of that name not ours is reported. */
  private async applyObject(
    ctx: ReconcileContext,
    ns: Namespace,
    object: SpecObject,
    profileName: string,
  ): Promise<void> {
    const name = ns.metadata.name!;
    const type = kinds[object.kind as ProfileKind];
    const cached = this.from.informers[object.kind as ProfileKind].get(`${name}/${object.metadata.name}`);
    if (
      cached &&
      semanticEqual(cached.spec, object.spec) &&
      cached.metadata.labels?.[reservedLabel] === 'true'
    )
      return;
    if (!cached) {
      // Not in our label-filtered cache: created now (one request, the usual case of a new namespace),
      // unless an object of that name exists, which may be someone else's (without our label).
      const created = await ctx.client.create(type, object, { fieldManager }).then(
        () => true,
        (err: unknown) => {
          if (isAlreadyExists(err)) return false;
          throw err;
        },
      );
      if (created) return;
      const existing = await ctx.client.get<SpecObject>(type, object.metadata.name!, name);
      if (existing && existing.metadata.labels?.['app.kubernetes.io/managed-by'] !== managedBy) {
        ctx.events.record(
          ns,
          'Warning',
          'UsageProfileConflict',
          'Reconcile',
          `${object.kind} ${object.metadata.name} exists and was not created by tenantkit; it is left as it is, so usage profile ${profileName} is not fully applied here. Delete or rename it to let tenantkit manage it.`,
        );
        return;
      }
    }
    await ctx.client.apply(type, object, { fieldManager, force: true });
  }

  /** Objects of ours that the profile no longer lists (or no profile applies any more). */
  private async prune(ctx: ReconcileContext, name: string, wanted: Set<string>): Promise<void> {
    for (const [kind, informer] of Object.entries(this.from.informers)) {
      for (const object of informer.byIndex(ByNamespace, name)) {
        if (!wanted.has(`${kind}/${object.metadata.name}`)) {
          await ctx.client.delete(kinds[kind as ProfileKind], object.metadata.name!, name, {
            preconditions: { uid: object.metadata.uid! },
          });
        }
      }
    }
  }
}
