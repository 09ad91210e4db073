// Admission for NonAdminBackups and NonAdminRestores: the controllers' checks, made before the object is stored, so that
// `kubectl apply` prints the rejection. The controller keeps checking too (a webhook can be bypassed by
// an admin or be down); both use the same rules and messages.
import type { NonAdminBackup, NonAdminBackupConfig, NonAdminRestore } from '../../crds/backup.ts';
import type { Informer } from '../../kube/informer.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../../webhook/admission.ts';
import { currentPolicy } from '../policy/config.ts';
import { type JsonObject, jsonEqual } from '../policy/enforce.ts';
import { backupSpecProblems, restoreSpecProblems, specShapeProblems } from '../policy/validate.ts';

const invalid = (message: string) => deny(message, 422, 'Invalid');

export function reviewNonAdminBackup(
  configs: Informer<NonAdminBackupConfig>,
  request: AdmissionRequest<NonAdminBackup>,
  /** Whether NonAdminBackupStorageLocation `name` exists in `namespace` (from the webhook's cache). */
  hasLocation?: (namespace: string, name: string) => boolean,
): Verdict {
  const nab = request.object;
  if (!nab || request.operation === 'DELETE') return allow();
  const shape = specShapeProblems(nab.spec, 'backupSpec');
  if (shape.length > 0) return invalid(shape.join('; '));
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
  const problems = backupSpecProblems(
    namespace,
    spec,
    policy.enforceBackupSpec,
    hasLocation && ((name) => hasLocation(namespace, name)),
  );
  if (problems.length > 0) return invalid(problems.join('; '));
  return allow(policy.enabled ? [] : [disabledWarning]);
}

// Disabled is the cluster's state, not the tenant's mistake: the object is kept and runs once enabled.
const disabledWarning =
  'non-admin backup and restore are not enabled on this cluster yet; this request waits until an admin sets spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"';

/**
 * Admission for NonAdminRestores: every rule that does not depend on the NonAdminBackup it names (that
 * one may still be running, or come later; the controller holds the restore until it completed).
 */
export function reviewNonAdminRestore(
  configs: Informer<NonAdminBackupConfig>,
  request: AdmissionRequest<NonAdminRestore>,
): Verdict {
  const nar = request.object;
  if (!nar || request.operation === 'DELETE') return allow();
  const shape = specShapeProblems(nar.spec, 'restoreSpec');
  if (shape.length > 0) return invalid(shape.join('; '));
  const namespace = request.namespace ?? nar.metadata.namespace ?? '';
  const spec = (nar.spec?.restoreSpec ?? {}) as JsonObject;
  const old = request.oldObject;
  if (request.operation === 'UPDATE' && old) {
    const accepted = old.status?.veleroRestore?.nacuuid;
    const unchanged = jsonEqual(spec, (old.spec?.restoreSpec ?? {}) as JsonObject);
    if (accepted && !unchanged) {
      return invalid(
        `spec.restoreSpec cannot change after the restore was accepted (Velero Restore ${old.status?.veleroRestore?.name ?? accepted}); create a new NonAdminRestore instead`,
      );
    }
    if (accepted || unchanged) return allow();
  }
  const policy = currentPolicy(configs);
  const problems = restoreSpecProblems(namespace, spec, policy.enforceRestoreSpec);
  if (problems.length > 0) return invalid(problems.join('; '));
  return allow(policy.enabled ? [] : [disabledWarning]);
}
