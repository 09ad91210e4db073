// Who is asking: privileged principals bypass the namespace policies. A ClusterRole grants bypass only
// through a ClusterRoleBinding: a tenant who may create RoleBindings in their namespace must not gain
// bypass by binding a privileged role to themself there. Answered from caches, never an API call.

import type { Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import type { PrivilegeCheck } from '../model.ts';
import { matchesAny } from '../policy/config.ts';

interface ClusterRoleBinding extends KubeObject {
  roleRef: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}

const BySubject = 'tenancy.subject';
const serviceAccountPrefix = 'system:serviceaccount:';

const subjectKeys = (b: ClusterRoleBinding) =>
  (b.subjects ?? []).map((s) =>
    s.kind === 'ServiceAccount'
      ? `User:${serviceAccountPrefix}${s.namespace}:${s.name}`
      : `${s.kind}:${s.name}`,
  );

export function privilegeChecker(manager: Manager): PrivilegeCheck {
  const bindings: Informer<ClusterRoleBinding> = manager.informer(Resources.clusterRoleBindings);
  bindings.addIndex(BySubject, subjectKeys);
  return (user, config) => {
    if (matchesAny(config.privilegedUsers, user.username)) return true;
    const groups = user.groups ?? [];
    if (groups.some((g) => matchesAny(config.privilegedGroups, g))) return true;
    const keys = [`User:${user.username}`, ...groups.map((g) => `Group:${g}`)];
    return keys.some((key) =>
      bindings
        .byIndex(BySubject, key)
        .some(
          (b) =>
            b.roleRef.kind === 'ClusterRole' && matchesAny(config.privilegedClusterRoles, b.roleRef.name),
        ),
    );
  };
}

/** The namespace of a service-account user name, if it is one. */
export function serviceAccountNamespace(username: string): string | undefined {
  if (!username.startsWith(serviceAccountPrefix)) return undefined;
  const [namespace] = username.slice(serviceAccountPrefix.length).split(':');
  return namespace || undefined;
}
