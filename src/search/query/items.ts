// Items as ACM's API returns them: every property flattened to a string (maps as "k=v; k2=v2" and
// lists as "a; b", both sorted; numbers as integers; booleans as "true"/"false"), plus `_uid` and
// `cluster` from the row. UIs written for ACM read exactly this shape.
import type { Item } from '../model.ts';

export function formatItem(uid: string, cluster: string, data: Record<string, unknown>): Item {
  const item: Item = {};
  for (const [key, value] of Object.entries(data)) {
    const formatted = formatValue(value);
    if (formatted !== undefined) item[key] = formatted;
  }
  item._uid = uid;
  item.cluster = cluster;
  return item;
}

function formatValue(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return String(Math.trunc(value));
  if (Array.isArray(value)) {
    return value
      .map(formatValue)
      .filter((v): v is string => v !== undefined)
      .sort()
      .join('; ');
  }
  if (value && typeof value === 'object') {
    return Object.entries(value)
      .map(([k, v]) => `${k}=${formatValue(v) ?? ''}`)
      .sort()
      .join('; ');
  }
  return undefined;
}
