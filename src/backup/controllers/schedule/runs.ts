// A NonAdminSchedule's Velero side as the tenant sees it: the names and labels of what tenantkit makes
// for it, its runs newest first, the next run Velero will make, and the Scheduled condition. Pure.
import type { NonAdminBackup, NonAdminSchedule } from '../../../crds/backup.ts';
import type { ConditionInput } from '../../../kube/conditions.ts';
import type { KubeObject } from '../../../kube/resources.ts';
import { Labels, ManagedByValue, type VeleroBackup } from '../../model.ts';
import { parseCron } from '../../policy/cron.ts';
import type { JsonObject } from '../../policy/enforce.ts';
import { nacObjectName } from '../../velero/names.ts';
import { syncedNabName } from '../sync/adopt.ts';

type Status = NonNullable<NonAdminSchedule['status']>;
type ScheduledBackup = NonNullable<Status['recentBackups']>[number];

export type VeleroSchedule = KubeObject & {
  spec?: JsonObject;
  status?: {
    phase?: string;
    lastBackup?: string | null;
    lastSkipped?: string | null;
    validationErrors?: string[];
  };
};

const time = (v: unknown): number => (typeof v === 'string' ? Date.parse(v) : Number.NaN);

/**
 * `<namespace>-<name>-<uuid>` in at most 48 characters: Velero names each run `<schedule>-<timestamp>`
 * (15 more), and a run's name must stay a valid label value (63) for the NAB's sync label.
 */
export function scheduleObjectName(namespace: string, name: string): string {
  const room = 10;
  let ns = namespace;
  let n = name;
  if (ns.length + n.length > room) n = n.slice(0, Math.max(0, room - ns.length));
  if (ns.length + n.length > room) ns = ns.slice(0, room);
  return nacObjectName(ns, n);
}

/** Tenant labels on the runs, less any that tenantkit's or Velero's bookkeeping reads. */
export function runLabels(template: JsonObject, uuid: string): Record<string, string> {
  const metadata = template.metadata as { labels?: Record<string, string> } | undefined;
  const tenant = Object.entries(metadata?.labels ?? {}).filter(
    ([k]) => !k.startsWith('openshift.io/') && !k.startsWith('velero.io/') && k !== Labels.managedBy,
  );
  return {
    ...Object.fromEntries(tenant),
    [Labels.managedBy]: ManagedByValue,
    [Labels.oadp]: 'True',
    [Labels.nasUuid]: uuid,
  };
}

/** When Velero made (or, lacking that, created) a run: what orders runs newest first. */
export const runTime = (b: VeleroBackup): number => {
  const start = time(b.status?.startTimestamp);
  return Number.isNaN(start) ? time(b.metadata.creationTimestamp) : start;
};

export function scheduled(run: VeleroBackup, ns: string, nabs: NonAdminBackup[]): ScheduledBackup {
  const status = (run.status ?? {}) as Record<string, unknown>;
  const name = nabs[0]?.metadata.name ?? syncedNabName(run, ns, () => false);
  const entry: Record<string, unknown> = { name, veleroBackupName: run.metadata.name! };
  for (const field of ['phase', 'startTimestamp', 'completionTimestamp', 'expiration']) {
    if (typeof status[field] === 'string') entry[field] = status[field];
  }
  return entry as ScheduledBackup;
}

/**
 * When Velero runs the schedule next, as its schedule controller computes it: the cron expression's next
 * time after the last run, the last skip or (never run) the Schedule's creation. Omitted when paused or
 * when the expression names a time zone other than UTC (computed in UTC, as Velero in a container does).
 */
export function nextRunOf(schedule: VeleroSchedule, paused: boolean): string | undefined {
  if (paused || schedule.status?.phase !== 'Enabled') return undefined;
  const parsed = parseCron(String(schedule.spec?.schedule ?? ''));
  if (!parsed.schedule || (parsed.schedule.zone && !/^(Etc\/)?UTC$/.test(parsed.schedule.zone))) {
    return undefined;
  }
  const from = Math.max(
    ...[schedule.status.lastBackup, schedule.status.lastSkipped, schedule.metadata.creationTimestamp]
      .map(time)
      .filter((t) => !Number.isNaN(t)),
  );
  if (!Number.isFinite(from)) return undefined;
  return parsed.schedule
    .next(new Date(from))
    ?.toISOString()
    .replace(/\.000Z$/, 'Z');
}

/** The Scheduled condition: paused, refused by Velero, or Velero's phase. */
export function scheduledCondition(
  schedule: VeleroSchedule,
  paused: boolean,
): Omit<ConditionInput, 'observedGeneration'> {
  const phase = schedule.status?.phase;
  if (paused) {
    return {
      type: 'Scheduled',
      status: 'False',
      reason: 'SchedulePaused',
      message: 'paused: no new backups until spec.paused is false',
    };
  }
  if (phase === 'FailedValidation') {
    return {
      type: 'Scheduled',
      status: 'False',
      reason: 'ScheduleFailedValidation',
      message: `Velero refused the schedule: ${(schedule.status?.validationErrors ?? []).join('; ')}`,
    };
  }
  return {
    type: 'Scheduled',
    status: phase === 'Enabled' ? 'True' : 'Unknown',
    reason: phase === 'Enabled' ? 'ScheduleEnabled' : 'SchedulePending',
    message: `Velero Schedule ${schedule.metadata.name} is ${phase ?? 'not read by Velero yet'}`,
  };
}
