// Status writes only when something a reader would notice changed, so an idle resync writes nothing.

function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k, v]) => k !== 'lastTransitionTime' && v !== undefined)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, strip(v)]),
    );
  }
  return value;
}

export function statusChanged(current: unknown, next: unknown): boolean {
  return JSON.stringify(strip(current ?? {})) !== JSON.stringify(strip(next));
}
