// Reading untyped Kubernetes JSON safely: objects from discovery, CRDs and watch streams are only as
// well-formed as their servers make them, so every read checks the type it expects.

export type JsonObject = Record<string, unknown>;

export function asObject(value: unknown): JsonObject | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as JsonObject)
    : undefined;
}

export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** A non-empty string, or undefined. */
export function asName(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function asNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function asBoolean(value: unknown): boolean | undefined {
  return typeof value === 'boolean' ? value : undefined;
}

/** The value at `path` below `value`, or undefined when any step is missing or not an object. */
export function at(value: unknown, ...path: string[]): unknown {
  let current: unknown = value;
  for (const key of path) {
    const o = asObject(current);
    if (!o) return undefined;
    current = o[key];
  }
  return current;
}

/** A string-to-string map (labels, annotations, selectors); non-string values are left out. */
export function asStringMap(value: unknown): Record<string, string> | undefined {
  const o = asObject(value);
  if (!o) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(o)) if (typeof v === 'string') out[k] = v;
  return out;
}
