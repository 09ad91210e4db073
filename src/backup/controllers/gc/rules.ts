// The rules of garbage collection (see controller.ts for the whole story): which tenant kinds have Velero-side
// objects and how those point back at them, which Velero kinds are collected, and the checks an object
// passes before a pass confirms it as an orphan against the API server. Pure, tested on plain objects.
import { createHash } from 'node:crypto';
import {
  NonAdminBackupCrd,
  NonAdminBackupStorageLocationCrd,
  NonAdminBackupStorageLocationRequestCrd,
  NonAdminDownloadRequestCrd,
  NonAdminRestoreCrd,
  NonAdminScheduleCrd,
} from '../../../crds/backup.ts';
import { VeleroResources } from '../../../crds/velero.ts';
import type { ConditionInput } from '../../../kube/conditions.ts';
import { type KubeObject, Resources, type ResourceType } from '../../../kube/resources.ts';
import { Annotations, isManaged, Labels } from '../../model.ts';

/** Field manager of the config's GarbageCollected condition. */
export const GcFieldManager = 'tenantkit-backup-gc';
export const GarbageCollectedCondition = 'GarbageCollected';
/** Velero removes processed DeleteBackupRequests after a day; GC does the same for tenantkit's. */
export const processedDeleteRequestMaxAgeMs = 24 * 3600_000;
export type Obj = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

/** A tenant kind whose objects have Velero-side objects made for them. */
export interface OriginKind {
  kind: string;
  type: ResourceType;
  uuidLabel: string;
  nameAnnotation: string;
  namespaceAnnotation: string;
  /** The status field whose `nacuuid` names the Velero-side objects of this origin. */
  statusRef: string;
}

const origin = (
  type: ResourceType,
  key: 'nab' | 'nar' | 'nabsl' | 'nadr' | 'nas',
  statusRef: string,
): OriginKind => ({
  kind: type.kind,
  type,
  uuidLabel: Labels[`${key}Uuid`],
  nameAnnotation: Annotations[`${key}Name`],
  namespaceAnnotation: Annotations[`${key}Namespace`],
  statusRef,
});

export const Origins = {
  nab: origin(NonAdminBackupCrd.type, 'nab', 'veleroBackup'),
  nar: origin(NonAdminRestoreCrd.type, 'nar', 'veleroRestore'),
  nabsl: origin(NonAdminBackupStorageLocationCrd.type, 'nabsl', 'veleroBackupStorageLocation'),
  nadr: origin(NonAdminDownloadRequestCrd.type, 'nadr', 'velero'),
  nas: origin(NonAdminScheduleCrd.type, 'nas', 'veleroSchedule'),
} as const;

/** A kind of Velero-side object GC looks after. */
export interface TargetKind {
  kind: string;
  type: ResourceType;
  origin: OriginKind;
}

/**
 * In the order of a pass: DeleteBackupRequests before Backups, so a processed request is gone before
 * a Backup that needs a new one is looked at.
 */
export const Targets: readonly TargetKind[] = [
  { kind: 'DeleteBackupRequest', type: VeleroResources.deleteBackupRequests, origin: Origins.nab },
  { kind: 'DownloadRequest', type: VeleroResources.downloadRequests, origin: Origins.nadr },
  { kind: 'Restore', type: VeleroResources.restores, origin: Origins.nar },
  { kind: 'Schedule', type: VeleroResources.schedules, origin: Origins.nas },
  {
    kind: 'NonAdminBackupStorageLocationRequest',
    type: NonAdminBackupStorageLocationRequestCrd.type,
    origin: Origins.nabsl,
  },
  { kind: 'BackupStorageLocation', type: VeleroResources.backupStorageLocations, origin: Origins.nabsl },
  { kind: 'Secret', type: Resources.secrets, origin: Origins.nabsl },
  { kind: 'Backup', type: VeleroResources.backups, origin: Origins.nab },
];

/** The origin an object names: its NACUUID label and origin annotations; undefined if any is missing. */
export function identityOf(
  object: KubeObject,
  origin: OriginKind,
): { uuid: string; namespace: string; name: string } | undefined {
  const uuid = object.metadata.labels?.[origin.uuidLabel];
  const namespace = object.metadata.annotations?.[origin.namespaceAnnotation];
  const name = object.metadata.annotations?.[origin.nameAnnotation];
  return uuid && namespace && name ? { uuid, namespace, name } : undefined;
}

/** True when an origin object's status names `uuid` (then the object made for it is no orphan). */
export function originNames(originObject: KubeObject, origin: OriginKind, uuid: string): boolean {
  const ref = (originObject as Obj).status?.[origin.statusRef] as { nacuuid?: unknown } | undefined;
  return typeof ref?.nacuuid === 'string' && ref.nacuuid === uuid;
}

/** A name as Velero puts it in a label (its label.GetValidName): cut to 57 characters plus 6 of its SHA-256. */
export function veleroLabelValue(name: string): string {
  if (name.length <= 63) return name;
  return `${name.slice(0, 57)}${createHash('sha256').update(name).digest('hex').slice(0, 6)}`;
}

const ageMs = (time: unknown, now: number) =>
  typeof time === 'string' && !Number.isNaN(Date.parse(time)) ? now - Date.parse(time) : undefined;

/**
 * What can be said of an object before looking at its origin: `collect` (whatever the origin says),
 * `keep` (whatever the origin says), or `origin` (it depends on the origin).
 */
export function precheck(
  target: TargetKind,
  object: Obj,
  veleroNamespace: string,
  now: number,
): { verdict: 'collect' | 'keep' | 'origin'; reason: string } {
  if (!isManaged(object)) return { verdict: 'keep', reason: 'not made by tenantkit' };
  if (object.metadata.namespace !== veleroNamespace)
    return { verdict: 'keep', reason: "not in Velero's namespace" };
  if (object.metadata.deletionTimestamp) return { verdict: 'keep', reason: 'already being deleted' };
  if (target.kind === 'DeleteBackupRequest') {
    if (object.status?.phase !== 'Processed')
      return { verdict: 'keep', reason: 'Velero has not processed it yet' };
    const age = ageMs(object.metadata.creationTimestamp, now);
    if (age !== undefined && age > processedDeleteRequestMaxAgeMs)
      return { verdict: 'collect', reason: 'processed by Velero more than a day ago' };
  }
  if (target.kind === 'DownloadRequest') {
    const sinceExpiry = ageMs(object.status?.expiration, now);
    if (sinceExpiry !== undefined && sinceExpiry >= 0) return { verdict: 'collect', reason: 'expired' };
  }
  if (!identityOf(object, target.origin))
    return { verdict: 'keep', reason: 'no NACUUID label or origin annotations' };
  return { verdict: 'origin', reason: '' };
}

export interface PassResult {
  /** Objects removed, by kind. */
  collected: Record<string, number>;
  /** Backups whose data GC asked Velero to delete. */
  dataDeletions: number;
  errors: string[];
}

/** The config's condition after a pass (or when GC is disabled). */
export function gcCondition(result: PassResult | 'disabled', generation: number | undefined): ConditionInput {
  const base = generation === undefined ? {} : { observedGeneration: generation };
  if (result === 'disabled') {
    return {
      ...base,
      type: GarbageCollectedCondition,
      status: 'False',
      reason: 'Disabled',
      message: 'garbageCollectionPeriod is 0: orphaned Velero-side objects are not removed',
    };
  }
  if (result.errors.length > 0) {
    const more = result.errors.length > 3 ? ` (and ${result.errors.length - 3} more)` : '';
    return {
      ...base,
      type: GarbageCollectedCondition,
      status: 'False',
      reason: 'Failed',
      message: `the last pass could not finish: ${result.errors.slice(0, 3).join('; ')}${more}`,
    };
  }
  const kinds = Object.entries(result.collected)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, n]) => `${n} ${k}`);
  const data =
    result.dataDeletions > 0 ? `; asked Velero to delete ${result.dataDeletions} backups' data` : '';
  return {
    ...base,
    type: GarbageCollectedCondition,
    status: 'True',
    reason: 'Collected',
    message:
      kinds.length === 0 && data === ''
        ? 'the last pass found no orphaned Velero-side objects'
        : `the last pass removed ${kinds.length ? kinds.join(', ') : 'nothing'}${data}`,
  };
}
