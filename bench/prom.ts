// What the benchmarks read from Prometheus text: sums and counts of histograms by label set, and the
// mean per call between two readings. Shared by bench/chart.ts (in-cluster) and bench/tenancy.ts.

/**
 * The samples of the metric families matching `family` (a prefix or a pattern), by their full series
 * name with labels; `fold` rewrites a series name first, and series that fold together are added up.
 */
export function samplesOf(
  text: string,
  family: string | RegExp,
  fold: (series: string) => string = (s) => s,
  into = new Map<string, number>(),
): Map<string, number> {
  for (const line of text.split('\n')) {
    if (typeof family === 'string' ? !line.startsWith(family) : !family.test(line)) continue;
    const space = line.lastIndexOf(' ');
    const key = fold(line.slice(0, space));
    into.set(key, (into.get(key) ?? 0) + Number(line.slice(space + 1)));
  }
  return into;
}

/** Mean duration per call of a histogram family between two readings, by the value of `label`. */
export function perCall(
  before: Map<string, number>,
  after: Map<string, number>,
  family: string,
  label: string,
) {
  const rows: { name: string; calls: number; meanMs: number }[] = [];
  for (const [key, sum] of after) {
    if (!key.startsWith(`${family}_sum{`)) continue;
    const countKey = key.replace(`${family}_sum{`, `${family}_count{`);
    const calls = (after.get(countKey) ?? 0) - (before.get(countKey) ?? 0);
    if (calls <= 0) continue;
    const seconds = sum - (before.get(key) ?? 0);
    const name = key.match(new RegExp(`${label}="([^"]*)"`))?.[1] ?? '?';
    const operation = key.match(/operation="([^"]*)"/)?.[1] ?? '';
    const type = key.match(/type="([^"]*)"/)?.[1] ?? '';
    rows.push({ name: `${name} ${type} ${operation}`.trim(), calls, meanMs: (seconds * 1000) / calls });
  }
  return rows.sort((a, b) => a.name.localeCompare(b.name));
}

/** Adds what each series grew by between two readings to `into` (for perCall over several spans). */
export function addGrowth(
  into: Map<string, number>,
  before: Map<string, number>,
  after: Map<string, number>,
) {
  for (const [key, value] of after) into.set(key, (into.get(key) ?? 0) + value - (before.get(key) ?? 0));
  return into;
}

/** Mean, p50, p99 and max of latency samples in ms. */
export function percentiles(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
  const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
  return { mean, p50: at(50), p99: at(99), max: s.at(-1) ?? 0 };
}
