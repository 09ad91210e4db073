// The RBAC objects search reads, and the authorizer's own matching rules: which subjects a binding
// applies to, which role it refers to, and whether one rule allows one request. These agree with
// kube-apiserver's RBAC authorizer case for case (plugin/pkg/auth/authorizer/rbac and the rule helpers
// in pkg/apis/rbac/v1), because search must show exactly what the user could list themselves.
import type { KubeObject } from '../../kube/resources.ts';
import type { SearchUser } from '../model.ts';

export interface RbacRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface RbacSubject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}

export interface RoleRef {
  apiGroup: string;
  kind: string;
  name: string;
}

/** A Role or ClusterRole: only the stored `rules` count (aggregation is the controller's job). */
export interface RbacRole extends KubeObject {
  rules?: RbacRule[] | null;
}

/** A RoleBinding or ClusterRoleBinding. */
export interface RbacBinding extends KubeObject {
  roleRef: RoleRef;
  subjects?: RbacSubject[] | null;
}

export const AllUsersGroup = 'system:authenticated';
export const UnauthenticatedGroup = 'system:unauthenticated';
export const AnonymousUser = 'system:anonymous';
/** kube-apiserver allows this group everything before RBAC is asked. */
export const PrivilegedGroup = 'system:masters';
export const ServiceAccountPrefix = 'system:serviceaccount:';

/** What one request asks; `name` is '' for a list without a `metadata.name` field selector. */
export interface RequestAttributes {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  name?: string;
}

/** kube's RuleAllows for resource requests: verb, group, resource (with subresource) and name. */
export function ruleAllows(rule: RbacRule, attrs: RequestAttributes): boolean {
  const combined = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const verbOk = rule.verbs.some((v) => v === '*' || v === attrs.verb);
  const groupOk = (rule.apiGroups ?? []).some((g) => g === '*' || g === attrs.group);
  const resourceOk = (rule.resources ?? []).some(
    (r) =>
      r === '*' ||
      r === combined ||
      // `*/scale` matches the scale subresource of anything, never the resource itself.
      (!!attrs.subresource && r === `*/${attrs.subresource}`),
  );
  const names = rule.resourceNames ?? [];
  const nameOk = names.length === 0 || names.includes(attrs.name ?? '');
  return verbOk && groupOk && resourceOk && nameOk;
}

/** The user as the authorizer sees it: every authenticated user is in system:authenticated. */
export function effectiveGroups(user: SearchUser): string[] {
  const groups = [...new Set(user.groups)];
  const anonymous = user.username === AnonymousUser || groups.includes(UnauthenticatedGroup);
  if (!anonymous && !groups.includes(AllUsersGroup)) groups.push(AllUsersGroup);
  return groups;
}

/** The username a ServiceAccount subject stands for, or undefined when it names no namespace. */
export function serviceAccountUsername(subject: RbacSubject, bindingNamespace: string): string | undefined {
  // An empty namespace means the binding's own; a ClusterRoleBinding has none, so it matches nobody.
  const namespace = subject.namespace || bindingNamespace;
  if (!namespace) return undefined;
  return `${ServiceAccountPrefix}${namespace}:${subject.name}`;
}

/** kube's appliesToUser; `bindingNamespace` is '' for ClusterRoleBindings. */
export function subjectApplies(
  subject: RbacSubject,
  username: string,
  groups: readonly string[],
  bindingNamespace: string,
): boolean {
  switch (subject.kind) {
    case 'User':
      return subject.name === username;
    case 'Group':
      return groups.includes(subject.name);
    case 'ServiceAccount':
      return serviceAccountUsername(subject, bindingNamespace) === username;
    default:
      return false;
  }
}

/**
 * Index keys of a binding: one per subject, in the same key space as {@link userSubjectKeys}, so the
 * bindings of a user are found without scanning all bindings. A ServiceAccount subject is keyed by the
 * full username it matches (that is how kube compares it, so no parsing of usernames is needed).
 */
export function bindingSubjectKeys(binding: RbacBinding): string[] {
  const namespace = binding.metadata.namespace ?? '';
  const keys: string[] = [];
  for (const subject of binding.subjects ?? []) {
    if (subject.kind === 'User') keys.push(`user:${subject.name}`);
    else if (subject.kind === 'Group') keys.push(`group:${subject.name}`);
    else if (subject.kind === 'ServiceAccount') {
      const username = serviceAccountUsername(subject, namespace);
      if (username) keys.push(`user:${username}`);
    }
  }
  return [...new Set(keys)];
}

/** The index keys under which the bindings that may apply to this user are found. */
export function userSubjectKeys(username: string, groups: readonly string[]): string[] {
  return [`user:${username}`, ...groups.map((g) => `group:${g}`)];
}

/** Where roles are found: Roles by namespace and name, ClusterRoles by name. */
export interface RoleLookup {
  role(namespace: string, name: string): RbacRole | undefined;
  clusterRole(name: string): RbacRole | undefined;
}

/** The role a binding refers to; undefined when missing or of a kind its scope cannot refer to. */
export function referencedRole(binding: RbacBinding, lookup: RoleLookup): RbacRole | undefined {
  const namespace = binding.metadata.namespace ?? '';
  const ref = binding.roleRef;
  if (ref.kind === 'ClusterRole') return lookup.clusterRole(ref.name);
  // kube resolves a Role in the binding's namespace; a ClusterRoleBinding has none, so it finds nothing.
  if (ref.kind === 'Role' && namespace) return lookup.role(namespace, ref.name);
  return undefined;
}
