// spec.deleteBackup of a NonAdminBackup: Velero deletes the backup's data through a DeleteBackupRequest,
// which tenantkit makes (named and labelled by the NAB's NACUUID) and asks again for after a refusal.
import type { NonAdminBackup } from '../../../crds/backup.ts';
import { NonAdminBackupCrd } from '../../../crds/backup.ts';
import { VeleroResources } from '../../../crds/velero.ts';
import type { ReconcileContext, ReconcileResult } from '../../../kube/controller.ts';
import { removeFinalizer } from '../../../kube/finalizers.ts';
import type { KubeObject } from '../../../kube/resources.ts';
import type { StatusWriter } from '../../../kube/status.ts';
import { Annotations, Labels, NabFinalizer, type VeleroObject } from '../../model.ts';
import { canHandBack, handBack, handBackWaitMs, handedBack, heldAsRunning, isFinished } from '../held.ts';
import { createOnce, managedMeta } from '../velero-objects.ts';

type Status = NonNullable<NonAdminBackup['status']>;

/** What the deletion reads of one reconcile of the NAB. */
export interface DeleteSeen {
  nab: NonAdminBackup;
  uuid: string | undefined;
  backup: VeleroObject | undefined;
  base: Status;
  status: StatusWriter<Status>;
  ctx: ReconcileContext;
}

/** How long after a refused DeleteBackupRequest tenantkit asks Velero again: doubling, at most 5 minutes. */
export const deleteRetryMs = (attempt: number) => Math.min(15_000 * 2 ** Math.max(0, attempt - 1), 300_000);
/**
 * How often tenantkit asks again while Velero counts a finished backup as running (`heldAsRunning`): only
 * a restart of Velero ends that, and the tenant's deletion should follow it within moments, not minutes.
 */
export const heldAsRunningRetryMs = 30_000;
const AttemptAnnotation = 'tenantkit.io/delete-attempt';

/** What the tenant is told of a refused DeleteBackupRequest, and how long until tenantkit asks again. */
export interface DeleteRefusal {
  reason: 'VeleroRefused' | 'VeleroHoldsBackupAsRunning';
  message: string;
  /** ms from `now` until the next request; 0 or less: now. */
  waitMs: number;
}

/** The refusal of `request` (Processed with `errors`), its `attempt`-th for `backup`, as of `now`. */
export function deleteRefusal(
  backup: VeleroObject,
  request: VeleroObject,
  errors: string[],
  attempt: number,
  now: number,
): DeleteRefusal {
  const held = heldAsRunning(backup, errors);
  const retryMs = held ? heldAsRunningRetryMs : deleteRetryMs(attempt);
  const waitMs = Date.parse(request.metadata.creationTimestamp ?? '') + retryMs - now;
  const phase = (backup.status as { phase?: string } | undefined)?.phase;
  const why = held
    ? `; its Backup is ${phase}, but Velero still counts it as running (a race inside Velero v1.18 that only a restart of the Velero server ends): ask an admin to restart Velero (kubectl -n ${backup.metadata.namespace} rollout restart deployment/velero)`
    : '';
  return {
    reason: held ? 'VeleroHoldsBackupAsRunning' : 'VeleroRefused',
    message: `Velero did not delete backup ${backup.metadata.name} (attempt ${attempt}): ${errors.join('; ')}${why}; tenantkit asks again in ${Math.max(1, Math.ceil(waitMs / 1000))} s`,
    waitMs,
  };
}

/**
 * spec.deleteBackup: a DeleteBackupRequest removes the data and the Backup, then the NAB goes. Velero
 * processes a request once: when it refuses (the backup still running, its location unavailable or
 * read-only, a restore of it still being finalised), the tenant sees Velero's reasons and tenantkit asks
 * again after a back-off, instead of the NAB staying "Deleting" for ever.
 */
export async function deleteBackup(
  seen: DeleteSeen,
  request: VeleroObject | undefined,
): Promise<ReconcileResult | undefined> {
  const { nab, backup, uuid, ctx, base, status } = seen;
  const type = NonAdminBackupCrd.type;
  if (!backup || !uuid) {
    // Nothing (left) in Velero: the NAB itself goes.
    await removeFinalizer(ctx.client, type, nab, NabFinalizer);
    await ctx.client.delete(type, nab.metadata.name!, nab.metadata.namespace);
    return undefined;
  }
  const attempt = Number(request?.metadata.annotations?.[AttemptAnnotation] ?? '1') || 1;
  const errors = (request?.status?.errors as string[] | undefined) ?? [];
  if (request && request.status?.phase === 'Processed' && errors.length > 0) {
    const { reason, message, waitMs } = deleteRefusal(backup, request, errors, attempt, Date.now());
    const refinalized = await refinalizeHeld(seen, reason, errors, attempt);
    if (refinalized === 'waiting') return { requeueAfterMs: 2_000 };
    if (waitMs > 0 && refinalized !== 'finished') {
      const before = base.conditions?.find((c) => c.type === 'Deleting')?.reason;
      const known = before === 'VeleroRefused' || before === 'VeleroHoldsBackupAsRunning';
      await status.write(
        {
          ...base,
          phase: 'Deleting',
          conditions: status.condition(base, { type: 'Deleting', status: 'True', reason, message }),
        },
        known ? {} : { event: { type: 'Warning', reason: 'DeleteRefused', action: 'Delete', message } },
      );
      return { requeueAfterMs: waitMs };
    }
    // Velero keeps one request per backup: the refused one goes before the next is made.
    await ctx.client
      .delete(VeleroResources.deleteBackupRequests, uuid, backup.metadata.namespace)
      .catch(() => {});
    return createDeleteRequest(seen, backup, uuid, attempt + 1);
  }
  // No request yet, or one Velero is working on (then the create is refused as existing and only the
  // status is made sure of).
  return createDeleteRequest(seen, backup, uuid, request ? attempt : 1);
}

/**
 * A finished Backup that Velero counts as running (its tracker race: see held.ts) is handed back to
 * Velero's finalizer controller, at most the first attempts of one deletion (held.ts). Returns
 * `waiting` while Velero's finalizer has it, `finished` once it finished it again (the deletion is asked
 * again now), or undefined when this does not apply.
 */
async function refinalizeHeld(
  { nab, backup, base, status, ctx }: DeleteSeen,
  reason: DeleteRefusal['reason'],
  errors: string[],
  attempt: number,
): Promise<'waiting' | 'finished' | undefined> {
  if (!backup) return undefined;
  const handed = handedBack(backup);
  if (handed.attempt === attempt) {
    if (isFinished(backup)) return 'finished';
    return Date.now() - handed.since < handBackWaitMs ? 'waiting' : undefined;
  }
  if (reason !== 'VeleroHoldsBackupAsRunning' || !canHandBack(backup, attempt)) return undefined;
  const phase = (backup.status as { phase?: string } | undefined)?.phase;
  await handBack(ctx.client, backup, attempt);
  const message = `Velero did not delete backup ${backup.metadata.name} (attempt ${attempt}): ${errors.join('; ')}; its Backup is ${phase}, but Velero still counts it as running (a race inside Velero v1.18): tenantkit handed it back to Velero's finalizer, which ends that, and asks again once the backup is ${phase} again`;
  await status.write(
    {
      ...base,
      phase: 'Deleting',
      conditions: status.condition(base, { type: 'Deleting', status: 'True', reason, message }),
    },
    { event: { type: 'Normal', reason: 'BackupHandedBackToVelero', action: 'Delete', message } },
  );
  ctx.logger.info(
    { nab: `${nab.metadata.namespace}/${nab.metadata.name}`, backup: backup.metadata.name },
    'handed a finished backup Velero held as running back to its finalizer',
  );
  return 'waiting';
}

async function createDeleteRequest(
  { nab, ctx, base, status }: DeleteSeen,
  backup: VeleroObject,
  uuid: string,
  attempt: number,
): Promise<undefined> {
  const name = backup.metadata.name!;
  const metadata = managedMeta(
    uuid,
    backup.metadata.namespace!,
    Labels.nabUuid,
    {
      [Annotations.nabName]: nab.metadata.name!,
      [Annotations.nabNamespace]: nab.metadata.namespace!,
      [AttemptAnnotation]: String(attempt),
    },
    {
      [Labels.backupName]: name,
      ...(backup.metadata.uid ? { [Labels.backupUid]: backup.metadata.uid } : {}),
    },
  );
  const request = { metadata, spec: { backupName: name } } as KubeObject;
  if (await createOnce(ctx, VeleroResources.deleteBackupRequests, request)) {
    status.event({
      type: 'Normal',
      reason: 'DeleteRequested',
      action: 'Delete',
      message: `asked Velero to delete backup ${name} and its data`,
    });
  }
  await status.write({
    ...base,
    phase: 'Deleting',
    veleroDeleteBackupRequest: { nacuuid: uuid, name: uuid, namespace: backup.metadata.namespace! },
    conditions: status.condition(base, {
      type: 'Deleting',
      status: 'True',
      reason: 'DeletionPending',
      message: `Velero is deleting backup ${name} and its data`,
    }),
  });
  return undefined;
}
