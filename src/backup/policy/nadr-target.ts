// What a NonAdminDownloadRequest's target means: the file kind decides whether `target.name` names a
// NonAdminBackup or a NonAdminRestore of the request's namespace (never a Velero object: tenants do not
// know, and must not choose, names in Velero's namespace). Pure, shared by the controller and admission.
import { downloadTargetKinds } from '../../crds/velero.ts';

export type TargetKind = (typeof downloadTargetKinds)[number];

// Velero names every Restore file kind Restore…; all others belong to a Backup (CSI… and BackupVolumeInfos
// included).
/** Kinds whose file belongs to a Velero Restore (so `target.name` is a NonAdminRestore). */
export const restoreTargetKinds: readonly TargetKind[] = downloadTargetKinds.filter((k) =>
  k.startsWith('Restore'),
);
/** Kinds whose file belongs to a Velero Backup (so `target.name` is a NonAdminBackup). */
export const backupTargetKinds: readonly TargetKind[] = downloadTargetKinds.filter(
  (k) => !k.startsWith('Restore'),
);

export type TargetOwner = 'NonAdminBackup' | 'NonAdminRestore';

/** The non-admin kind a target kind's name refers to, or undefined for a kind Velero does not know. */
export function targetOwner(kind: string | undefined): TargetOwner | undefined {
  if ((backupTargetKinds as readonly string[]).includes(kind ?? '')) return 'NonAdminBackup';
  if ((restoreTargetKinds as readonly string[]).includes(kind ?? '')) return 'NonAdminRestore';
  return undefined;
}

/** Problems with a target as written (before looking anything up); empty when it is well-formed. */
export function targetProblems(target: { kind?: string; name?: string } | undefined): string[] {
  const problems: string[] = [];
  const kind = target?.kind;
  if (!kind) {
    problems.push(`spec.target.kind is required: one of ${downloadTargetKinds.join(', ')}`);
  } else if (!targetOwner(kind)) {
    problems.push(
      `spec.target.kind "${kind}" is not a Velero download kind: use one of ${downloadTargetKinds.join(', ')}`,
    );
  }
  if (!target?.name) {
    const owner = targetOwner(kind);
    problems.push(
      `spec.target.name is required: the name of a ${owner ?? 'NonAdminBackup or NonAdminRestore'} in this namespace`,
    );
  }
  return problems;
}

/**
 * When the request should be removed: `expiration` (Velero's, RFC 3339) has passed. Returns the
 * milliseconds left, 0 when expired, or undefined when there is no expiration yet.
 */
export function msUntilExpiry(expiration: string | null | undefined, now = Date.now()): number | undefined {
  if (!expiration) return undefined;
  const at = Date.parse(expiration);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
