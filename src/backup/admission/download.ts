// Admission for NonAdminDownloadRequests: a well-formed target (kind known, name present), so that
// `kubectl apply` prints the mistake; and a target that does not change once the request was accepted.
// Which NonAdminBackup or NonAdminRestore the name means is the controller's to judge (it may come later).
import type { NonAdminDownloadRequest } from '../../crds/backup.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../../webhook/admission.ts';
import { targetProblems } from '../policy/nadr-target.ts';

export function reviewNonAdminDownloadRequest(request: AdmissionRequest<NonAdminDownloadRequest>): Verdict {
  const nadr = request.object;
  if (!nadr || request.operation === 'DELETE') return allow();
  const target = nadr.spec?.target;
  const old = request.oldObject;
  if (request.operation === 'UPDATE' && old) {
    const before = old.spec?.target;
    const same = before?.kind === target?.kind && before?.name === target?.name;
    if (same) return allow();
    // Accepted: a Velero DownloadRequest exists (or is being made) for the old target.
    if (old.status?.phase === 'New' || old.status?.phase === 'Created') {
      return deny(
        `spec.target cannot change after the request was accepted (it downloads ${before?.kind} of ${before?.name}); create a new NonAdminDownloadRequest instead`,
        422,
        'Invalid',
      );
    }
  }
  const problems = targetProblems(target);
  return problems.length > 0 ? deny(problems.join('; '), 422, 'Invalid') : allow();
}
