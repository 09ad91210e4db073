// An RbacSnapshot over plain lists of objects, indexed the same way the informers are: for computing
// access sets without an API server (tests, benchmarks, what-if tools).
import type { RbacSnapshot } from './compute.ts';
import { bindingSubjectKeys, type RbacBinding, type RbacRole } from './rbac.ts';

export interface RbacObjects {
  roles?: RbacRole[];
  clusterRoles?: RbacRole[];
  roleBindings?: RbacBinding[];
  clusterRoleBindings?: RbacBinding[];
  managedClusters?: string[];
}

function indexBySubject(bindings: readonly RbacBinding[]): Map<string, RbacBinding[]> {
  const index = new Map<string, RbacBinding[]>();
  for (const binding of bindings) {
    for (const key of bindingSubjectKeys(binding)) {
      const list = index.get(key);
      if (list) list.push(binding);
      else index.set(key, [binding]);
    }
  }
  return index;
}

export function staticSnapshot(objects: RbacObjects): RbacSnapshot {
  const roles = new Map((objects.roles ?? []).map((r) => [`${r.metadata.namespace}/${r.metadata.name}`, r]));
  const clusterRoles = new Map((objects.clusterRoles ?? []).map((r) => [r.metadata.name ?? '', r]));
  const roleBindings = indexBySubject(objects.roleBindings ?? []);
  const clusterRoleBindings = indexBySubject(objects.clusterRoleBindings ?? []);
  const managed = new Set(objects.managedClusters ?? []);
  const find = (index: Map<string, RbacBinding[]>, keys: readonly string[]) =>
    new Set(keys.flatMap((k) => index.get(k) ?? []));
  return {
    role: (namespace, name) => roles.get(`${namespace}/${name}`),
    clusterRole: (name) => clusterRoles.get(name),
    roleBindingsFor: (keys) => find(roleBindings, keys),
    clusterRoleBindingsFor: (keys) => find(clusterRoleBindings, keys),
    managedClusters: () => managed,
  };
}
