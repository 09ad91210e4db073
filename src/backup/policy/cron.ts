// The cron dialect Velero's Schedule accepts (robfig/cron v3 ParseStandard): five fields (minute hour
// day-of-month month day-of-week, with names, ranges, steps, lists and `?`), the descriptors @yearly,
// @annually, @monthly, @weekly, @daily, @midnight, @hourly and `@every <Go duration>`, and an optional
// `TZ=`/`CRON_TZ=` prefix. Written here (about 150 lines) rather than taken from npm because the point is
// to agree with Velero exactly: the npm parsers differ in small ways that would matter here (six-field
// seconds, day-of-month/day-of-week AND versus OR, `@every`), and a mismatch would show a wrong next run.
import { parseDuration } from './config.ts';

export interface CronSchedule {
  /** The first run strictly after `after`, as Velero computes it; undefined if none within five years. */
  next(after: Date): Date | undefined;
  /** The zone named by a TZ= prefix; undefined means Velero's local time (UTC in a container). */
  zone?: string;
  /** The exact shortest gap between two consecutive runs, when the expression's structure gives it. */
  gapMs?: () => number;
}

export type CronParse =
  | { schedule: CronSchedule; error?: undefined }
  | { schedule?: undefined; error: string };

interface Bounds {
  min: number;
  max: number;
  names?: Record<string, number>;
}

const minutes: Bounds = { min: 0, max: 59 };
const hours: Bounds = { min: 0, max: 23 };
const dom: Bounds = { min: 1, max: 31 };
const monthNames = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const months: Bounds = { min: 1, max: 12, names: Object.fromEntries(monthNames.map((m, i) => [m, i + 1])) };
const dayNames = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const dow: Bounds = { min: 0, max: 6, names: Object.fromEntries(dayNames.map((d, i) => [d, i])) };

interface Field {
  values: Set<number>;
  /** `*` or `?` (without a step above 1): for the day-of-month/day-of-week rule. */
  star: boolean;
}

class CronError extends Error {}

const all = (b: Bounds): Field => ({
  values: new Set(Array.from({ length: b.max - b.min + 1 }, (_, i) => b.min + i)),
  star: true,
});
const one = (v: number): Field => ({ values: new Set([v]), star: false });

function number(text: string, b?: Bounds): number {
  const key = text.toLowerCase();
  // Own keys only: "constructor" in a month or weekday field is not a name.
  const named = b?.names && Object.hasOwn(b.names, key) ? b.names[key] : undefined;
  if (named !== undefined) return named;
  if (!/^[0-9]+$/.test(text)) throw new CronError(`failed to parse int from ${text}`);
  return Number(text);
}

function range(expr: string, b: Bounds, into: Field): void {
  const rangeAndStep = expr.split('/');
  const lowHigh = rangeAndStep[0]!.split('-');
  let start: number;
  let end: number;
  let star = false;
  if (lowHigh[0] === '*' || lowHigh[0] === '?') {
    start = b.min;
    end = b.max;
    star = true;
  } else {
    if (lowHigh.length > 2) throw new CronError(`too many hyphens: ${expr}`);
    start = number(lowHigh[0]!, b);
    end = lowHigh.length === 2 ? number(lowHigh[1]!, b) : start;
  }
  let step = 1;
  if (rangeAndStep.length === 2) {
    step = number(rangeAndStep[1]!);
    // "N/step" means "N-max/step".
    if (lowHigh.length === 1) end = b.max;
    if (step > 1) star = false;
  } else if (rangeAndStep.length > 2) {
    throw new CronError(`too many slashes: ${expr}`);
  }
  if (start < b.min) throw new CronError(`beginning of range (${start}) below minimum (${b.min}): ${expr}`);
  if (end > b.max) throw new CronError(`end of range (${end}) above maximum (${b.max}): ${expr}`);
  if (start > end) throw new CronError(`beginning of range (${start}) beyond end of range (${end}): ${expr}`);
  if (step === 0) throw new CronError(`step of range should be a positive number: ${expr}`);
  for (let v = start; v <= end; v += step) into.values.add(v);
  into.star ||= star;
}

function field(text: string, b: Bounds): Field {
  const f: Field = { values: new Set(), star: false };
  for (const expr of text.split(',').filter((e) => e !== '')) range(expr, b, f);
  return f;
}

interface Spec {
  minute: Field;
  hour: Field;
  dom: Field;
  month: Field;
  dow: Field;
}

const minuteMs = 60_000;
const fiveYearsMs = 5 * 366 * 24 * 3600_000;

function nextOf(spec: Spec, after: Date): Date | undefined {
  // The next whole minute strictly after `after` (seconds are always 0 in the standard dialect).
  let t = Math.floor(after.getTime() / minuteMs) * minuteMs + minuteMs;
  const limit = after.getTime() + fiveYearsMs;
  while (t <= limit) {
    const d = new Date(t);
    if (!spec.month.values.has(d.getUTCMonth() + 1)) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
      continue;
    }
    const domMatch = spec.dom.values.has(d.getUTCDate());
    const dowMatch = spec.dow.values.has(d.getUTCDay());
    // robfig/cron: if either day field is `*`, both must match; otherwise either may.
    const dayOk = spec.dom.star || spec.dow.star ? domMatch && dowMatch : domMatch || dowMatch;
    if (!dayOk) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
      continue;
    }
    if (!spec.hour.values.has(d.getUTCHours())) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours() + 1);
      continue;
    }
    if (!spec.minute.values.has(d.getUTCMinutes())) {
      t += minuteMs;
      continue;
    }
    return d;
  }
  return undefined;
}

const dayMs = 24 * 3600_000;
/** 28 years: every alignment of weekdays, leap days and month ends (Gregorian, to 2099) comes round. */
const cycleDays = 28 * 366;

/**
 * The exact shortest gap between consecutive runs of `spec`: every matching day runs at the same times
 * of day, so it is the smaller of the shortest gap within a day and the shortest step between matching
 * days less the day's span (a run late on one day and early on the next). Matching days are walked over
 * a full 28-year cycle, so a rare day (29 February, a month end next to a month start) is not missed.
 */
function specGapMs(spec: Spec): number {
  const times = [...spec.hour.values]
    .flatMap((h) => [...spec.minute.values].map((m) => (h * 60 + m) * minuteMs))
    .sort((a, b) => a - b);
  if (times.length === 0) return Number.POSITIVE_INFINITY;
  let shortest = Number.POSITIVE_INFINITY;
  for (let i = 1; i < times.length; i++) shortest = Math.min(shortest, times[i]! - times[i - 1]!);
  const span = times[times.length - 1]! - times[0]!;
  const start = Date.UTC(2000, 0, 1);
  let previous: number | undefined;
  let step = Number.POSITIVE_INFINITY;
  for (let d = 0; d < cycleDays && step > 1; d++) {
    const day = new Date(start + d * dayMs);
    if (!spec.month.values.has(day.getUTCMonth() + 1)) continue;
    const domMatch = spec.dom.values.has(day.getUTCDate());
    const dowMatch = spec.dow.values.has(day.getUTCDay());
    const dayOk = spec.dom.star || spec.dow.star ? domMatch && dowMatch : domMatch || dowMatch;
    if (!dayOk) continue;
    if (previous !== undefined) step = Math.min(step, d - previous);
    previous = d;
  }
  if (Number.isFinite(step)) shortest = Math.min(shortest, step * dayMs - span);
  return shortest;
}

const descriptors: Record<string, () => Spec> = {
  '@yearly': () => ({ minute: one(0), hour: one(0), dom: one(1), month: one(1), dow: all(dow) }),
  '@monthly': () => ({ minute: one(0), hour: one(0), dom: one(1), month: all(months), dow: all(dow) }),
  '@weekly': () => ({ minute: one(0), hour: one(0), dom: all(dom), month: all(months), dow: one(0) }),
  '@daily': () => ({ minute: one(0), hour: one(0), dom: all(dom), month: all(months), dow: all(dow) }),
  '@hourly': () => ({ minute: one(0), hour: all(hours), dom: all(dom), month: all(months), dow: all(dow) }),
};
descriptors['@annually'] = descriptors['@yearly']!;
descriptors['@midnight'] = descriptors['@daily']!;

/**
 * The shortest time between two consecutive runs of `schedule`: exact for cron fields and descriptors
 * (see specGapMs); otherwise looked for in up to 1,000 runs within a year of the first run after `from`,
 * stopping early at the first gap shorter than `below`.
 */
export function shortestGapMs(schedule: CronSchedule, from: Date, below = 0): number {
  if (schedule.gapMs) return schedule.gapMs();
  let previous = schedule.next(from);
  // A year from the first run, not from `from`: a rare first run (29 February) still counts its next ones.
  const end = (previous?.getTime() ?? from.getTime()) + 366 * dayMs;
  let shortest = Number.POSITIVE_INFINITY;
  for (let i = 0; previous && i < 1000; i++) {
    const next = schedule.next(previous);
    if (!next || next.getTime() > end) break;
    shortest = Math.min(shortest, next.getTime() - previous.getTime());
    if (shortest < below) break;
    previous = next;
  }
  return shortest;
}

/** A whole-second duration as Go prints it: `1h30m`, `45s`, `0s`. */
export function formatDuration(ms: number): string {
  let seconds = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(seconds / 3600);
  seconds -= h * 3600;
  const m = Math.floor(seconds / 60);
  seconds -= m * 60;
  const text = `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${seconds || (!h && !m) ? `${seconds}s` : ''}`;
  return text;
}

/** Parses `text` as Velero does; the error reads like Velero's validation error. */
export function parseCron(text: string): CronParse {
  try {
    let spec = text.trim();
    if (spec === '') return { error: 'empty spec string' };
    let zone: string | undefined;
    const tz = /^(?:CRON_)?TZ=(\S+)\s*/.exec(spec);
    if (tz) {
      zone = tz[1]!;
      try {
        new Intl.DateTimeFormat('en', { timeZone: zone });
      } catch {
        return { error: `provided bad location ${zone}: unknown time zone ${zone}` };
      }
      spec = spec.slice(tz[0].length);
    }
    const withZone = (s: CronSchedule): CronParse => ({ schedule: zone ? { ...s, zone } : s });
    if (spec.startsWith('@every ')) {
      const ms = parseDuration(spec.slice('@every '.length).trim());
      if (ms === undefined) return { error: `failed to parse duration ${spec}` };
      // Every(): at least one second, whole seconds; Next() counts from the whole second before `after`.
      const delay = Math.max(1000, Math.floor(ms / 1000) * 1000);
      return withZone({
        next: (after) => new Date(Math.floor(after.getTime() / 1000) * 1000 + delay),
        gapMs: () => delay,
      });
    }
    if (spec.startsWith('@')) {
      const make = descriptors[spec];
      if (!make) return { error: `unrecognized descriptor: ${spec}` };
      const s = make();
      return withZone({ next: (after) => nextOf(s, after), gapMs: () => specGapMs(s) });
    }
    const fields = spec.split(/\s+/);
    if (fields.length !== 5) return { error: `expected exactly 5 fields, found ${fields.length}: ${spec}` };
    const s: Spec = {
      minute: field(fields[0]!, minutes),
      hour: field(fields[1]!, hours),
      dom: field(fields[2]!, dom),
      month: field(fields[3]!, months),
      dow: field(fields[4]!, dow),
    };
    return withZone({ next: (after) => nextOf(s, after), gapMs: () => specGapMs(s) });
  } catch (err) {
    if (err instanceof CronError) return { error: err.message };
    throw err;
  }
}
