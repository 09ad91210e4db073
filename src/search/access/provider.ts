// The runtime side of search authorization: RBAC informers (shared with the manager when there is one),
// bindings indexed by subject, and a cache of access sets keyed by the whole user info. Any change to a
// Role, ClusterRole, binding or ManagedCluster empties the cache, so the next call recomputes from the
// state the watch just delivered: a revoked permission is gone from the next answer.
import type { Logger } from 'pino';
import type { KubeClient } from '../../kube/client.ts';
import { Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type CacheView, type KubeObject, Resources, type ResourceType } from '../../kube/resources.ts';
import { keepFields } from '../../kube/slim.ts';
import type { AccessProvider, AccessSet, SearchUser } from '../model.ts';
import { computeAccessSet, type RbacSnapshot } from './compute.ts';
import { ManagedClusterCrdName, ManagedClusterTracker } from './managed-clusters.ts';
import { bindingSubjectKeys, effectiveGroups, type RbacBinding, type RbacRole } from './rbac.ts';

/** The informer index of bindings by subject (`user:<name>`, `group:<name>`). */
export const BySubject = 'search-access/subject';

export interface RbacAccessProviderOptions {
  client: KubeClient;
  /** Share this manager's informers (it runs them); without one the provider runs its own. */
  manager?: Manager;
  logger?: Logger;
  /** Access sets kept at most (least recently used go first); default 10,000. */
  maxCachedUsers?: number;
}

/** The cache key: every field of the user info, so no two different users ever share an entry. */
export function userCacheKey(user: SearchUser): string {
  const extra = Object.entries(user.extra ?? {})
    .map(([k, v]) => [k, [...v].sort()] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([user.username, user.uid ?? '', [...user.groups].sort(), extra]);
}

/** Access sets read a role's rules and a binding's roleRef and subjects; nothing else is cached. */
const ruleView: CacheView = { name: 'rules', project: keepFields(['rules']) };
const bindingView: CacheView = { name: 'grants', project: keepFields(['roleRef', 'subjects']) };

/** The RBAC types as the provider caches them (a manager shares these informers, not the whole objects'). */
export const AccessTypes = {
  roles: { ...Resources.roles, view: ruleView },
  clusterRoles: { ...Resources.clusterRoles, view: ruleView },
  roleBindings: { ...Resources.roleBindings, view: bindingView },
  clusterRoleBindings: { ...Resources.clusterRoleBindings, view: bindingView },
} satisfies Record<string, ResourceType>;

export class RbacAccessProvider implements AccessProvider {
  private readonly ownInformers: Informer<KubeObject>[] = [];
  private readonly roles: Informer<RbacRole>;
  private readonly clusterRoles: Informer<RbacRole>;
  private readonly roleBindings: Informer<RbacBinding>;
  private readonly clusterRoleBindings: Informer<RbacBinding>;
  private readonly managed: ManagedClusterTracker;
  private readonly cache = new Map<string, AccessSet>();
  private readonly maxCached: number;
  private readonly listeners = new Set<() => void>();
  private notifyScheduled = false;
  private changes = 0;
  private readonly snapshot: RbacSnapshot;

  constructor(options: RbacAccessProviderOptions) {
    const { client, manager, logger } = options;
    this.maxCached = options.maxCachedUsers ?? 10_000;
    const informer = <T extends KubeObject>(type: ResourceType): Informer<T> => {
      if (manager) return manager.informer<T>(type);
      const own = new Informer<KubeObject>(client, type, {
        ...(logger ? { logger } : {}),
        ...(type.fieldSelector ? { fieldSelector: type.fieldSelector } : {}),
        ...(type.view ? { view: type.view } : {}),
      });
      this.ownInformers.push(own);
      return own as unknown as Informer<T>;
    };
    this.roles = informer<RbacRole>(AccessTypes.roles);
    this.clusterRoles = informer<RbacRole>(AccessTypes.clusterRoles);
    this.roleBindings = informer<RbacBinding>(AccessTypes.roleBindings);
    this.clusterRoleBindings = informer<RbacBinding>(AccessTypes.clusterRoleBindings);
    this.roleBindings.addIndex(BySubject, bindingSubjectKeys);
    this.clusterRoleBindings.addIndex(BySubject, bindingSubjectKeys);
    const invalidate = () => this.invalidate();
    const handlers = { onAdd: invalidate, onUpdate: invalidate, onDelete: invalidate };
    this.roles.addHandlers(handlers);
    this.clusterRoles.addHandlers(handlers);
    this.roleBindings.addHandlers(handlers);
    this.clusterRoleBindings.addHandlers(handlers);
    this.managed = new ManagedClusterTracker(
      client,
      // Only the ManagedCluster CRD: a cluster's CRDs with their schemas can take hundreds of MiB.
      informer({
        ...Resources.customResourceDefinitions,
        fieldSelector: `metadata.name=${ManagedClusterCrdName}`,
      }),
      invalidate,
      logger,
    );

    const bindingsFor = (from: Informer<RbacBinding>, keys: readonly string[]) => {
      const found = new Set<RbacBinding>();
      for (const key of keys) for (const b of from.byIndex(BySubject, key)) found.add(b);
      return found;
    };
    this.snapshot = {
      clusterRoleBindingsFor: (keys) => bindingsFor(this.clusterRoleBindings, keys),
      roleBindingsFor: (keys) => bindingsFor(this.roleBindings, keys),
      role: (namespace, name) => this.roles.get(`${namespace}/${name}`),
      clusterRole: (name) => this.clusterRoles.get(name),
      managedClusters: () => this.managed.names(),
    };
  }

  /** Runs the provider's own informers (if it has them) and the ManagedCluster tracking until `signal` aborts. */
  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([...this.ownInformers.map((i) => i.run(signal)), this.managed.run(signal)]);
  }

  /** Resolves once every cache the access sets are computed from is filled. */
  async waitForSync(): Promise<void> {
    await Promise.all([
      this.roles.waitForSync(),
      this.clusterRoles.waitForSync(),
      this.roleBindings.waitForSync(),
      this.clusterRoleBindings.waitForSync(),
      this.managed.waitForSync(),
    ]);
  }

  hasSynced(): boolean {
    return [this.roles, this.clusterRoles, this.roleBindings, this.clusterRoleBindings].every((i) =>
      i.hasSynced(),
    );
  }

  /** Counts the RBAC and ManagedCluster changes seen; a new value means cached sets were dropped. */
  get generation(): number {
    return this.changes;
  }

  forUser(user: SearchUser): AccessSet {
    const key = userCacheKey(user);
    const cached = this.cache.get(key);
    if (cached) {
      // Re-insert: Map order is then least recently used first.
      this.cache.delete(key);
      this.cache.set(key, cached);
      return cached;
    }
    const set = computeAccessSet(this.snapshot, { ...user, groups: effectiveGroups(user) });
    if (this.cache.size >= this.maxCached) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, set);
    return set;
  }

  /** Calls `listener` after RBAC or managed clusters changed (once per burst); returns an unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private invalidate(): void {
    this.changes++;
    this.cache.clear();
    if (this.notifyScheduled || this.listeners.size === 0) return;
    this.notifyScheduled = true;
    queueMicrotask(() => {
      this.notifyScheduled = false;
      for (const listener of this.listeners) listener();
    });
  }
}
