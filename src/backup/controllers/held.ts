// Velero v1.18's tracker race, and the one remedy tenantkit applies: used by the NonAdminBackup
// controller's deletions (backup/delete.ts) and by garbage collection's (gc/pass.ts).
//
// Velero decides that a backup is "still in progress" from a set in its memory, not from the Backup: its
// backup controller adds a backup it hands to finalizing after it patched the phase, and when the
// finalizer controller completes the backup (and removes it from the set) in between, nothing removes it
// again. Every later DeleteBackupRequest is refused the same way until the Velero server restarts.
// A Backup whose phase is Finalizing again is finished again by Velero's finalizer controller, which
// removes it from that set on the way: tenantkit hands such a Backup back, and asks for the deletion
// again once it is finished again.
import { finishedPhases, VeleroResources } from '../../crds/velero.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { KubeObject } from '../../kube/resources.ts';

/** A Velero Backup as read: only its metadata and status are looked at. */
type Backup = KubeObject & { status?: unknown };

/** On a Velero Backup: the attempt at which tenantkit last handed it back to Velero's finalizer. */
const HandedBackAtAttempt = 'tenantkit.io/refinalized-at-attempt';
/** ... and when (RFC 3339). */
const HandedBackSince = 'tenantkit.io/refinalized-at';
/** The phase that hands a finished Backup back to Velero's finalizer controller, by the phase it ended in. */
const finalizingAgain = new Map([
  ['Completed', 'Finalizing'],
  ['PartiallyFailed', 'FinalizingPartiallyFailed'],
]);
const finished = new Set<string>(finishedPhases);
/** How many times one Backup is handed back for one deletion before tenantkit only asks for a restart. */
export const maxHandBackAttempt = 5;
/** How long tenantkit waits for Velero's finalizer to finish a Backup it handed back. */
export const handBackWaitMs = 60_000;

const phaseOf = (backup: Backup) => (backup.status as { phase?: string } | undefined)?.phase ?? '';

export const isFinished = (backup: Backup) => finished.has(phaseOf(backup));

/** True when Velero refused to delete `backup` with `errors` only because its tracker holds it as running. */
export function heldAsRunning(backup: Backup, errors: readonly string[]): boolean {
  return isFinished(backup) && errors.some((e) => /backup is still in progress/.test(e));
}

/** The attempt at which `backup` was last handed back (0: never), and when (ms since the epoch, 0: unknown). */
export function handedBack(backup: Backup): { attempt: number; since: number } {
  const annotations = backup.metadata.annotations ?? {};
  return {
    attempt: Number(annotations[HandedBackAtAttempt] ?? '0') || 0,
    since: Date.parse(annotations[HandedBackSince] ?? '') || 0,
  };
}

/**
 * Whether `backup` may be handed back at `attempt`: a finished Backup without item operations (whose
 * finalizing runs nothing but the write of its phase and metadata), at most {@link maxHandBackAttempt}.
 */
export function canHandBack(backup: Backup, attempt: number): boolean {
  const operations = (backup.status as { backupItemOperationsAttempted?: number } | undefined)
    ?.backupItemOperationsAttempted;
  return finalizingAgain.has(phaseOf(backup)) && (operations ?? 0) === 0 && attempt <= maxHandBackAttempt;
}

/**
 * Hands `backup` back to Velero's finalizer: its phase set to Finalizing again, by a merge patch guarded by
 * the resourceVersion (a patch of what Velero last wrote, or a 409 and nothing). Call {@link canHandBack}
 * first.
 */
export async function handBack(
  client: Pick<KubeClient, 'patch'>,
  backup: Backup,
  attempt: number,
): Promise<void> {
  await client.patch(VeleroResources.backups, backup.metadata.name!, backup.metadata.namespace, {
    metadata: {
      resourceVersion: backup.metadata.resourceVersion,
      annotations: { [HandedBackAtAttempt]: String(attempt), [HandedBackSince]: new Date().toISOString() },
    },
    status: { phase: finalizingAgain.get(phaseOf(backup)) },
  });
}
