// Order-insensitive comparison of JSON values: the API server returns object keys in its own order, so
// "is the live object what we want?" must not depend on key order.

/** JSON with object keys sorted at every level; `omit` drops keys by name (e.g. timestamps). */
export function stableJson(value: unknown, omit: ReadonlySet<string> = new Set()): string {
  return JSON.stringify(sortKeys(value, omit));
}

function sortKeys(value: unknown, omit: ReadonlySet<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => sortKeys(v, omit));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k, v]) => v !== undefined && !omit.has(k))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, sortKeys(v, omit)]),
    );
  }
  return value;
}

export function semanticEqual(a: unknown, b: unknown): boolean {
  return stableJson(a) === stableJson(b);
}
