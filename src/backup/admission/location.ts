// Admission for NonAdminBackupStorageLocations: the controller's spec checks (policy/bsl-validate.ts), made before
// the object is stored, so that `kubectl apply` prints the rejection. The Secret's content is checked by
// the controller only (status, condition SecretSynced=False and a Warning Event): checking it here would
// need `get` on every Secret of the cluster for the webhook too, and the Secret can change after
// admission anyway, so the controller must check it (and does, on every sync) whatever the webhook does.
import type { NonAdminBackupConfig, NonAdminBackupStorageLocation } from '../../crds/backup.ts';
import type { Informer } from '../../kube/informer.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../../webhook/admission.ts';
import { bslSpecProblems } from '../policy/bsl-validate.ts';
import { currentPolicy } from '../policy/config.ts';
import { type JsonObject, jsonEqual } from '../policy/enforce.ts';

export function reviewNonAdminBackupStorageLocation(
  configs: Informer<NonAdminBackupConfig>,
  admission: AdmissionRequest,
): Verdict {
  const request = admission as AdmissionRequest<NonAdminBackupStorageLocation>;
  const nabsl = request.object;
  if (!nabsl || request.operation === 'DELETE') return allow();
  const namespace = request.namespace ?? nabsl.metadata.namespace ?? '';
  const spec = (nabsl.spec?.backupStorageLocationSpec ?? {}) as JsonObject;
  const old = request.oldObject;
  // Metadata-only updates (labels, the controller's finalizer) always pass: a policy tightened since
  // must not keep a location from being deleted. The controller judges the stored spec again.
  if (request.operation === 'UPDATE' && old) {
    if (jsonEqual(spec, (old.spec?.backupStorageLocationSpec ?? {}) as JsonObject)) return allow();
  }
  const policy = currentPolicy(configs);
  const problems = bslSpecProblems(namespace, spec, policy.enforceBSLSpec, policy.allowedStorageEndpoints);
  if (problems.length > 0) return deny(problems.join('; '), 422, 'Invalid');
  const warnings: string[] = [];
  if (!policy.enabled) {
    warnings.push(
      'non-admin backup is not enabled on this cluster yet; this location waits until an admin sets spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"',
    );
  }
  if (policy.requireApprovalForBSL) {
    warnings.push(
      'a cluster admin must approve this location before it is used (kubectl get nabsl shows REQUEST-APPROVED); changing its spec later asks for approval again',
    );
  }
  return allow(warnings);
}
