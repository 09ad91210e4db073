// An access set as one SQL predicate, so the database returns only what the user may list and no row is
// ever checked in TypeScript. Concrete (group, resource) pairs collapse into one `gr = ANY(...)` test,
// namespaces that share grants are one `namespace = ANY(...)` test, and wildcards stay wildcards.
import type { AccessSet, ResourceGrant } from '../model.ts';
import { and, type Columns, or, type Params } from './sql.ts';

/** The predicate over `cols` that holds exactly for the objects `set` may list. */
export function accessPredicate(set: AccessSet, hubCluster: string, cols: Columns, p: Params): string {
  if (set.all) return 'TRUE';
  const { hub, managed } = accessParts(set, hubCluster, cols, p);
  return or([hub, managed].filter((part): part is string => part !== undefined));
}

/**
 * The access set's predicate as disjoint branches, one per half (the hub's grants; whole managed
 * clusters), or ['TRUE'] for `all`; none when it allows nothing. A query that reads each branch apart
 * (UNION ALL of one SELECT per branch) lets PostgreSQL plan each on its own partitions: the hub's list of
 * namespaces is then planned on the hub's partition alone instead of on every managed cluster's. (With
 * the OR of both, planning that list on 21 partitions was most of a wide user's query time.)
 */
export function accessBranches(set: AccessSet, hubCluster: string, cols: Columns, p: Params): string[] {
  if (set.all) return ['TRUE'];
  const { hub, managed } = accessParts(set, hubCluster, cols, p);
  return [hub, managed].filter((part): part is string => part !== undefined);
}

/**
 * The two halves of a (not `all`) access set's predicate: what it allows in the hub (by its RBAC grants)
 * and what in managed clusters (whole clusters, as ACM allows them). A half that allows nothing is
 * undefined. Their OR is {@link accessPredicate}; a query may read the halves apart, each by its own plan.
 * They never overlap: the hub's objects are allowed by RBAC alone, so the managed half never names the hub
 * (a ManagedCluster named like it included).
 */
export function accessParts(
  set: AccessSet,
  hubCluster: string,
  cols: Columns,
  p: Params,
): { hub?: string; managed?: string } {
  const hub: string[] = [];
  const managed = set.managedClusters.filter((c) => c !== hubCluster);
  const clusterWide = grantsPredicate(set.clusterWide, cols, p);
  if (clusterWide !== 'FALSE') hub.push(clusterWide);
  for (const group of set.namespaced) {
    if (group.namespaces.length === 0) continue;
    const grants = grantsPredicate(group.grants, cols, p);
    if (grants === 'FALSE') continue;
    const ns =
      group.namespaces.length === 1
        ? `${cols.namespace} = ${p.add(group.namespaces[0])}`
        : `${cols.namespace} = ANY(${p.list(group.namespaces)})`;
    hub.push(and([ns, grants]));
  }
  return {
    ...(hub.length > 0 ? { hub: and([`${cols.cluster} = ${p.add(hubCluster)}`, or(hub)]) } : {}),
    // ACM's rule for managed clusters: everything in a cluster the user may view, except Secrets.
    ...(managed.length > 0
      ? { managed: `(${cols.cluster} = ANY(${p.list(managed)}) AND ${cols.gr} <> '/secrets')` }
      : {}),
  };
}

/** OR of the grants; 'TRUE' when one of them allows everything. */
export function grantsPredicate(grants: ResourceGrant[], cols: Columns, p: Params): string {
  // Decided before any parameter is added: an unused bind parameter is an error in PostgreSQL.
  if (grants.some((g) => g.apiGroups.includes('*') && g.resources.includes('*') && !g.names)) return 'TRUE';
  const pairs = new Set<string>();
  const terms: string[] = [];
  for (const g of grants) {
    const anyGroup = g.apiGroups.includes('*');
    const anyResource = g.resources.includes('*');
    const conditions: string[] = [];
    if (!anyGroup && !anyResource) {
      const grs = g.apiGroups.flatMap((group) => g.resources.map((resource) => `${group}/${resource}`));
      if (!g.names) {
        for (const gr of grs) pairs.add(gr);
        continue;
      }
      conditions.push(`${cols.gr} = ANY(${p.list(grs)})`);
    } else {
      // Group names and plurals never contain '/', so the two halves of gr are exact.
      if (!anyGroup) conditions.push(`split_part(${cols.gr}, '/', 1) = ANY(${p.list(g.apiGroups)})`);
      if (!anyResource) conditions.push(`split_part(${cols.gr}, '/', 2) = ANY(${p.list(g.resources)})`);
    }
    if (g.names) conditions.push(`${cols.name} = ANY(${p.list(g.names)})`);
    terms.push(and(conditions));
  }
  if (pairs.size > 0) terms.unshift(`${cols.gr} = ANY(${p.list([...pairs].sort())})`);
  return or(terms);
}
