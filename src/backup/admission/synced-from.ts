// The sync label of a NonAdminBackup (model.ts, Labels.syncedFrom) asks the controller to adopt an
// existing Velero Backup instead of making one: admission lets a tenant name only a Backup its namespace
// owns (velero/ownerships.ts), and never change the label once set.
import type { NonAdminBackup } from '../../crds/backup.ts';
import { type AdmissionRequest, deny, type Verdict } from '../../webhook/admission.ts';
import { Labels, syncedFromOf } from '../model.ts';
import { currentPolicy } from '../policy/config.ts';
import { adoptionProblem, type Ownerships } from '../velero/ownerships.ts';

/**
 * Admission: a tenant may not point the sync label at a backup that is not its namespace's, nor change or
 * remove it once set (tenantkit's own NABs always name their namespace's backups, so they pass).
 */
export function reviewSyncedFrom(
  o: Ownerships,
  configs: Parameters<typeof currentPolicy>[0],
  request: AdmissionRequest<NonAdminBackup>,
): Verdict | undefined {
  const nab = request.object;
  if (!nab || request.operation === 'DELETE') return undefined;
  const now = syncedFromOf(nab);
  const before = request.oldObject ? syncedFromOf(request.oldObject) : undefined;
  const invalid = (message: string): Verdict => deny(message, 422, 'Invalid');
  if (request.operation === 'UPDATE' && request.oldObject && before !== now) {
    if (before !== undefined || request.oldObject.status?.veleroBackup?.nacuuid) {
      return invalid(
        `label ${Labels.syncedFrom} cannot be added, changed or removed on an existing NonAdminBackup; create a new NonAdminBackup instead`,
      );
    }
  }
  if (now === undefined || now === before) return undefined;
  const namespace = request.namespace ?? nab.metadata.namespace ?? '';
  const problem = adoptionProblem(o, currentPolicy(configs), namespace, now);
  return problem ? invalid(problem) : undefined;
}
