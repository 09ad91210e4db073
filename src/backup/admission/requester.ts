// Who asked for a NonAdminRestore, and therefore whose rights bound what it may write.
// Recorded once, by a mutating admission webhook, from the CREATE request's authenticated userInfo
// (never from anything the tenant wrote), kept in an annotation no update may change, and copied by
// the controller onto the Velero Restore (Velero's namespace: tenants cannot write there). Velero's
// restore guard plugin (testenv/velero/cmd/tenantkit-restore-guard) then checks every item as that user.
import type { NonAdminRestore } from '../../api/backup.ts';
import type { UserInfo } from '../../kube/access.ts';
import { type AdmissionRequest, deny, mutate, type Verdict } from '../../webhook/admission.ts';

/** On the NonAdminRestore and on its Velero Restore: the requester's UserInfo as JSON. */
export const RequesterAnnotation = 'backup.tenantkit.io/requester';

/** The Velero plugin that enforces the requester's rights per item (its registered name). */
export const RestoreGuardPlugin = 'tenantkit.io/restore-guard';

/** The requester recorded on `o`, or an explanation of why there is none that can be trusted. */
export function requesterOf(o: { metadata: { annotations?: Record<string, string> } }): UserInfo | string {
  const raw = o.metadata.annotations?.[RequesterAnnotation];
  if (raw === undefined) {
    return `it has no ${RequesterAnnotation} annotation (it was created before tenantkit recorded requesters, or while the admission webhook was bypassed); delete it and create it again`;
  }
  try {
    const parsed = JSON.parse(raw) as UserInfo;
    if (typeof parsed?.username === 'string' && parsed.username !== '') return parsed;
  } catch {}
  return `its ${RequesterAnnotation} annotation is not a user record tenantkit wrote; delete it and create it again`;
}

/** The annotation's value for `user`: only the fields of authentication.k8s.io UserInfo, in one order. */
export function requesterValue(user: UserInfo): string {
  return JSON.stringify({
    username: user.username,
    ...(user.uid ? { uid: user.uid } : {}),
    ...(user.groups?.length ? { groups: user.groups } : {}),
    ...(user.extra && Object.keys(user.extra).length ? { extra: user.extra } : {}),
  });
}

/**
 * Mutating admission for NonAdminRestores: on CREATE the annotation is set from the request's userInfo,
 * replacing whatever the object carried; on UPDATE it keeps the value it had (an apply that leaves it
 * out does not remove it, one that changes it changes nothing). An object that never had one does not
 * get one on update: the updater is not the requester, and the controller refuses it instead.
 */
export function recordRequester(request: AdmissionRequest<NonAdminRestore>): Verdict {
  const nar = request.object;
  if (!nar || (request.operation !== 'CREATE' && request.operation !== 'UPDATE')) return { allowed: true };
  const annotations = { ...(nar.metadata.annotations ?? {}) };
  if (request.operation === 'CREATE') {
    annotations[RequesterAnnotation] = requesterValue(request.userInfo);
  } else {
    const kept = request.oldObject?.metadata.annotations?.[RequesterAnnotation];
    if (kept === undefined) delete annotations[RequesterAnnotation];
    else annotations[RequesterAnnotation] = kept;
  }
  return mutate(nar, { ...nar, metadata: { ...nar.metadata, annotations } });
}

/** Validating side (after every mutation): the annotation never changes once the object exists. */
export function requesterUnchanged(request: AdmissionRequest<NonAdminRestore>): Verdict | undefined {
  if (request.operation !== 'UPDATE' || !request.object || !request.oldObject) return undefined;
  const before = request.oldObject.metadata.annotations?.[RequesterAnnotation];
  const after = request.object.metadata.annotations?.[RequesterAnnotation];
  if (before === after) return undefined;
  return deny(
    `metadata.annotations["${RequesterAnnotation}"] records who created this NonAdminRestore and cannot change; leave it as it is`,
    422,
    'Invalid',
  );
}
