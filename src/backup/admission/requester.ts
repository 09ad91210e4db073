// Who asked for a NonAdminRestore, and therefore whose rights bound what it may write: whoever last
// decided what it restores. Recorded by a mutating admission webhook from the authenticated userInfo
// (never from anything the tenant wrote) of the CREATE request and of every UPDATE that changes `spec`
// (by anyone, the creator included: their groups may have changed since), kept in an annotation no other
// update may change (RequesterAnnotation, ../model.ts, which also reads it back), and copied by the
// controller onto the Velero Restore (Velero's namespace: tenants cannot write there). Velero's restore
// guard plugin (plugins/restore-guard) then checks every item as that user.
import type { NonAdminRestore } from '../../crds/backup.ts';
import { type Json, jsonEqual } from '../../kube/merge-patch.ts';
import { type AdmissionRequest, deny, mutate, type Verdict } from '../../webhook/admission.ts';
import { RequesterAnnotation, requesterValue } from '../model.ts';

/**
 * The annotation's value after `request` (CREATE or UPDATE): the request's user when it decides what
 * the restore restores (a CREATE, or an UPDATE that changes `spec`), otherwise the value it had
 * (undefined for an object that never had one: an updater who changes no spec is not the requester,
 * and the controller refuses such an object instead).
 */
function recordedAfter(request: AdmissionRequest<NonAdminRestore>): string | undefined {
  const decides =
    request.operation === 'CREATE' ||
    !jsonEqual((request.object?.spec ?? null) as Json, (request.oldObject?.spec ?? null) as Json);
  if (decides) return requesterValue(request.userInfo);
  return request.oldObject?.metadata.annotations?.[RequesterAnnotation];
}

/**
 * Mutating admission for NonAdminRestores: the annotation is set from the request's userInfo on CREATE
 * and on every UPDATE that changes `spec` (whoever makes it: the restore then runs with the rights of
 * the user who last decided what it restores), replacing whatever the object carried; any other UPDATE
 * keeps the value it had (an apply that leaves it out does not remove it, one that changes it changes
 * nothing). Once the controller accepted a restore its spec cannot change (admission/backup-restore.ts).
 */
export function recordRequester(request: AdmissionRequest<NonAdminRestore>): Verdict {
  const nar = request.object;
  if (!nar || (request.operation !== 'CREATE' && request.operation !== 'UPDATE')) return { allowed: true };
  const annotations = { ...(nar.metadata.annotations ?? {}) };
  const recorded = recordedAfter(request);
  if (recorded === undefined) delete annotations[RequesterAnnotation];
  else annotations[RequesterAnnotation] = recorded;
  return mutate(nar, { ...nar, metadata: { ...nar.metadata, annotations } });
}

/**
 * Validating side (after every mutation): on UPDATE the annotation is exactly what `recordRequester`
 * makes of this request (the updater when the spec changed, otherwise the old value), so a bypassed or
 * later mutating webhook cannot leave another user's record on a spec this user wrote.
 */
export function requesterUnchanged(request: AdmissionRequest<NonAdminRestore>): Verdict | undefined {
  if (request.operation !== 'UPDATE' || !request.object || !request.oldObject) return undefined;
  const expected = recordedAfter(request);
  const after = request.object.metadata.annotations?.[RequesterAnnotation];
  if (expected === after) return undefined;
  return deny(
    `metadata.annotations["${RequesterAnnotation}"] records who last changed this NonAdminRestore's spec and is set by tenantkit alone; leave it as it is`,
    422,
    'Invalid',
  );
}
