// RFC 6902 JSON Patch from the difference of two JSON values, for mutating admission responses.
// Arrays are replaced whole when they differ: index-wise patches against a concurrently changed list
// are a classic source of corrupted objects, and admission objects are small.

export type JsonPatchOp =
  | { op: 'add' | 'replace'; path: string; value: unknown }
  | { op: 'remove'; path: string };

const escapeSegment = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON equality: an undefined member is an absent one, as in the JSON the API server reads. */
function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => equal(v, b[i]));
  if (!isObject(a) || !isObject(b)) return false;
  const keys = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] !== undefined);
  const ka = keys(a);
  return ka.length === keys(b).length && ka.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
}

export function diff(original: unknown, mutated: unknown, path = ''): JsonPatchOp[] {
  if (equal(original, mutated)) return [];
  if (!isObject(original) || !isObject(mutated)) return [{ op: 'replace', path, value: mutated }];
  const ops: JsonPatchOp[] = [];
  for (const key of Object.keys(original)) {
    if (!Object.hasOwn(mutated, key) || mutated[key] === undefined)
      ops.push({ op: 'remove', path: `${path}/${escapeSegment(key)}` });
  }
  for (const [key, value] of Object.entries(mutated)) {
    if (value === undefined) continue;
    const child = `${path}/${escapeSegment(key)}`;
    if (!Object.hasOwn(original, key) || original[key] === undefined)
      ops.push({ op: 'add', path: child, value });
    else ops.push(...diff(original[key], value, child));
  }
  return ops;
}
