// Search results as kubectl prints objects: a header row, columns padded with three spaces, ages like
// "5m" or "3d", and only the columns that say something for these results.
import type { Item } from '../model.ts';

/** kubectl's short age: 45s, 12m, 5h, 3d, 2y. */
export function shortAge(created: string | undefined, now = Date.now()): string {
  const at = created ? Date.parse(created) : Number.NaN;
  if (Number.isNaN(at)) return '<unknown>';
  const s = Math.max(0, Math.floor((now - at) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  return d < 730 ? `${d}d` : `${Math.floor(d / 365)}y`;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : String(v));

export function renderTable(items: Item[], now = Date.now()): string {
  if (items.length === 0) return 'No resources found.\n';
  const sorted = [...items].sort((a, b) =>
    [a.cluster, a.kind, a.namespace, a.name]
      .map(str)
      .join('\0')
      .localeCompare([b.cluster, b.kind, b.namespace, b.name].map(str).join('\0')),
  );
  const clusters = new Set(sorted.map((i) => str(i.cluster)));
  const columns: [string, (i: Item) => string][] = [];
  if (clusters.size > 1) columns.push(['CLUSTER', (i) => str(i.cluster)]);
  if (sorted.some((i) => i.namespace !== undefined)) columns.push(['NAMESPACE', (i) => str(i.namespace)]);
  columns.push(['KIND', (i) => (i.apigroup ? `${str(i.kind)}.${str(i.apigroup)}` : str(i.kind))]);
  columns.push(['NAME', (i) => str(i.name)]);
  if (sorted.some((i) => i.status !== undefined)) columns.push(['STATUS', (i) => str(i.status)]);
  columns.push(['AGE', (i) => shortAge(str(i.created) || undefined, now)]);
  const rows = [columns.map(([h]) => h), ...sorted.map((i) => columns.map(([, get]) => get(i) || '<none>'))];
  const widths = columns.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return `${rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]! + 3))).join('')).join('\n')}\n`;
}
