// Transparency: a tenant can read the Velero Backups and Restores tenantkit made for its namespace, and
// only those. For each tenant namespace with at least one such object, one Role in Velero's namespace
// grants `get` on exactly those names (resourceNames), and one RoleBinding gives it to the subjects that
// administer the tenant namespace. No list/watch (a list cannot be limited by resourceNames) and never
// create (DownloadRequests, or anything else, stay tenantkit's).
//
// Trust: a Backup on a tenant's own storage location (a BSL tenantkit made for a NonAdminBackupStorageLocation)
// belongs to that location's namespace, whatever the Backup's labels and annotations say: the tenant writes
// that bucket, and Velero's bucket sync copies its contents into the cluster (velero/ownership.ts). Any other
// Backup belongs to the namespace named in its origin annotation (a NonAdminBackup's, or a
// NonAdminSchedule's for a schedule run), and only if it carries tenantkit's managed-by label; a Restore to
// its NonAdminRestore's namespace, likewise. Those live in Velero's namespace and admins' buckets, where
// tenants cannot write, so nothing a tenant can write (its NABs' labels, annotations or specs, its
// bucket's contents) moves another namespace's backup into its Role. Keys are tenant namespace names;
// reconcile is level-triggered.
import { createHash } from 'node:crypto';
import type { NonAdminBackupConfig } from '../../api/backup.ts';
import { VeleroResources } from '../../api/velero.ts';
import { isAlreadyExists } from '../../kube/client.ts';
import { generationChanged, type ReconcileContext } from '../../kube/controller.ts';
import { stableJson } from '../../kube/equality.ts';
import { ByNamespace } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, Resources, type ResourceType } from '../../kube/resources.ts';
import { configType, currentPolicy } from '../policy/config.ts';
import { Annotations, Labels } from '../velero/names.ts';
import { defaultLocationOf, type Location } from '../velero/ownership.ts';
import { isManaged, ManagedTypes, managedCache } from './caches.ts';

/** Field manager of the writes, and the managed-by value on the Roles/RoleBindings this controller makes. */
export const TransparencyManager = 'tenantkit-backup-view';
/** The tenant namespace a Role/RoleBinding is for (a namespace name is a valid label value). */
export const TenantNamespaceLabel = 'backup.tenantkit.io/tenant-namespace';
/** ClusterRoles whose holders in a namespace manage its NonAdminBackups (the default roles aggregate there). */
export const AdministeringClusterRoles: readonly string[] = ['admin', 'edit'];

const ByOrigin = 'backup/origin-namespace';
const ByTenant = 'backup/tenant-namespace';
/** Every Backup (not only tenantkit's) by `namespace/location`. */
const ByLocation = 'backup/any-storage-location';
const rbacGroup = 'rbac.authorization.k8s.io';

const ours = `${Labels.managedBy}=${TransparencyManager}`;
const viewRoles: ResourceType = { ...Resources.roles, labelSelector: ours };
const viewBindings: ResourceType = { ...Resources.roleBindings, labelSelector: ours };

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}
interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}
type Role = KubeObject & { rules?: Rule[] };
type RoleBinding = KubeObject & {
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects?: Subject[];
};

/** `tenantkit-backup-view-<namespace>`, hashed to stay within 63 characters for long namespaces. */
export function viewObjectName(namespace: string): string {
  const prefix = 'tenantkit-backup-view-';
  const plain = `${prefix}${namespace}`;
  if (plain.length <= 63) return plain;
  const hash = createHash('sha256').update(namespace).digest('hex').slice(0, 10);
  return `${prefix}${namespace.slice(0, 63 - prefix.length - hash.length - 1).replace(/[-.]+$/, '')}-${hash}`;
}

type Backup = KubeObject & { spec?: { storageLocation?: unknown } };
type Bsl = KubeObject & Location;

/** The namespaces a Backup's annotations claim (a NonAdminBackup's, a NonAdminSchedule's): candidates only. */
const backupOrigin = (o: KubeObject) => {
  const a = o.metadata.annotations ?? {};
  return [...new Set([a[Annotations.nabNamespace], a[Annotations.nasNamespace]])].filter(
    (v): v is string => typeof v === 'string' && v !== '',
  );
};
const locationOf = (b: Backup) => (typeof b.spec?.storageLocation === 'string' ? b.spec.storageLocation : '');
const locationKeyOf = (b: Backup) => [`${b.metadata.namespace}/${locationOf(b)}`];
const tenantLocationNamespace = (l: Bsl | undefined) =>
  l?.metadata.labels?.[Labels.nabslUuid] !== undefined
    ? l?.metadata.annotations?.[Annotations.nabslNamespace] || undefined
    : undefined;

/**
 * The namespace whose admins may read `backup`, or undefined. On a tenant's own location: that location's
 * namespace only. On a location that does not exist: nobody. Otherwise (an admin's location, or none yet:
 * a Backup Velero has not processed) the one origin namespace tenantkit recorded on a Backup it labelled.
 */
export function viewerOf(backup: Backup, location: Bsl | undefined): string | undefined {
  if (tenantLocationNamespace(location)) return tenantLocationNamespace(location);
  if (location?.metadata.labels?.[Labels.nabslUuid] !== undefined) return undefined;
  if (locationOf(backup) !== '' && !location) return undefined;
  if (!isManaged(backup)) return undefined;
  const origins = backupOrigin(backup);
  return origins.length === 1 ? origins[0] : undefined;
}
const restoreOrigin = (o: KubeObject) => {
  const ns = o.metadata.annotations?.[Annotations.narNamespace];
  return ns ? [ns] : [];
};
const tenantOf = (o: KubeObject) => {
  const ns = o.metadata.labels?.[TenantNamespaceLabel];
  return ns ? [ns] : [];
};
const administers = (b: RoleBinding) =>
  b.roleRef?.kind === 'ClusterRole' &&
  b.roleRef.apiGroup === rbacGroup &&
  AdministeringClusterRoles.includes(b.roleRef.name);

/** The rules for a namespace's objects; a kind without names gets no rule (empty resourceNames means all). */
export function viewRules(backupNames: string[], restoreNames: string[]): Rule[] {
  const rule = (resource: string, names: string[]): Rule[] =>
    names.length === 0
      ? []
      : [
          {
            apiGroups: ['velero.io'],
            resources: [resource],
            verbs: ['get'],
            resourceNames: [...names].sort(),
          },
        ];
  return [...rule('backups', backupNames), ...rule('restores', restoreNames)];
}

/**
 * The subjects of the namespace's RoleBindings to an administering ClusterRole, sorted and deduplicated.
 * A ServiceAccount without a namespace means one in the binding's namespace: made explicit, since the
 * copy lives in Velero's namespace.
 */
export function administeringSubjects(namespace: string, bindings: RoleBinding[]): Subject[] {
  const byKey = new Map<string, Subject>();
  for (const b of bindings) {
    if (b.metadata.deletionTimestamp || !administers(b)) continue;
    for (const s of b.subjects ?? []) {
      const subject: Subject =
        s.kind === 'ServiceAccount'
          ? { kind: s.kind, name: s.name, namespace: s.namespace || namespace }
          : { kind: s.kind, name: s.name, apiGroup: s.apiGroup ?? rbacGroup };
      byKey.set(stableJson(subject), subject);
    }
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, s]) => s);
}

export function registerTransparencyController(manager: Manager): void {
  // Every Backup (shared with the ownership rules): one in a tenant's bucket may lack tenantkit's labels.
  const backups = manager.informer<Backup>(VeleroResources.backups);
  const bsls = manager.informer<Bsl>(VeleroResources.backupStorageLocations);
  const restores = managedCache<KubeObject>(manager, 'restores');
  const bindings = manager.informer<RoleBinding>(Resources.roleBindings);
  const roles = manager.informer<Role>(viewRoles);
  const views = manager.informer<RoleBinding>(viewBindings);
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  backups.addIndex(ByOrigin, backupOrigin);
  backups.addIndex(ByLocation, locationKeyOf);
  restores.addIndex(ByOrigin, restoreOrigin);
  const locationFor = (b: Backup) => {
    const named = locationOf(b);
    return named
      ? bsls.get(`${b.metadata.namespace}/${named}`)
      : defaultLocationOf(bsls.byIndex(ByNamespace, b.metadata.namespace!));
  };
  const viewer = (b: Backup) => viewerOf(b, locationFor(b));
  /** Namespaces to revisit when a Backup changes: whoever may read it now, and whoever its annotations name. */
  const backupKeys = (b: KubeObject) => {
    const now = viewer(b as Backup);
    return [...new Set([...backupOrigin(b), ...(now ? [now] : [])])];
  };
  /** A location's namespace and every namespace its Backups name (ownership moves with the location). */
  const locationKeys = (l: KubeObject) => {
    const ns = tenantLocationNamespace(l as Bsl);
    const onIt = backups.byIndex(ByLocation, `${l.metadata.namespace}/${l.metadata.name}`);
    return [...new Set([...(ns ? [ns] : []), ...onIt.flatMap(backupKeys)])];
  };
  roles.addIndex(ByTenant, tenantOf);
  views.addIndex(ByTenant, tenantOf);

  /** Every namespace that has, or had, something to see. */
  const allTenants = () => [
    ...new Set([
      ...backups.list().flatMap(backupKeys),
      ...restores.list().flatMap(restoreOrigin),
      ...roles.list().flatMap(tenantOf),
      ...views.list().flatMap(tenantOf),
    ]),
  ];

  manager
    .controller('backup-transparency')
    // Keys are namespace names; only creation and deletion of a namespace matter.
    .for(
      Resources.namespaces,
      (previous, current) =>
        !previous || previous.metadata.deletionTimestamp !== current.metadata.deletionTimestamp,
    )
    .watches(VeleroResources.backups, backupKeys)
    .watches(VeleroResources.backupStorageLocations, locationKeys)
    .watches(ManagedTypes.restores, restoreOrigin)
    // Who administers a namespace changes with its RoleBindings.
    .watches(Resources.roleBindings, (b) =>
      b.metadata.namespace && administers(b as RoleBinding) ? [b.metadata.namespace] : [],
    )
    // Our own objects: repaired when edited or deleted by someone else.
    .watches(viewRoles, tenantOf)
    .watches(viewBindings, tenantOf)
    // Velero's namespace may change live: everything moves, the old namespace is cleaned up.
    .watches(configType, allTenants, generationChanged)
    .concurrency(2)
    .complete(async (namespace, ctx) => {
      const veleroNs = currentPolicy(configs).veleroNamespace;
      const inVelero = (o: KubeObject) => o.metadata.namespace === veleroNs;
      // Candidates: Backups whose annotations name the namespace, and those on its own locations; each
      // then kept only if it is the namespace's by viewerOf.
      const own = bsls
        .byIndex(ByNamespace, veleroNs)
        .filter((l) => tenantLocationNamespace(l) === namespace)
        .flatMap((l) => backups.byIndex(ByLocation, `${veleroNs}/${l.metadata.name}`));
      const backupNames = [
        ...new Set(
          [...backups.byIndex(ByOrigin, namespace), ...own]
            .filter((b) => inVelero(b) && viewer(b) === namespace)
            .map((o) => o.metadata.name!),
        ),
      ];
      const restoreNames = restores
        .byIndex(ByOrigin, namespace)
        .filter(inVelero)
        .map((o) => o.metadata.name!);
      const rules = viewRules(backupNames, restoreNames);
      const subjects = administeringSubjects(namespace, bindings.byIndex(ByNamespace, namespace));
      const name = viewObjectName(namespace);
      const meta = {
        name,
        namespace: veleroNs,
        labels: { [Labels.managedBy]: TransparencyManager, [TenantNamespaceLabel]: namespace },
      };
      const wantRole = rules.length > 0;
      const wantBinding = wantRole && subjects.length > 0;

      // Grant first (Role, then its binding), then revoke what is no longer wanted (binding first).
      if (wantRole) {
        const desired: Role = { apiVersion: `${rbacGroup}/v1`, kind: 'Role', metadata: meta, rules };
        await ensure(ctx, Resources.roles, roles.get(`${veleroNs}/${name}`), desired, (a) =>
          sameJson(normalize(a.rules), rules),
        );
      }
      if (wantBinding) {
        const desired: RoleBinding = {
          apiVersion: `${rbacGroup}/v1`,
          kind: 'RoleBinding',
          metadata: meta,
          roleRef: { apiGroup: rbacGroup, kind: 'Role', name },
          subjects,
        };
        await ensure(ctx, Resources.roleBindings, views.get(`${veleroNs}/${name}`), desired, (a) =>
          sameJson(a.subjects ?? [], subjects),
        );
      }
      const stale = (o: KubeObject, wanted: boolean) =>
        !wanted || o.metadata.namespace !== veleroNs || o.metadata.name !== name;
      for (const b of views.byIndex(ByTenant, namespace)) {
        if (stale(b, wantBinding)) await remove(ctx, Resources.roleBindings, b);
      }
      for (const r of roles.byIndex(ByTenant, namespace)) {
        if (stale(r, wantRole)) await remove(ctx, Resources.roles, r);
      }
      return undefined;
    });
}

const sameJson = (a: unknown, b: unknown) => stableJson(a) === stableJson(b);
/** The API server drops empty lists; compare without them. */
const normalize = (rules: Rule[] | undefined): Rule[] =>
  (rules ?? []).map(
    (r) => Object.fromEntries(Object.entries(r).filter(([, v]) => !Array.isArray(v) || v.length > 0)) as Rule,
  );

/**
 * Create, or server-side apply when the cached copy differs. An object of that name that is not ours
 * (no managed-by label: an admin's) is left alone and reported.
 */
async function ensure<T extends KubeObject>(
  ctx: ReconcileContext,
  type: ResourceType,
  cached: T | undefined,
  desired: T,
  upToDate: (actual: T) => boolean,
): Promise<void> {
  const options = { fieldManager: TransparencyManager, force: true };
  if (!cached) {
    try {
      await ctx.client.create(type, desired, { fieldManager: TransparencyManager });
      return;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const live = await ctx.client.get<T>(type, desired.metadata.name!, desired.metadata.namespace);
      if (live?.metadata.labels?.[Labels.managedBy] !== TransparencyManager) {
        ctx.logger.warn(
          { kind: type.kind, name: desired.metadata.name, namespace: desired.metadata.namespace },
          'an object of this name exists and is not tenantkit-backup-view; left alone',
        );
        return;
      }
      if (upToDate(live)) return;
    }
  } else if (upToDate(cached)) return;
  await ctx.client.apply(type, desired, options);
}

async function remove(ctx: ReconcileContext, type: ResourceType, o: KubeObject): Promise<void> {
  // A missing object counts as removed; the uid precondition never deletes a newer object of that name.
  await ctx.client.delete(type, o.metadata.name!, o.metadata.namespace, {
    preconditions: { uid: o.metadata.uid! },
  });
}
