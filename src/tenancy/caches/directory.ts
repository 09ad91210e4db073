// Organizations, their members and users' default organizations, from caches.
import {
  type Organization,
  OrganizationCrd,
  type TenantUser,
  TenantUserCrd,
  type UsageProfile,
  UsageProfileCrd,
} from '../../crds/tenancy.ts';
import { ByLabel, type Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, Resources, type ResourceType } from '../../kube/resources.ts';
import { type Directory, type Namespace, openshiftDefaultOrganizationAnnotation } from '../model.ts';

const ByUsername = 'tenancy.username';

const openshiftUsers: ResourceType = {
  group: 'user.openshift.io',
  version: 'v1',
  plural: 'users',
  kind: 'User',
  namespaced: false,
};

const usernameOf = (u: TenantUser) => [u.spec.username];

export function directory(manager: Manager): Directory {
  // Only where the cluster serves OpenShift's User API: an informer for an API that does not exist
  // would never sync. Until discovery answers, TenantUsers alone decide (and a missing default fails
  // closed in the validating policy).
  let ocpUsers: Informer<KubeObject> | undefined;
  manager.client.request('GET', '/apis/user.openshift.io/v1').then(
    () => {
      ocpUsers = manager.informer<KubeObject>(openshiftUsers);
    },
    () => {},
  );
  const organizations = manager.informer<Organization>(OrganizationCrd.type);
  const users = manager.informer<TenantUser>(TenantUserCrd.type);
  const namespaces = manager.informer<Namespace>(Resources.namespaces);
  const profiles = manager.informer<UsageProfile>(UsageProfileCrd.type);
  users.addIndex(ByUsername, usernameOf);
  return {
    organization: (name) => organizations.get(name),
    currentOrganization: async (name) =>
      organizations.get(name) ??
      (await manager.client.get<Organization>(OrganizationCrd.type, name).catch(() => undefined)),
    isMember(organization, user) {
      const members = organization.spec.members ?? {};
      if ((members.users ?? []).includes(user.username)) return true;
      const groups = new Set(user.groups ?? []);
      return (members.groups ?? []).some((g) => groups.has(g));
    },
    defaultOrganization(username) {
      // Several TenantUsers for one user would be ambiguous: the oldest one wins, deterministically.
      const [first] = users
        .byIndex(ByUsername, username)
        .sort((a, b) =>
          (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''),
        );
      return (
        first?.spec.defaultOrganization ??
        ocpUsers?.get(username)?.metadata.annotations?.[openshiftDefaultOrganizationAnnotation]
      );
    },
    namespace: (name) => namespaces.get(name),
    namespaces,
    organizationNamespaces: (organization, label) =>
      namespaces.byIndex(ByLabel, `${label}=${organization}`).map((n) => n.metadata.name!),
    profileFor(organization, active) {
      const name = organization.spec.usageProfile ?? active;
      return name ? profiles.get(name) : undefined;
    },
  };
}
