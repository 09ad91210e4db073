// What differs between `tenantkit backup` and `tenantkit restore`, as one table entry per non-admin kind
// (backupKind in backup.ts, restoreKind in restore.ts), so that the verbs they share (verbs.ts,
// create.ts) are written once.
import type { NonAdminBackup, NonAdminRestore } from '../../crds/backup.ts';
import type { downloadTargetKinds } from '../../crds/velero.ts';
import { finishedPhases } from '../../crds/velero.ts';
import type { ResourceType } from '../../kube/resources.ts';
import type { DescribeExtras } from './describe.ts';
import { type Session, veleroTime } from './shared.ts';

export type NonAdminOperation = NonAdminBackup | NonAdminRestore;

/** What the verbs read of the Velero Backup or Restore whose status tenantkit mirrors into the object. */
export interface VeleroOutcome {
  phase?: string;
  errors?: number;
  warnings?: number;
}

/** A column of the `get` table: its header, and its cell for one object. */
export interface Column<T> {
  header: string;
  cell: (o: T, now: number) => string;
}

export interface OperationKind<T extends NonAdminOperation> {
  /** The word the user types and reads: `tenantkit backup get`, `backup "nightly" not found`. */
  noun: 'backup' | 'restore';
  type: ResourceType;
  /** The mirrored Velero status (status.veleroBackup.status or status.veleroRestore.status). */
  velero: (o: T) => VeleroOutcome | undefined;
  /** The `get` table after NAME, in the order `velero backup|restore get` prints it; `common` are shared. */
  columns: (common: CommonColumns<T>) => Column<T>[];
  describe: (o: T, extras: DescribeExtras) => string;
  deletion: {
    /** The usage line of `delete`. */
    summary: string;
    question: (name: string, namespace: string) => string;
    request: (s: Session, name: string) => Promise<unknown>;
    /** Said after the request went through: what happens next. */
    outcome: (name: string) => string;
  };
}

type CommonColumns<T> = Record<'status' | 'errors' | 'warnings' | 'created', Column<T>>;

/** Every table starts with the object's name, as kubectl's do. */
export const nameColumn: Column<NonAdminOperation> = { header: 'NAME', cell: (o) => o.metadata.name! };

export function commonColumns<T extends NonAdminOperation>(kind: OperationKind<T>): CommonColumns<T> {
  return {
    status: { header: 'STATUS', cell: (o) => phaseOf(kind, o) },
    errors: { header: 'ERRORS', cell: (o) => String(kind.velero(o)?.errors ?? 0) },
    warnings: { header: 'WARNINGS', cell: (o) => String(kind.velero(o)?.warnings ?? 0) },
    created: { header: 'CREATED', cell: (o) => veleroTime(o.metadata.creationTimestamp) },
  };
}

/** `Backup` or `Restore`, to begin a sentence and as Velero's names start. */
export const title = <N extends string>(noun: N) =>
  `${noun[0]!.toUpperCase()}${noun.slice(1)}` as Capitalize<N>;

/** A Velero file of the operation: Velero names them after it (BackupLog, RestoreResults, ...). */
export function veleroFile<T extends NonAdminOperation>(
  kind: OperationKind<T>,
  file: 'Log' | 'ResourceList' | 'Results',
): (typeof downloadTargetKinds)[number] {
  return `${title(kind.noun)}${file}`;
}

export const isFinished = (phase: string | undefined): phase is string =>
  phase !== undefined && (finishedPhases as readonly string[]).includes(phase);

/** Velero's phase once there is a Velero object, else the request's own (New until accepted). */
export function phaseOf<T extends NonAdminOperation>(kind: OperationKind<T>, o: T): string {
  return kind.velero(o)?.phase ?? o.status?.phase ?? 'New';
}

/** The object named on the command line, or an error that says how to find the right name. */
export async function getOperation<T extends NonAdminOperation>(
  kind: OperationKind<T>,
  s: Session,
  name: string,
): Promise<T> {
  const o = await s.client.get<T>(kind.type, name, s.namespace);
  if (!o) {
    throw new Error(
      `${kind.noun} "${name}" not found in namespace ${s.namespace} (tenantkit ${kind.noun} get -n ${s.namespace} lists them)`,
    );
  }
  return o;
}
