// Computes one user's AccessSet from a snapshot of RBAC, touching only the bindings that name the user
// (or one of their groups): the snapshot finds them by subject index, and what a role grants is worked
// out once per role version and shared by every user and namespace bound to it.
import { createHash } from 'node:crypto';
import { type AccessSet, HubCluster, type ResourceGrant, type SearchUser } from '../model.ts';
import {
  effectiveGroups,
  PrivilegedGroup,
  type RbacBinding,
  type RbacRole,
  type RoleLookup,
  referencedRole,
  ruleAllows,
  subjectApplies,
  userSubjectKeys,
} from './rbac.ts';
import {
  canonicalRights,
  mergeRights,
  type Rights,
  rightsBeyond,
  rightsOfRules,
  rightsToGrants,
} from './rights.ts';
import {
  ManagedClusterViewGroup,
  ManagedClusterViewResource,
  ManagedClusterViewVerb,
  SearchApiGroup,
  SearchResource,
  SearchVerb,
} from './search-api.ts';

/** The RBAC state an access set is computed from (informer caches at runtime, plain arrays in tests). */
export interface RbacSnapshot extends RoleLookup {
  /** ClusterRoleBindings with a subject under one of these keys (see bindingSubjectKeys). */
  clusterRoleBindingsFor(keys: readonly string[]): Iterable<RbacBinding>;
  /** RoleBindings with a subject under one of these keys. */
  roleBindingsFor(keys: readonly string[]): Iterable<RbacBinding>;
  /** Names of the ManagedClusters (empty when the API is not served). */
  managedClusters(): ReadonlySet<string>;
}

/** What one role version grants, worked out once. */
interface RoleSummary {
  id: number;
  rights: Rights;
  mayUseSearch: boolean;
  mayViewClusters: boolean;
}

// Keyed by the role object itself: informers replace the object on every change, so a stale summary is
// never found again and is garbage-collected with its object. Roles with equal rules (the same Role
// stamped into many namespaces) share one summary through the second map, which is bounded.
const summaries = new WeakMap<RbacRole, RoleSummary>();
const summariesByRules = new Map<string, RoleSummary>();
const maxSummariesByRules = 10_000;
let nextSummaryId = 0;

const emptyRole: RbacRole = { metadata: {}, rules: [] };

function summarize(role: RbacRole): RoleSummary {
  let summary = summaries.get(role);
  if (summary) return summary;
  const rules = role.rules ?? [];
  const text = JSON.stringify(rules);
  summary = summariesByRules.get(text);
  if (summary) {
    summaries.set(role, summary);
    return summary;
  }
  // A create has no name, so a rule limited by resourceNames allows it only if it lists ''.
  const allows = (verb: string, group: string, resource: string) =>
    rules.some((rule) => ruleAllows(rule, { verb, group, resource, name: '' }));
  summary = {
    id: nextSummaryId++,
    rights: canonicalRights(rightsOfRules(rules)),
    mayUseSearch: allows(SearchVerb, SearchApiGroup, SearchResource),
    mayViewClusters: allows(ManagedClusterViewVerb, ManagedClusterViewGroup, ManagedClusterViewResource),
  };
  summaries.set(role, summary);
  if (summariesByRules.size >= maxSummariesByRules) summariesByRules.clear();
  summariesByRules.set(text, summary);
  return summary;
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The managed clusters users may be granted; the hub's own objects are governed by RBAC alone. */
function viewableClusters(all: ReadonlySet<string>): string[] {
  return [...all].filter((c) => c !== HubCluster).sort(byText);
}

export function digestOf(set: Omit<AccessSet, 'digest'>): string {
  const canonical = JSON.stringify([
    set.all,
    set.clusterWide,
    set.namespaced,
    set.managedClusters,
    set.canSearch,
  ]);
  return createHash('sha256').update(canonical).digest('base64url');
}

function finish(set: Omit<AccessSet, 'digest'>): AccessSet {
  return { ...set, digest: digestOf(set) };
}

/**
 * The grants of each namespace beyond what the cluster-wide rights give, with the namespaces that get the
 * same grants in one entry. Namespaces bound to the same roles get the same grants: they are worked out
 * once per combination.
 */
function namespacedGrants(
  rolesByNamespace: Map<string, RoleSummary[]>,
  clusterRights: Rights,
): { namespaces: string[]; grants: ResourceGrant[] }[] {
  const byCombination = new Map<string, { key: string; grants: ResourceGrant[] } | null>();
  const groupsByGrants = new Map<string, { namespaces: string[]; grants: ResourceGrant[] }>();
  for (const [namespace, roles] of rolesByNamespace) {
    const combination = [...new Set(roles.map((r) => r.id))].sort((a, b) => a - b).join(',');
    let result = byCombination.get(combination);
    if (result === undefined) {
      let beyond: Rights;
      if (roles.length === 1 && clusterRights.size === 0) beyond = roles[0]!.rights;
      else {
        const rights: Rights = new Map();
        for (const role of roles) mergeRights(rights, role.rights);
        beyond = rightsBeyond(rights, clusterRights);
      }
      const grants = rightsToGrants(beyond);
      result = grants.length === 0 ? null : { key: JSON.stringify(grants), grants };
      byCombination.set(combination, result);
    }
    if (!result) continue;
    let entry = groupsByGrants.get(result.key);
    if (!entry) {
      entry = { namespaces: [], grants: result.grants };
      groupsByGrants.set(result.key, entry);
    }
    entry.namespaces.push(namespace);
  }
  const namespaced = [...groupsByGrants.values()];
  for (const entry of namespaced) entry.namespaces.sort(byText);
  namespaced.sort((a, b) => byText(a.namespaces[0]!, b.namespaces[0]!));

  return namespaced;
}

export function computeAccessSet(snapshot: RbacSnapshot, user: SearchUser): AccessSet {
  const groups = effectiveGroups(user);
  if (groups.includes(PrivilegedGroup)) {
    return finish({
      all: true,
      clusterWide: [],
      namespaced: [],
      managedClusters: viewableClusters(snapshot.managedClusters()),
      canSearch: true,
    });
  }
  const keys = userSubjectKeys(user.username, groups);
  let canSearch = false;
  let viewsEveryCluster = false;

  const cluster: Rights = new Map();
  for (const binding of snapshot.clusterRoleBindingsFor(keys)) {
    if (!(binding.subjects ?? []).some((s) => subjectApplies(s, user.username, groups, ''))) continue;
    const summary = summarize(referencedRole(binding, snapshot) ?? emptyRole);
    mergeRights(cluster, summary.rights);
    canSearch ||= summary.mayUseSearch;
    viewsEveryCluster ||= summary.mayViewClusters;
  }
  const clusterRights = canonicalRights(cluster);

  const managed = snapshot.managedClusters();
  const clusters = new Set<string>();
  const rolesByNamespace = new Map<string, RoleSummary[]>();
  for (const binding of snapshot.roleBindingsFor(keys)) {
    const namespace = binding.metadata.namespace ?? '';
    if (!namespace) continue;
    if (!(binding.subjects ?? []).some((s) => subjectApplies(s, user.username, groups, namespace))) continue;
    const role = referencedRole(binding, snapshot);
    if (!role) continue;
    const summary = summarize(role);
    canSearch ||= summary.mayUseSearch;
    if (summary.mayViewClusters && managed.has(namespace)) clusters.add(namespace);
    let list = rolesByNamespace.get(namespace);
    if (!list) {
      list = [];
      rolesByNamespace.set(namespace, list);
    }
    list.push(summary);
  }

  const namespaced = namespacedGrants(rolesByNamespace, clusterRights);

  return finish({
    all: false,
    clusterWide: rightsToGrants(clusterRights),
    namespaced,
    managedClusters: viewsEveryCluster ? viewableClusters(managed) : viewableClusters(clusters),
    canSearch,
  });
}
