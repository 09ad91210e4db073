// An access set as one SQL predicate, so the database returns only what the user may list and no row is
// ever checked in TypeScript. Concrete (group, resource) pairs collapse into one `gr = ANY(...)` test,
// namespaces that share grants are one `namespace = ANY(...)` test, and wildcards stay wildcards.
import type { AccessSet, ResourceGrant } from '../model.ts';
import { and, type Columns, or, type Params } from './sql.ts';

/** The predicate over `cols` that holds exactly for the objects `set` may list. */
export function accessPredicate(set: AccessSet, hubCluster: string, cols: Columns, p: Params): string {
  if (set.all) return 'TRUE';
  const hub: string[] = [];
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
  const parts: string[] = [];
  if (hub.length > 0) parts.push(and([`${cols.cluster} = ${p.add(hubCluster)}`, or(hub)]));
  if (set.managedClusters.length > 0) {
    // ACM's rule for managed clusters: everything in a cluster the user may view, except Secrets.
    parts.push(`(${cols.cluster} = ANY(${p.list(set.managedClusters)}) AND ${cols.gr} <> '/secrets')`);
  }
  return or(parts);
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
