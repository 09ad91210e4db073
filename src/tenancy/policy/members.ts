// An organization's members as RBAC subjects: what the organization RBAC controller binds in its
// namespaces and the organization controller binds to its reader role.
import type { Organization } from '../../crds/tenancy.ts';

/** An organization's members as RBAC subjects (users, then groups). */
export function memberSubjects(
  organization: Organization,
): { apiGroup: string; kind: string; name: string }[] {
  const members = organization.spec.members ?? {};
  const subject = (kind: string) => (name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name });
  return [...(members.users ?? []).map(subject('User')), ...(members.groups ?? []).map(subject('Group'))];
}
