// Progress counts of a tenant's backup or restore: how many of Velero's PodVolumeBackups (Restores) and
// data-mover DataUploads (DataDownloads) belong to its Velero Backup (Restore), by phase. Velero labels
// each with `velero.io/backup-name` (`velero.io/restore-name`); informers filtered on that label keep
// them, indexed by `<namespace>/<operation name>`, and an event maps to the NAB (NAR) through the
// origin annotations tenantkit wrote on the Velero Backup (Restore), never through anything a tenant
// writes. Every phase field is present, zeros included: the status is written with a merge patch, which
// would keep a field that was simply left out (upstream leaves zeros out). When there are no such Velero
// objects at all there is no object, as upstream, so a backup without volumes gets no write for them.
// Beyond upstream: the bytes moved and to move (summed over Velero's progress reports, present once one
// came), and for failed or canceled volumes Velero's reason (the first 10, each cut to 1024 characters).

import { VeleroResources } from '../../crds/velero.ts';
import type { Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import type { KubeObject, ResourceType } from '../../kube/resources.ts';
import { Annotations } from '../model.ts';
import type { JsonObject } from '../policy/enforce.ts';
import { ManagedTypes } from './caches.ts';

const RestoreNameLabel = 'velero.io/restore-name';
const BackupNameLabel = 'velero.io/backup-name';

export interface PodVolumeCounts {
  total?: number;
  new?: number;
  inProgress?: number;
  failed?: number;
  completed?: number;
  bytesDone?: number;
  totalBytes?: number;
  failures?: { name: string; message: string }[];
}

export interface DataMoverCounts extends PodVolumeCounts {
  accepted?: number;
  prepared?: number;
  canceling?: number;
  canceled?: number;
}

type Phased = KubeObject & {
  spec?: Record<string, unknown>;
  status?: { phase?: unknown; message?: unknown; progress?: { totalBytes?: unknown; bytesDone?: unknown } };
};

const maxFailures = 10;
/** Velero's reasons can quote a whole path (kopia names the entry it failed on): keep both ends. */
const maxMessage = 1024;

/** `message` cut to `maxMessage` characters: its start (what failed) and its end (why), joined by "…". */
export function brief(message: string): string {
  if (message.length <= maxMessage) return message;
  const tail = 400;
  const marker = ' … ';
  return `${message.slice(0, maxMessage - tail - marker.length)}${marker}${message.slice(-tail)}`;
}

/** Velero's phase → the field that counts it (an empty phase is New, as Velero treats it). */
const dataMoverFields: Record<string, keyof DataMoverCounts> = {
  '': 'new',
  New: 'new',
  Accepted: 'accepted',
  Prepared: 'prepared',
  InProgress: 'inProgress',
  Canceling: 'canceling',
  Canceled: 'canceled',
  Failed: 'failed',
  Completed: 'completed',
};
/**
 * The NAB/NAR status has only these fields for pod volumes (upstream's shape). Velero v1.18 also moves
 * PodVolumeBackups through Accepted, Prepared, Canceling and Canceled: those count in `total` only.
 */
const podVolumeFields: Record<string, keyof PodVolumeCounts> = {
  '': 'new',
  New: 'new',
  InProgress: 'inProgress',
  Failed: 'failed',
  Completed: 'completed',
};

function count<T extends Record<string, unknown>>(
  objects: readonly Phased[],
  fields: Record<string, keyof T>,
  /** What a failure is about, e.g. `<pod>/<volume>`. */
  subject: (o: Phased) => string,
): T | undefined {
  if (objects.length === 0) return undefined;
  const out: Record<string, unknown> = { total: objects.length };
  for (const field of Object.values(fields)) out[field as string] = 0;
  let reported = false;
  let bytesDone = 0;
  let totalBytes = 0;
  const failures: { name: string; message: string }[] = [];
  for (const o of objects) {
    const phase = typeof o.status?.phase === 'string' ? o.status.phase : '';
    const field = fields[phase] as string | undefined;
    if (field) out[field] = (out[field] as number) + 1;
    const progress = o.status?.progress;
    if (progress && typeof progress === 'object') {
      reported = true;
      bytesDone += wholeNumber(progress.bytesDone);
      totalBytes += wholeNumber(progress.totalBytes);
    }
    // A canceled volume was not backed up (or restored) either: the tenant must see it too.
    if ((phase === 'Failed' || phase === 'Canceled') && failures.length < maxFailures) {
      const message = typeof o.status?.message === 'string' ? o.status.message : '';
      const said = brief(message) || 'Velero gave no reason';
      failures.push({
        name: subject(o),
        message: phase === 'Canceled' ? `canceled by Velero: ${said}` : said,
      });
    }
  }
  if (reported) Object.assign(out, { bytesDone, totalBytes });
  if (failures.length) out.failures = failures.sort((a, b) => a.name.localeCompare(b.name));
  return out as T;
}

/** A non-negative whole number from Velero's status, else 0 (a status is not to be trusted blindly). */
const wholeNumber = (value: unknown): number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;

const text = (value: unknown): string => (typeof value === 'string' ? value : '?');
/** A PodVolumeBackup's or PodVolumeRestore's Pod and volume. */
const podVolume = (o: Phased): string =>
  `${text((o.spec?.pod as { name?: unknown } | undefined)?.name)}/${text(o.spec?.volume)}`;
/** A DataUpload's source claim, or a DataDownload's target claim. */
const claim = (o: Phased): string =>
  text(o.spec?.sourcePVC ?? (o.spec?.targetVolume as { pvc?: unknown } | undefined)?.pvc);

/** PodVolumeBackups or PodVolumeRestores by phase; undefined when there are none. */
export const countPodVolumes = (objects: readonly Phased[]): PodVolumeCounts | undefined =>
  count<PodVolumeCounts & Record<string, unknown>>(objects, podVolumeFields, podVolume);

/** DataUploads or DataDownloads by phase; undefined when there are none. */
export const countDataMovers = (objects: readonly Phased[]): DataMoverCounts | undefined =>
  count<DataMoverCounts & Record<string, unknown>>(objects, dataMoverFields, claim);

/**
 * `status` with each progress field set to its count, or removed when the count is undefined, so that
 * an unchanged status compares equal to the stored one (no write) and vanished objects clear the field.
 */
export function withProgress<S extends object>(status: S, counts: Record<string, object | undefined>): S {
  const out = { ...status } as Record<string, unknown>;
  for (const [field, value] of Object.entries(counts)) {
    if (value === undefined) delete out[field];
    else out[field] = value;
  }
  return out as S;
}

const ByOperation = 'backup/progress-operation';
const labelled = (type: ResourceType, label: string): ResourceType => ({ ...type, labelSelector: label });

/**
 * Velero's volume operations as tenantkit watches them: those of a Backup or a Restore (labelled with its
 * name), which is every one Velero makes. One informer per kind, shared by whoever reads them.
 */
export const VolumeOperationTypes: readonly ResourceType[] = [
  labelled(VeleroResources.podVolumeBackups, BackupNameLabel),
  labelled(VeleroResources.dataUploads, BackupNameLabel),
  labelled(VeleroResources.podVolumeRestores, RestoreNameLabel),
  labelled(VeleroResources.dataDownloads, RestoreNameLabel),
];

export interface ProgressSource {
  /** The status fields for the Velero operation `<namespace>/<name>` (undefined ones are to be removed). */
  counts(namespace: string, name: string): Record<string, JsonObject | undefined>;
  /** The counted resources (as their informers are keyed): watch both with {@link ProgressSource.map}. */
  podVolumes: ResourceType;
  dataMovers: ResourceType;
  /** A counted object to the key of the tenant object whose counts it moves. */
  map: (object: KubeObject) => string[];
  /** The name of the Velero Backup (Restore) a counted object belongs to, from Velero's label. */
  ownerName: (object: KubeObject) => string | undefined;
}

interface ProgressKind {
  /** The label naming the Velero Backup/Restore on the counted objects. */
  label: string;
  /** Velero's operations tenantkit made, to map an event to the tenant object. */
  operations: ResourceType;
  nameAnnotation: string;
  namespaceAnnotation: string;
  podVolumes: { field: string; type: ResourceType };
  dataMovers: { field: string; type: ResourceType };
}

/**
 * `moreKeys`: other tenant objects an operation's counts belong to, found by the caller's own rules (a
 * NonAdminBackup that adopted a Backup made for someone else's name: a schedule run, a synced backup).
 */
export type MoreKeys = (operation: KubeObject) => string[];

function progressSource(manager: Manager, kind: ProgressKind, moreKeys?: MoreKeys): ProgressSource {
  const operations = manager.informer<KubeObject>(kind.operations);
  const all = manager.informer<KubeObject>({ ...kind.operations, labelSelector: undefined });
  const byOperation = (o: KubeObject) => {
    const name = o.metadata.labels?.[kind.label];
    return name ? [`${o.metadata.namespace}/${name}`] : [];
  };
  const podVolumes = manager.informer<Phased>(labelled(kind.podVolumes.type, kind.label));
  const dataMovers = manager.informer<Phased>(labelled(kind.dataMovers.type, kind.label));
  podVolumes.addIndex(ByOperation, byOperation);
  dataMovers.addIndex(ByOperation, byOperation);
  /** The tenant object of the operation a counted object belongs to, from tenantkit's own annotations. */
  const map = (o: KubeObject): string[] =>
    byOperation(o).flatMap((key) => {
      const operation = operations.get(key);
      const ns = operation?.metadata.annotations?.[kind.namespaceAnnotation];
      const name = operation?.metadata.annotations?.[kind.nameAnnotation];
      const any = moreKeys ? all.get(key) : undefined;
      return [...(ns && name ? [`${ns}/${name}`] : []), ...(any && moreKeys ? moreKeys(any) : [])];
    });
  const of = (informer: Informer<Phased>, namespace: string, name: string) =>
    informer.byIndex(ByOperation, `${namespace}/${name}`);
  return {
    counts: (namespace, name) => ({
      [kind.podVolumes.field]: countPodVolumes(of(podVolumes, namespace, name)) as JsonObject | undefined,
      [kind.dataMovers.field]: countDataMovers(of(dataMovers, namespace, name)) as JsonObject | undefined,
    }),
    podVolumes: podVolumes.type,
    dataMovers: dataMovers.type,
    map,
    ownerName: (o) => o.metadata.labels?.[kind.label],
  };
}

/** NonAdminBackup progress: PodVolumeBackups and DataUploads of its Velero Backup. */
export const backupProgress = (manager: Manager, moreKeys?: MoreKeys): ProgressSource =>
  progressSource(
    manager,
    {
      label: BackupNameLabel,
      operations: ManagedTypes.backups,
      nameAnnotation: Annotations.nabName,
      namespaceAnnotation: Annotations.nabNamespace,
      podVolumes: { field: 'fileSystemPodVolumeBackups', type: VeleroResources.podVolumeBackups },
      dataMovers: { field: 'dataMoverDataUploads', type: VeleroResources.dataUploads },
    },
    moreKeys,
  );

/** NonAdminRestore progress: PodVolumeRestores and DataDownloads of its Velero Restore. */
export const restoreProgress = (manager: Manager): ProgressSource =>
  progressSource(manager, {
    label: RestoreNameLabel,
    operations: ManagedTypes.restores,
    nameAnnotation: Annotations.narName,
    namespaceAnnotation: Annotations.narNamespace,
    podVolumes: { field: 'fileSystemPodVolumeRestores', type: VeleroResources.podVolumeRestores },
    dataMovers: { field: 'dataMoverDataDownloads', type: VeleroResources.dataDownloads },
  });
