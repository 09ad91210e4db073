// Admin enforcement of tenant spec fields (seed 000, and what its users asked for after it): a field the
// admin sets is the only value a tenant may use, and is filled in when the tenant leaves it out. Unlike
// upstream, any JSON value can be enforced (false, 0, "", [] and {} included: presence is what counts),
// and enforcement reaches into nested objects, so `labelSelector.matchLabels.team` can be fixed alone.
// Fields that tenantkit itself sets to keep tenants apart can never be enforced.

import { type EnforcedKind, specPathOf, unenforceable } from '../../crds/backup-policy.ts';
import { type Json, type JsonObject, jsonEqual } from '../../kube/merge-patch.ts';
import { setOwn } from '../../kube/own.ts';

export { type EnforcedKind, type Json, type JsonObject, jsonEqual, specPathOf, unenforceable };

const isObject = (v: Json | undefined): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The message upstream shows, so scripts that match on it keep working. */
export const enforcedMessage = (kind: EnforcedKind, path: string) =>
  `${kind} ${specPathOf[kind]}.${path} field value is enforced by admin user, can not override it`;

/**
 * Every tenant value that differs from an enforced one, as `field.path` (dotted). An object enforced
 * under an object is compared field by field; any other value (arrays included) must be equal as a
 * whole. A field the tenant leaves out is never a violation: it is filled in.
 */
export function violations(tenant: JsonObject, enforced: JsonObject, prefix = ''): string[] {
  const found: string[] = [];
  for (const [key, want] of Object.entries(enforced)) {
    if (!Object.hasOwn(tenant, key)) continue;
    const have = tenant[key];
    const path = prefix ? `${prefix}.${key}` : key;
    if (isObject(want) && isObject(have)) found.push(...violations(have, want, path));
    else if (!jsonEqual(have, want)) found.push(path);
  }
  return found;
}

/** The tenant's spec with every enforced value filled in (enforced values win, nested objects merge). */
export function withEnforced(tenant: JsonObject, enforced: JsonObject): JsonObject {
  const out: JsonObject = { ...tenant };
  for (const [key, want] of Object.entries(enforced)) {
    const have = Object.hasOwn(out, key) ? out[key] : undefined;
    const value = isObject(want) && isObject(have) ? withEnforced(have, want) : structuredClone(want);
    // An enforced key named "__proto__" is a field, not the object's prototype.
    setOwn(out, key, value);
  }
  return out;
}

/** Problems with an admin's enforced spec (at `configPath`): fields that cannot be enforced, and why. */
export function policyProblems(
  kind: EnforcedKind,
  enforced: JsonObject | undefined,
  configPath: string,
): string[] {
  return Object.keys(enforced ?? {})
    .filter((field) => Object.hasOwn(unenforceable[kind], field))
    .map((field) => `${configPath}.${field} cannot be enforced: ${unenforceable[kind][field]}`);
}
