// The caches the backup controllers share, declared once: the Velero objects tenantkit makes (each type
// filtered on tenantkit's marks, so a cache never holds the admin's own objects) and the indexes that find
// them by the NACUUID label of the tenant object they were made for (the index names are ../model.ts's).
// Every controller takes its caches from here, so two controllers reading one type share one informer
// and one index, and an index name always means the same function (the informer refuses a second function under a name it knows).
import {
  NonAdminBackupStorageLocationRequestCrd,
  type NonAdminSchedule,
  NonAdminScheduleCrd,
} from '../../crds/backup.ts';
import { VeleroResources } from '../../crds/velero.ts';
import type { Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import type { KubeObject, ResourceType } from '../../kube/resources.ts';
import { Annotations, Index, Labels, managedSelector, type VeleroObject } from '../model.ts';

const managed = (type: ResourceType): ResourceType => ({ ...type, labelSelector: managedSelector });

/** The types of the objects tenantkit makes in Velero's namespace, as the controllers watch them. */
export const ManagedTypes = {
  backups: managed(VeleroResources.backups),
  restores: managed(VeleroResources.restores),
  deleteBackupRequests: managed(VeleroResources.deleteBackupRequests),
  downloadRequests: managed(VeleroResources.downloadRequests),
  schedules: managed(VeleroResources.schedules),
  backupStorageLocations: managed(VeleroResources.backupStorageLocations),
  /** NonAdminBackupStorageLocationRequests: admins could make others; they mean nothing to tenantkit. */
  locationRequests: managed(NonAdminBackupStorageLocationRequestCrd.type),
} satisfies Record<string, ResourceType>;

const byLabel =
  (label: string) =>
  (o: KubeObject): string[] => {
    const v = o.metadata.labels?.[label];
    return v ? [v] : [];
  };

/** The one function of each label index (Velero's own Backups are indexed by `nasUuid` too: schedule runs). */
export const IndexFunctions = {
  nabUuid: byLabel(Labels.nabUuid),
  narUuid: byLabel(Labels.narUuid),
  nadrUuid: byLabel(Labels.nadrUuid),
  nabslUuid: byLabel(Labels.nabslUuid),
  nasUuid: byLabel(Labels.nasUuid),
} satisfies Partial<Record<keyof typeof Index, (o: KubeObject) => string[]>>;

/** What each managed cache is indexed by. */
const indexesOf = {
  backups: ['nabUuid'],
  restores: ['narUuid'],
  deleteBackupRequests: ['nabUuid'],
  downloadRequests: ['nadrUuid'],
  schedules: ['nasUuid'],
  backupStorageLocations: ['nabslUuid'],
  locationRequests: ['nabslUuid'],
} satisfies Record<keyof typeof ManagedTypes, (keyof typeof IndexFunctions)[]>;

/** The manager's cache of one managed type, with its indexes. */
export function managedCache<T extends KubeObject = VeleroObject>(
  manager: Manager,
  kind: keyof typeof ManagedTypes,
): Informer<T> {
  const informer = manager.informer<T>(ManagedTypes[kind]);
  for (const index of indexesOf[kind]) informer.addIndex(Index[index], IndexFunctions[index]);
  return informer;
}

/** The NACUUID a NonAdminSchedule's status records, if any. */
export const scheduleUuidOf = (nas: NonAdminSchedule): string[] => {
  const v = nas.status?.veleroSchedule?.nacuuid;
  return v ? [v] : [];
};

/** The manager's cache of NonAdminSchedules, indexed by the NACUUID in their status. */
export function scheduleCache(manager: Manager): Informer<NonAdminSchedule> {
  const informer = manager.informer<NonAdminSchedule>(NonAdminScheduleCrd.type);
  informer.addIndex(Index.scheduleByUuid, scheduleUuidOf);
  return informer;
}

const origin =
  (nameKey: string, namespaceKey: string) =>
  (o: KubeObject): string[] => {
    const ns = o.metadata.annotations?.[namespaceKey];
    const name = o.metadata.annotations?.[nameKey];
    return ns && name ? [`${ns}/${name}`] : [];
  };

/**
 * The key (`namespace/name`) of the tenant object a Velero-side object was made for, from the origin
 * annotations tenantkit wrote there (tenants cannot write in Velero's namespace); none when absent.
 */
export const Origin = {
  nab: origin(Annotations.nabName, Annotations.nabNamespace),
  nar: origin(Annotations.narName, Annotations.narNamespace),
  nadr: origin(Annotations.nadrName, Annotations.nadrNamespace),
  nabsl: origin(Annotations.nabslName, Annotations.nabslNamespace),
};
