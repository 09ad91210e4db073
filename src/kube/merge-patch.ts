// JSON merge patches (RFC 7396) computed from two versions of an object: only what differs is sent, and
// removals reach every depth (a key dropped from a nested object becomes null there). A diff of the top
// level alone would resend a nested object whole, and a key missing from it would survive the merge, so
// the next comparison would differ again and every resync would write.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Deep equality of JSON values; object key order does not matter. */
export function jsonEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]))
    );
  }
  return false;
}

/**
 * The merge patch that turns `previous` into `next`: changed and new keys, nested objects diffed key by
 * key, arrays replaced whole (merge patches cannot edit arrays), removed keys as null. `{}` when equal.
 * Keys whose value is `undefined` in `next` count as removed.
 */
export function mergePatch(next: JsonObject, previous: JsonObject): JsonObject {
  // Own keys only, and a patch without a prototype: a key named "__proto__" or "constructor" in a
  // mirrored spec is a key like any other (assigning "__proto__" on a plain object sets its prototype).
  const patch: JsonObject = Object.create(null);
  for (const [key, value] of Object.entries(next)) {
    if (value === undefined) continue;
    const before = Object.hasOwn(previous, key) ? previous[key] : undefined;
    if (isObject(value) && isObject(before)) {
      const inner = mergePatch(value, before);
      if (Object.keys(inner).length > 0) patch[key] = inner;
    } else if (!Object.hasOwn(previous, key) || !jsonEqual(value, before)) {
      patch[key] = value;
    }
  }
  for (const key of Object.keys(previous)) {
    if (!Object.hasOwn(next, key) || next[key] === undefined) patch[key] = null;
  }
  return patch;
}
