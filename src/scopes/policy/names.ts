// Deterministic names for everything the scopes controllers create. A name is a function of what the
// object is for (template, instance, role), never of time or a counter, so a stale cache or a crash can
// never produce a second copy, and a hash of the full identity keeps two templates from colliding. The labels and annotations on them are in model.ts.
import { createHash } from 'node:crypto';

function shortHash(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 10);
}

/** Keeps what is valid in an object name (a path segment) and trims the readable prefix. */
function readable(prefix: string, max: number): string {
  return prefix.replace(/[/%]/g, '-').slice(0, max);
}

/** The ClusterRole for one `clusterRoles[]` entry of a template: `<generateName><hash>`. */
export function clusterRoleName(template: string, generateName: string): string {
  return `${readable(generateName, 200)}${shortHash('role', template, generateName)}`;
}

/** A (Cluster)RoleBinding of an instance to one ClusterRole. The role is part of the identity, so
 * pointing an instance at another role yields a new binding (roleRef is immutable) created before the
 * old one is removed. */
export function bindingName(instance: string, roleName: string): string {
  return `scope-${readable(instance, 60)}-${shortHash('binding', instance, roleName)}`;
}
