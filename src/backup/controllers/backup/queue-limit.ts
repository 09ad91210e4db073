// A namespace's share of Velero's one backup queue (policy.maxQueuedBackupsPerNamespace), and the NABs
// that wait for the queue or a location: pure rules on the NABs the cache holds.
import type { NonAdminBackup } from '../../../crds/backup.ts';
import { finishedPhases } from '../../../crds/velero.ts';
import { type Condition, findCondition } from '../../../kube/conditions.ts';
import { objectKey } from '../../../kube/resources.ts';
import { Annotations, syncedFromOf, type VeleroObject } from '../../model.ts';
import type { BackupPolicy } from '../../policy/config.ts';

/** Reasons a NAB with a NACUUID waits before its Velero Backup is made (see the gate in the reconcile). */
const waitingReasons = new Set(['StorageLocationUnavailable', 'NamespaceQueueLimit']);

/** The keys of NABs (of `namespace`, when given) waiting for Velero's queue or a location. */
export function waiting(nabs: NonAdminBackup[], namespace?: string): string[] {
  return nabs
    .filter(
      (n) =>
        (namespace === undefined || n.metadata.namespace === namespace) &&
        waitingReasons.has(
          findCondition(n.status?.conditions as Condition[] | undefined, 'Queued')?.reason ?? '',
        ),
    )
    .map((n) => objectKey(n.metadata));
}

/** Whether `n` comes before `nab` in its namespace's line: creation time, then name. */
const before = (n: NonAdminBackup, nab: NonAdminBackup) => {
  const a = n.metadata.creationTimestamp ?? '';
  const b = nab.metadata.creationTimestamp ?? '';
  return a < b || (a === b && n.metadata.name! < nab.metadata.name!);
};

/**
 * The namespace's share of Velero's queue (policy.maxQueuedBackupsPerNamespace): `nab` waits while that
 * many earlier NABs of its namespace are unfinished in Velero or about to be handed to it. Decided by
 * creation order, so two reconciles at once cannot both take the last place, and a NAB waiting for its
 * own location (not Velero's queue) holds no place. An earlier NAB not looked at yet (no NACUUID, not
 * refused) holds its place too: its identity write may be on its way while this one is decided, and it
 * will be handed over as soon as it has one. A place it does not take after all (it is refused, or waits
 * for its location) frees this one again: NAB changes wake the NABs that wait (see `freesPlaces`).
 */
export function queueLimitReached(
  nab: NonAdminBackup,
  all: NonAdminBackup[],
  policy: BackupPolicy,
  veleroBackupOf: (n: NonAdminBackup) => VeleroObject | undefined,
  /** The namespace's schedule runs unfinished in Velero: they hold places too (see inVeleroQueue). */
  scheduleRuns = 0,
): { reason: string; message: string } | undefined {
  const limit = policy.maxQueuedBackupsPerNamespace;
  if (limit === 0) return undefined;
  const ns = nab.metadata.namespace;
  const inLine = (n: NonAdminBackup) => {
    if (n.metadata.namespace !== ns || n === nab || !before(n, nab)) return false;
    if (n.metadata.deletionTimestamp || n.spec?.deleteBackup || syncedFromOf(n) !== undefined) return false;
    if (!n.status?.veleroBackup?.nacuuid) return n.status?.phase !== 'BackingOff';
    const b = veleroBackupOf(n);
    if (b) return !(finishedPhases as readonly string[]).includes(String(b.status?.phase ?? ''));
    const reason = findCondition(n.status?.conditions as Condition[] | undefined, 'Queued')?.reason;
    return (
      n.status?.phase !== 'Created' &&
      reason !== 'StorageLocationNotReady' &&
      reason !== 'StorageLocationUnavailable'
    );
  };
  const nabs = all.filter(inLine).length;
  const ahead = nabs + scheduleRuns;
  if (ahead < limit) return undefined;
  const runs = scheduleRuns > 0 ? ` (and ${scheduleRuns} runs of its NonAdminSchedules)` : '';
  return {
    reason: 'NamespaceQueueLimit',
    message: `${nabs} earlier NonAdminBackups of namespace ${ns}${runs} are in Velero's queue or waiting for it, and the admin allows ${limit} at once (NonAdminBackupConfig "cluster" spec.nonAdmin.maxQueuedBackupsPerNamespace); this one is handed to Velero when one of them finishes`,
  };
}

/**
 * Whether a change of `nab` may free a place in its namespace's share for the NABs that wait: any change
 * but one of a NAB that itself waits for the queue (it holds none, and its own status writes must not
 * wake every other waiting NAB of the namespace again and again).
 */
export function freesPlaces(nab: NonAdminBackup): boolean {
  const reason = findCondition(nab.status?.conditions as Condition[] | undefined, 'Queued')?.reason;
  return reason !== 'NamespaceQueueLimit' || nab.metadata.deletionTimestamp !== undefined;
}

/**
 * Velero Backups of `namespace` unfinished in Velero's namespace `veleroNs`, by what made them: its
 * NonAdminBackups' and its NonAdminSchedules' runs (Velero copies the Schedule's origin annotations onto
 * each run; only tenantkit and admins write in Velero's namespace). Every one holds a place in the
 * namespace's share of Velero's queue, whatever made it.
 */
export function inVeleroQueue(
  backups: VeleroObject[],
  veleroNs: string,
  namespace: string,
): { nabs: number; runs: number } {
  const counts = { nabs: 0, runs: 0 };
  for (const b of backups) {
    if (b.metadata.namespace !== veleroNs || b.metadata.deletionTimestamp) continue;
    if ((finishedPhases as readonly string[]).includes(String(b.status?.phase ?? ''))) continue;
    const a = b.metadata.annotations ?? {};
    if (a[Annotations.nasNamespace] === namespace) counts.runs++;
    else if (a[Annotations.nabNamespace] === namespace) counts.nabs++;
  }
  return counts;
}
