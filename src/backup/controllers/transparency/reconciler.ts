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
import type { NonAdminBackupConfig } from '../../../crds/backup.ts';
import { VeleroResources } from '../../../crds/velero.ts';
import { isAlreadyExists } from '../../../kube/client.ts';
import { generationChanged, type ReconcileContext, ReconcilerOf } from '../../../kube/controller.ts';
import { stableJson } from '../../../kube/equality.ts';
import { ByNamespace, type Informer } from '../../../kube/informer.ts';
import type { Manager } from '../../../kube/manager.ts';
import { type KubeObject, Resources, type ResourceType } from '../../../kube/resources.ts';
import { keepFields } from '../../../kube/slim.ts';
import { Annotations, isManaged, Labels, TenantNamespaceLabel } from '../../model.ts';
import { configType, currentPolicy } from '../../policy/config.ts';
import { defaultLocationOf, type Location, type NamespaceLike, ownerNow } from '../../velero/ownership.ts';
import { ManagedTypes, managedCache } from '../caches.ts';

/** Field manager of the writes, and the managed-by value on the Roles/RoleBindings this controller makes. */
export const TransparencyManager = 'tenantkit-backup-view';
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
export function viewerOf(
  backup: Backup,
  location: Bsl | undefined,
  namespace: (name: string) => NamespaceLike | undefined,
): string | undefined {
  if (tenantLocationNamespace(location)) return tenantLocationNamespace(location);
  if (location?.metadata.labels?.[Labels.nabslUuid] !== undefined) return undefined;
  if (locationOf(backup) !== '' && !location) return undefined;
  if (!isManaged(backup)) return undefined;
  const origins = backupOrigin(backup);
  if (origins.length !== 1) return undefined;
  // The namespace of that name only while it is the instance or organization recorded (not a namesake).
  const claimed = { namespace: origins[0]!, via: 'tenantkit-records', location: '' } as const;
  return ownerNow(claimed, backup, namespace).namespace;
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

/**
 * The RoleBindings that make their subjects administer a namespace, with their subjects and roleRef only.
 * A binding's roleRef cannot change, so one that binds another role never needs to be cached: in a big
 * cluster most RoleBindings (view, app-specific roles) are not kept at all.
 */
const administeringBindings: ResourceType = {
  ...Resources.roleBindings,
  view: {
    name: 'administering',
    keep: (b) => administers(b as RoleBinding),
    project: keepFields(['roleRef', 'subjects']),
  },
};

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

/** What the transparency controller reads, wired by registerTransparencyController. */
export interface TransparencySources {
  /** Every Backup (shared with the ownership rules): one in a tenant's bucket may lack tenantkit's labels. */
  backups: Informer<Backup>;
  bsls: Informer<Bsl>;
  restores: Informer<KubeObject>;
  bindings: Informer<RoleBinding>;
  roles: Informer<Role>;
  views: Informer<RoleBinding>;
  configs: Informer<NonAdminBackupConfig>;
  namespaces: Informer<KubeObject & NamespaceLike>;
}

/** What one tenant namespace may see in Velero's namespace, and who may see it. */
interface View {
  namespace: string;
  veleroNs: string;
  name: string;
  rules: Rule[];
  subjects: Subject[];
}

export function registerTransparencyController(manager: Manager): void {
  const sources: TransparencySources = {
    backups: manager.informer<Backup>(VeleroResources.backups),
    bsls: manager.informer<Bsl>(VeleroResources.backupStorageLocations),
    restores: managedCache<KubeObject>(manager, 'restores'),
    bindings: manager.informer<RoleBinding>(administeringBindings),
    roles: manager.informer<Role>(viewRoles),
    views: manager.informer<RoleBinding>(viewBindings),
    configs: manager.informer<NonAdminBackupConfig>(configType),
    namespaces: manager.informer<KubeObject & NamespaceLike>(Resources.namespaces),
  };
  const { backups, restores, roles, views } = sources;
  backups.addIndex(ByOrigin, backupOrigin);
  backups.addIndex(ByLocation, locationKeyOf);
  restores.addIndex(ByOrigin, restoreOrigin);
  roles.addIndex(ByTenant, tenantOf);
  views.addIndex(ByTenant, tenantOf);
  const reconciler = new TransparencyReconciler(sources);
  /** A location's namespace and every namespace its Backups name (ownership moves with the location). */
  const locationKeys = (l: KubeObject) => {
    const ns = tenantLocationNamespace(l as Bsl);
    const onIt = backups.byIndex(ByLocation, `${l.metadata.namespace}/${l.metadata.name}`);
    return [...new Set([...(ns ? [ns] : []), ...onIt.flatMap((b) => reconciler.backupKeys(b))])];
  };
  /** Every namespace that has, or had, something to see. */
  const allTenants = () => [
    ...new Set([
      ...backups.list().flatMap((b) => reconciler.backupKeys(b)),
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
    .watches(VeleroResources.backups, (b) => reconciler.backupKeys(b))
    .watches(VeleroResources.backupStorageLocations, locationKeys)
    .watches(ManagedTypes.restores, restoreOrigin)
    // Who administers a namespace changes with its RoleBindings.
    .watches(administeringBindings, (b) => (b.metadata.namespace ? [b.metadata.namespace] : []))
    // Our own objects: repaired when edited or deleted by someone else.
    .watches(viewRoles, tenantOf)
    .watches(viewBindings, tenantOf)
    // Velero's namespace may change live: everything moves, the old namespace is cleaned up.
    .watches(configType, allTenants, { predicate: generationChanged })
    .concurrency(2)
    .complete(reconciler);
}

export class TransparencyReconciler extends ReconcilerOf<TransparencySources> {
  /** Keys are tenant namespaces. Grant first (Role, then its binding), then revoke what is no longer wanted. */
  override async reconcile(namespace: string, ctx: ReconcileContext): Promise<undefined> {
    const view = this.read(namespace);
    const wantRole = view.rules.length > 0;
    const wantBinding = wantRole && view.subjects.length > 0;
    if (wantRole) await this.grantRole(ctx, view);
    if (wantBinding) await this.grantBinding(ctx, view);
    await this.revoke(ctx, view, wantRole, wantBinding);
    return undefined;
  }

  /** Namespaces to revisit when a Backup changes: whoever may read it now, and whoever its annotations name. */
  backupKeys(b: KubeObject): string[] {
    const now = this.viewer(b as Backup);
    return [...new Set([...backupOrigin(b), ...(now ? [now] : [])])];
  }

  private viewer(b: Backup): string | undefined {
    const { bsls } = this.from;
    const named = locationOf(b);
    const location = named
      ? bsls.get(`${b.metadata.namespace}/${named}`)
      : defaultLocationOf(bsls.byIndex(ByNamespace, b.metadata.namespace!));
    return viewerOf(b, location, (name) => this.from.namespaces.get(name));
  }

  /**
   * The names the namespace may `get`: Backups whose annotations name it and those on its own locations,
   * each kept only if it is the namespace's by viewerOf; Restores made for it. And who administers it.
   */
  private read(namespace: string): View {
    const { backups, bsls, restores, bindings, configs } = this.from;
    const veleroNs = currentPolicy(configs).veleroNamespace;
    const inVelero = (o: KubeObject) => o.metadata.namespace === veleroNs;
    const own = bsls
      .byIndex(ByNamespace, veleroNs)
      .filter((l) => tenantLocationNamespace(l) === namespace)
      .flatMap((l) => backups.byIndex(ByLocation, `${veleroNs}/${l.metadata.name}`));
    const backupNames = [
      ...new Set(
        [...backups.byIndex(ByOrigin, namespace), ...own]
          .filter((b) => inVelero(b) && this.viewer(b) === namespace)
          .map((o) => o.metadata.name!),
      ),
    ];
    // Velero Restores are made for a NonAdminRestore of the namespace (never synced from a bucket): one
    // older than the namespace was made for an earlier namespace of that name.
    const since = Date.parse(this.from.namespaces.get(namespace)?.metadata.creationTimestamp ?? '');
    const restoreNames = restores
      .byIndex(ByOrigin, namespace)
      .filter((o) => inVelero(o) && Date.parse(o.metadata.creationTimestamp ?? '') >= since)
      .map((o) => o.metadata.name!);
    return {
      namespace,
      veleroNs,
      name: viewObjectName(namespace),
      rules: viewRules(backupNames, restoreNames),
      subjects: administeringSubjects(namespace, bindings.byIndex(ByNamespace, namespace)),
    };
  }

  private meta({ name, veleroNs, namespace }: View) {
    return {
      name,
      namespace: veleroNs,
      labels: { [Labels.managedBy]: TransparencyManager, [TenantNamespaceLabel]: namespace },
    };
  }

  private async grantRole(ctx: ReconcileContext, view: View): Promise<void> {
    const desired: Role = {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'Role',
      metadata: this.meta(view),
      rules: view.rules,
    };
    const cached = this.from.roles.get(`${view.veleroNs}/${view.name}`);
    await ensure(ctx, Resources.roles, cached, desired, (a) => sameJson(normalize(a.rules), view.rules));
  }

  private async grantBinding(ctx: ReconcileContext, view: View): Promise<void> {
    const desired: RoleBinding = {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'RoleBinding',
      metadata: this.meta(view),
      roleRef: { apiGroup: rbacGroup, kind: 'Role', name: view.name },
      subjects: view.subjects,
    };
    const cached = this.from.views.get(`${view.veleroNs}/${view.name}`);
    await ensure(ctx, Resources.roleBindings, cached, desired, (a) =>
      sameJson(a.subjects ?? [], view.subjects),
    );
  }

  /** Removes what is no longer wanted, or stands elsewhere (Velero's namespace moved): binding first. */
  private async revoke(
    ctx: ReconcileContext,
    view: View,
    wantRole: boolean,
    wantBinding: boolean,
  ): Promise<void> {
    const stale = (o: KubeObject, wanted: boolean) =>
      !wanted || o.metadata.namespace !== view.veleroNs || o.metadata.name !== view.name;
    for (const b of this.from.views.byIndex(ByTenant, view.namespace)) {
      if (stale(b, wantBinding)) await remove(ctx, Resources.roleBindings, b);
    }
    for (const r of this.from.roles.byIndex(ByTenant, view.namespace)) {
      if (stale(r, wantRole)) await remove(ctx, Resources.roles, r);
    }
  }
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
