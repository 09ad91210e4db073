// Admission for NonAdminSchedules: the controller's checks (a valid cron expression, the NonAdminBackup
// rules for the template, the admin's enforced fields), made before the object is stored so that
// `kubectl apply` prints the rejection. Schedules stay editable, so every change is checked again.
import type { NonAdminBackupConfig, NonAdminSchedule } from '../../crds/backup.ts';
import type { Informer } from '../../kube/informer.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../../webhook/admission.ts';
import { currentPolicy } from '../policy/config.ts';
import { jsonEqual } from '../policy/enforce.ts';
import { scheduleLimitProblem, scheduleProblems } from '../policy/schedule.ts';

export function reviewNonAdminSchedule(
  configs: Informer<NonAdminBackupConfig>,
  request: AdmissionRequest<NonAdminSchedule>,
  /** Whether NonAdminBackupStorageLocation `name` exists in `namespace` (from the webhook's cache). */
  hasLocation?: (namespace: string, name: string) => boolean,
  /** How many NonAdminSchedules `namespace` has (from the webhook's cache). */
  schedulesIn?: (namespace: string) => number,
): Verdict {
  const nas = request.object;
  if (!nas || request.operation === 'DELETE') return allow();
  const old = request.oldObject;
  // Status, metadata and pause/skip changes need no check; an unchanged spec was checked already (a
  // policy tightened since is the controller's to report, without blocking the tenant's other edits).
  if (
    request.operation === 'UPDATE' &&
    old &&
    jsonEqual((nas.spec?.template ?? null) as never, (old.spec?.template ?? null) as never) &&
    nas.spec?.schedule === old.spec?.schedule
  ) {
    return allow();
  }
  const namespace = request.namespace ?? nas.metadata.namespace ?? '';
  const policy = currentPolicy(configs);
  // The limit is for new schedules; the controller holds any beyond it that got stored (races, a lowered limit).
  const overLimit =
    request.operation === 'CREATE' && schedulesIn
      ? scheduleLimitProblem(namespace, schedulesIn(namespace), policy.maxSchedulesPerNamespace)
      : undefined;
  if (overLimit) return deny(overLimit, 403, 'Forbidden');
  const problems = scheduleProblems(
    namespace,
    nas.spec,
    policy.enforceBackupSpec,
    hasLocation && ((name) => hasLocation(namespace, name)),
    policy.minimumScheduleIntervalMs,
  );
  if (problems.length > 0) return deny(problems.join('; '), 422, 'Invalid');
  return allow(
    policy.enabled
      ? []
      : [
          'non-admin backup and restore are not enabled on this cluster yet; this schedule waits until an admin sets spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"',
        ],
  );
}
