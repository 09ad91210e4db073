// The meaning of an AccessSet for one object, evaluated the way the SQL predicate evaluates it. It is
// the reference the query engine's predicate is tested against, and the form the differential test
// compares with kube-apiserver's answers.
import { type AccessSet, HubCluster, type ResourceGrant } from '../model.ts';

export interface ObjectAttributes {
  /** Absent for cluster-scoped objects. */
  namespace?: string;
  /** '' for the core group. */
  group: string;
  /** Plural resource name. */
  resource: string;
  /** Absent: every object of the type (a list without a name selector). */
  name?: string;
  /** The cluster the object lives in; absent means the hub. */
  cluster?: string;
}

function grantMatches(grant: ResourceGrant, attrs: ObjectAttributes): boolean {
  if (!grant.apiGroups.includes('*') && !grant.apiGroups.includes(attrs.group)) return false;
  if (!grant.resources.includes('*') && !grant.resources.includes(attrs.resource)) return false;
  if (grant.names) return attrs.name !== undefined && grant.names.includes(attrs.name);
  return true;
}

/** Whether `set` lets its user see (list) the object described by `attrs`. */
export function allows(set: AccessSet, attrs: ObjectAttributes): boolean {
  if (set.all) return true;
  if (attrs.cluster !== undefined && attrs.cluster !== HubCluster) {
    // ACM: a viewable managed cluster shows everything in it except Secrets.
    const secret = attrs.group === '' && attrs.resource === 'secrets';
    return !secret && set.managedClusters.includes(attrs.cluster);
  }
  if (set.clusterWide.some((g) => grantMatches(g, attrs))) return true;
  // Cluster-scoped objects are listed without a namespace, where only ClusterRoleBindings count.
  if (attrs.namespace === undefined) return false;
  const ns = attrs.namespace;
  return set.namespaced.some(
    (e) => e.namespaces.includes(ns) && e.grants.some((g) => grantMatches(g, attrs)),
  );
}
