// When tenantkit holds a NonAdminSchedule's Velero Schedule paused although the tenant did not pause it:
// Velero makes a schedule's runs by itself, so the only way to keep them within the admin's bounds is to
// keep the Velero Schedule paused until a run is allowed (Velero makes the missed run as soon as it is
// unpaused, once). Three bounds, each decided from what the tenant cannot write (Velero's objects and
// their status in Velero's namespace, creation times), never from the expression alone:
// - the schedule limit per namespace: schedules beyond it (in creation order) make no runs;
// - the minimum interval between actual runs: after a run, nothing before lastRun + minimumScheduleInterval,
//   whatever the expression became since (the next run is max(next cron time, lastRun + interval));
// - the namespace's share of Velero's queue: its unfinished Backups (NonAdminBackups, schedule runs,
//   anything made for it) count, and only as many schedules as there are free places may run, the ones
//   due first. Pure.
import type { NonAdminSchedule } from '../../../crds/backup.ts';
import type { BackupPolicy } from '../../policy/config.ts';
import { formatDuration, parseCron } from '../../policy/cron.ts';
import type { VeleroSchedule } from './runs.ts';

export interface Hold {
  reason: string;
  message: string;
  /** When the hold ends by itself (a requeue then); undefined: an event ends it. */
  untilMs?: number;
}

const time = (v: unknown): number => (typeof v === 'string' ? Date.parse(v) : Number.NaN);
const minuteMs = 60_000;

/** Whether `a` comes before `b` among a namespace's schedules: creation time, then name. */
export const createdBefore = (a: NonAdminSchedule, b: NonAdminSchedule) => {
  const x = a.metadata.creationTimestamp ?? '';
  const y = b.metadata.creationTimestamp ?? '';
  return x < y || (x === y && a.metadata.name! < b.metadata.name!);
};

/** Velero's own starting point for the next run: the last run, the last skip or the Schedule's creation. */
function lastOf(schedule: VeleroSchedule): number {
  const times = [
    schedule.status?.lastBackup,
    schedule.status?.lastSkipped,
    schedule.metadata.creationTimestamp,
  ]
    .map(time)
    .filter((t) => !Number.isNaN(t));
  return times.length > 0 ? Math.max(...times) : Number.NaN;
}

/** When Velero would run `schedule` next if it were not paused (NaN when unknown). */
export function dueOf(schedule: VeleroSchedule): number {
  const parsed = parseCron(String(schedule.spec?.schedule ?? ''));
  const from = lastOf(schedule);
  if (!parsed.schedule || Number.isNaN(from)) return Number.NaN;
  return parsed.schedule.next(new Date(from))?.getTime() ?? Number.NaN;
}

/**
 * The minimum interval between actual runs: `lastRunMs` is the newest run Velero made for the schedule
 * (its status or its Backups, both in Velero's namespace). Counted from the run's minute, as cron counts.
 */
export function intervalHold(
  schedule: VeleroSchedule,
  lastRunMs: number,
  policy: BackupPolicy,
  nowMs: number,
): Hold | undefined {
  const interval = policy.minimumScheduleIntervalMs;
  if (interval === 0 || Number.isNaN(lastRunMs)) return undefined;
  const until = Math.floor(lastRunMs / minuteMs) * minuteMs + interval;
  const due = dueOf(schedule);
  if (nowMs >= until || (!Number.isNaN(due) && due >= until)) return undefined;
  return {
    reason: 'MinimumInterval',
    message: `the last run was at ${new Date(lastRunMs).toISOString()} and the admin requires ${formatDuration(interval)} between runs (NonAdminBackupConfig "cluster" spec.nonAdmin.minimumScheduleInterval): the next run is at ${new Date(until).toISOString()} at the earliest`,
    untilMs: until,
  };
}

/** The schedule limit: `nas` is beyond it when `limit` schedules of its namespace were created before it. */
export function limitHold(nas: NonAdminSchedule, all: NonAdminSchedule[], limit: number): Hold | undefined {
  if (limit === 0) return undefined;
  const before = all.filter(
    (n) => n !== nas && n.metadata.namespace === nas.metadata.namespace && createdBefore(n, nas),
  ).length;
  if (before < limit) return undefined;
  return {
    reason: 'NamespaceScheduleLimit',
    message: `namespace ${nas.metadata.namespace} has ${before} NonAdminSchedules created before this one and the admin allows ${limit} per namespace (NonAdminBackupConfig "cluster" spec.nonAdmin.maxSchedulesPerNamespace): this one makes no runs; delete it or another schedule`,
  };
}

/**
 * How long before its next run a schedule takes a place in the namespace's share of Velero's queue. One
 * due later needs none yet: it is not held (Velero makes nothing before it is due) and is looked at again
 * this long before it is due (`queueRecheckAt`), when it competes for a place with the others due by then.
 */
export const queueHorizonMs = 2 * minuteMs;

/** When a schedule not held for the queue must be looked at again (undefined: no need, or now). */
export function queueRecheckAt(schedule: VeleroSchedule, nowMs: number): number | undefined {
  const due = dueOf(schedule);
  return !Number.isNaN(due) && due - queueHorizonMs > nowMs ? due - queueHorizonMs : undefined;
}

/**
 * The namespace's share of Velero's queue: with `inQueue` of its Backups unfinished in Velero, the
 * `limit - inQueue` schedules due first (then oldest) among the `candidates` due within `queueHorizonMs`
 * may run; `nas` waits otherwise. A schedule due later is not held at all (a yearly schedule must not be
 * paused for months because other schedules take the places).
 */
export function queueHold(
  nas: NonAdminSchedule,
  candidates: { nas: NonAdminSchedule; schedule: VeleroSchedule }[],
  inQueue: number,
  limit: number,
  nowMs: number,
): Hold | undefined {
  if (limit === 0) return undefined;
  const due = (s: VeleroSchedule) => {
    const d = dueOf(s);
    return Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
  };
  // An unknown due time counts as due now: it competes (ranked last) rather than running unbounded.
  const soon = candidates.filter((c) => {
    const d = dueOf(c.schedule);
    return Number.isNaN(d) || d <= nowMs + queueHorizonMs;
  });
  const own = candidates.find((c) => c.nas === nas);
  if (own && !soon.includes(own)) return undefined;
  const free = limit - inQueue;
  const ranked = [...soon].sort(
    (a, b) => due(a.schedule) - due(b.schedule) || (createdBefore(a.nas, b.nas) ? -1 : 1),
  );
  const at = ranked.findIndex((c) => c.nas === nas);
  if (at >= 0 && at < free) return undefined;
  const ahead = Math.max(0, at >= 0 ? at : ranked.length);
  return {
    reason: 'NamespaceQueueLimit',
    message: `${inQueue} backups of namespace ${nas.metadata.namespace} are in Velero's queue and the admin allows ${limit} at once (NonAdminBackupConfig "cluster" spec.nonAdmin.maxQueuedBackupsPerNamespace)${ahead > 0 ? `, and ${ahead} of its schedules due before this one take ${ahead === 1 ? 'a place' : 'places'} first` : ''}; this schedule's next run is made when a place is free`,
  };
}
