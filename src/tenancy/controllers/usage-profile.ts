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
} from '../../api/tenancy.ts';
import { generationChanged } from '../../kube/controller.ts';
import { semanticEqual } from '../../kube/equality.ts';
import { ByNamespace } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, Resources, type ResourceType } from '../../kube/resources.ts';
import { type ConfigSource, type Directory, isTerminating, type Namespace, reservedLabel } from '../model.ts';

const managedBy = 'tenantkit-usage-profile';
const selector = `app.kubernetes.io/managed-by=${managedBy}`;
const fieldManager = 'tenantkit-usage-profile';
export const quotaOverridePrefix = 'resourcequota.tenantkit.io/';

interface SpecObject extends KubeObject {
  spec?: Record<string, unknown>;
}

const kinds: Record<string, ResourceType> = {
  ResourceQuota: { ...Resources.resourceQuotas, labelSelector: selector },
  LimitRange: { ...Resources.limitRanges, labelSelector: selector },
};

/** The profile's objects for one namespace, with the namespace's admin overrides applied. */
export function desiredObjects(
  profile: UsageProfile,
  ns: Namespace,
): { objects: SpecObject[]; problems: string[] } {
  const problems: string[] = [];
  const objects: SpecObject[] = [];
  for (const [name, template] of Object.entries(profile.spec.resources ?? {})) {
    const t = template as SpecObject;
    if (!t.kind || !Object.hasOwn(kinds, t.kind)) {
      problems.push(
        `resources.${name}: kind ${t.kind ?? '(none)'} is not supported; use ResourceQuota or LimitRange`,
      );
      continue;
    }
    const spec = structuredClone(t.spec ?? {});
    if (t.kind === 'ResourceQuota') {
      const hard = { ...((spec.hard as Record<string, string>) ?? {}) };
      for (const [key, value] of Object.entries(ns.metadata.annotations ?? {})) {
        if (key.startsWith(`${quotaOverridePrefix}${name}.`))
          hard[key.slice(quotaOverridePrefix.length + name.length + 1)] = value;
      }
      spec.hard = hard;
    }
    objects.push({
      apiVersion: 'v1',
      kind: t.kind,
      metadata: {
        name,
        namespace: ns.metadata.name!,
        labels: { [reservedLabel]: 'true', 'app.kubernetes.io/managed-by': managedBy },
        annotations: { 'tenancy.tenantkit.io/usage-profile': profile.metadata.name! },
      },
      spec,
    });
  }
  return { objects, problems };
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
  );
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
  builder.complete(async (name, { client, events }) => {
    const ns = directory.namespace(name);
    const cfg = config();
    const orgName = ns?.metadata.labels?.[cfg.organizationLabel];
    if (!ns || isTerminating(ns) || !orgName) return undefined;
    const organization = organizations.get(orgName);
    const profileName = organization?.spec.usageProfile ?? cfg.activeUsageProfile;
    const profile = profileName ? profiles.get(profileName) : undefined;
    const { objects, problems } = profile ? desiredObjects(profile, ns) : { objects: [], problems: [] };
    for (const problem of problems)
      events.record(profile!, 'Warning', 'InvalidResource', 'Reconcile', problem);

    const wanted = new Set(objects.map((o) => `${o.kind}/${o.metadata.name}`));
    for (const object of objects) {
      const type = kinds[object.kind!]!;
      const cached = informers[object.kind!]!.get(`${name}/${object.metadata.name}`);
      if (
        cached &&
        semanticEqual(cached.spec, object.spec) &&
        cached.metadata.labels?.[reservedLabel] === 'true'
      )
        continue;
      if (!cached) {
        // Not in our label-filtered cache: it may exist without our label (someone else's object).
        const existing = await client.get<SpecObject>(type, object.metadata.name!, name);
        if (existing && existing.metadata.labels?.['app.kubernetes.io/managed-by'] !== managedBy) {
          events.record(
            ns,
            'Warning',
            'UsageProfileConflict',
            'Reconcile',
            `${object.kind} ${object.metadata.name} exists and was not created by tenantkit; it is left as it is, so usage profile ${profileName} is not fully applied here. Delete or rename it to let tenantkit manage it.`,
          );
          continue;
        }
      }
      await client.apply(type, object, { fieldManager, force: true });
    }
    // Objects of ours that the profile no longer lists (or no profile applies any more).
    for (const [kind, informer] of Object.entries(informers)) {
      for (const object of informer.byIndex(ByNamespace, name)) {
        if (!wanted.has(`${kind}/${object.metadata.name}`)) {
          await client.delete(kinds[kind]!, object.metadata.name!, name, {
            preconditions: { uid: object.metadata.uid! },
          });
        }
      }
    }
    return undefined;
  });
}
