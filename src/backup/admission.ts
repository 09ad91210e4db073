// Admission for NonAdminBackups: the controller's checks, made before the object is stored, so that
// `kubectl apply` prints the rejection. The controller keeps checking too (a webhook can be bypassed by
// an admin or be down); both use the same rules and messages.
import type { NonAdminBackup, NonAdminBackupConfig } from '../api/backup.ts';
import type { Informer } from '../kube/informer.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../webhook/admission.ts';
import { currentPolicy } from './config.ts';
import { type JsonObject, jsonEqual } from './enforce.ts';
import { backupSpecProblems } from './validate.ts';

const invalid = (message: string) => deny(message, 422, 'Invalid');

export function reviewNonAdminBackup(
  configs: Informer<NonAdminBackupConfig>,
  request: AdmissionRequest<NonAdminBackup>,
): Verdict {
  const nab = request.object;
  if (!nab || request.operation === 'DELETE') return allow();
  const namespace = request.namespace ?? nab.metadata.namespace ?? '';
  const spec = (nab.spec?.backupSpec ?? {}) as JsonObject;
  const old = request.oldObject;
  if (request.operation === 'UPDATE' && old) {
    // Once a Velero Backup was made for it, what it asked for is history: only deleteBackup may change.
    const accepted = old.status?.veleroBackup?.nacuuid;
    if (accepted && !jsonEqual(spec, (old.spec?.backupSpec ?? {}) as JsonObject)) {
      return invalid(
        `spec.backupSpec cannot change after the backup was accepted (Velero Backup ${old.status?.veleroBackup?.name ?? accepted}); create a new NonAdminBackup instead`,
      );
    }
    if (accepted || jsonEqual(spec, (old.spec?.backupSpec ?? {}) as JsonObject)) return allow();
  }
  const policy = currentPolicy(configs);
  if (!policy.enabled) {
    return invalid(
      'non-admin backups are not enabled on this cluster: an admin must set spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"',
    );
  }
  const problems = backupSpecProblems(namespace, spec, policy.enforceBackupSpec);
  return problems.length > 0 ? invalid(problems.join('; ')) : allow();
}
