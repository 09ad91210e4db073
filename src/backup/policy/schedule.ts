// What a tenant may ask of a NonAdminSchedule, checked the same way by the admission webhook and the
// controller: a cron expression Velero accepts, no more often than the admin allows, and the
// NonAdminBackup rules for its template, worded for a schedule.
import type { NonAdminSchedule } from '../../crds/backup.ts';
import { formatDuration as formatMs, parseCron, shortestGapMs } from './cron.ts';
import type { JsonObject } from './enforce.ts';
import { backupSpecProblems } from './validate.ts';

/** The template's problems, worded for a schedule (the rules are the NonAdminBackup ones). */
export function scheduleProblems(
  namespace: string,
  spec: NonAdminSchedule['spec'] | undefined,
  enforced: JsonObject,
  hasLocation?: (name: string) => boolean,
  /** The admin's minimumScheduleInterval in milliseconds (0: any). */
  minimumIntervalMs = 0,
): string[] {
  const problems: string[] = [];
  const cron = spec?.schedule ?? '';
  const parsed = parseCron(cron);
  if (parsed.error) {
    problems.push(
      `spec.schedule "${cron}" is not a valid schedule (${parsed.error}): use five cron fields (minute hour day-of-month month day-of-week), e.g. "0 3 * * *", or a descriptor such as @daily or "@every 6h"`,
    );
  } else if (minimumIntervalMs > 0 && parsed.schedule) {
    const gap = shortestGapMs(parsed.schedule, new Date(), minimumIntervalMs);
    if (gap < minimumIntervalMs) {
      problems.push(
        `spec.schedule "${cron}" runs as often as every ${formatMs(gap)}, more often than this cluster allows (spec.nonAdmin.minimumScheduleInterval of NonAdminBackupConfig "cluster": ${formatMs(minimumIntervalMs)}); schedule runs at least ${formatMs(minimumIntervalMs)} apart, e.g. "@every ${formatMs(minimumIntervalMs)}" or "0 3 * * *"`,
      );
    }
  }
  const template = templateOf(spec);
  for (const p of backupSpecProblems(namespace, template, enforced, hasLocation)) {
    problems.push(
      p
        .replaceAll('NonAdminBackup spec.backupSpec', 'NonAdminSchedule spec.template.backupSpec')
        .replaceAll('spec.backupSpec', 'spec.template.backupSpec')
        .replaceAll('make a new NonAdminBackup', 'change this NonAdminSchedule'),
    );
  }
  return problems;
}

/** The tenant's template as a Velero BackupSpec (backupType is OADP's, Velero v1.18 has no such field). */
export function templateOf(spec: NonAdminSchedule['spec'] | undefined): JsonObject {
  const { backupType: _type, ...template } = (spec?.template?.backupSpec ?? {}) as JsonObject;
  return template;
}

/**
 * The admin's limit on schedules per namespace (policy.maxSchedulesPerNamespace): `name` is refused when
 * `others` (the namespace's other schedules that come before it) already fill it.
 */
export function scheduleLimitProblem(namespace: string, others: number, limit: number): string | undefined {
  if (limit === 0 || others < limit) return undefined;
  return `namespace ${namespace} already has ${others} NonAdminSchedules and the admin allows ${limit} per namespace (NonAdminBackupConfig "cluster" spec.nonAdmin.maxSchedulesPerNamespace): delete one (kubectl delete nonadminschedule <name> -n ${namespace}) or merge its work into an existing schedule`;
}
