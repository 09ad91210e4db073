// Where a tenant's storage location stands, as the controllers that use one see it: whether a Velero
// BackupStorageLocation is tenantkit's own for exactly that NonAdminBackupStorageLocation, and which one a
// NonAdminBackup or NonAdminSchedule naming the location may write to, or what it waits for.
import {
  type NonAdminBackupStorageLocation,
  NonAdminBackupStorageLocationCrd,
} from '../../../crds/backup.ts';
import type { Manager } from '../../../kube/manager.ts';
import type { KubeObject } from '../../../kube/resources.ts';
import { Annotations, Index, Labels, managedLabels } from '../../model.ts';
import { nacObjectName } from '../../velero/names.ts';
import { managedCache } from '../caches.ts';

/** A v4 UUID as randomUUID() writes it. */
const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Whether `nacuuid` is a name tenantkit could have given location `namespace/name` (nacObjectName). */
export function isNacuuidOf(nacuuid: string, namespace: string, name: string): boolean {
  const tail = nacuuid.slice(-36);
  return uuidV4.test(tail) && nacObjectName(namespace, name, tail) === nacuuid;
}

/**
 * Whether tenantkit made `o` for location `namespace/name` under `nacuuid`: its labels and origin
 * annotations (only admins and tenantkit write in Velero's namespace). Nothing else is replaced or
 * deleted, whatever a location's status names.
 */
export function isMadeFor(o: KubeObject, nacuuid: string, namespace: string, name: string): boolean {
  const labels = o.metadata.labels ?? {};
  const annotations = o.metadata.annotations ?? {};
  return (
    Object.entries(managedLabels).every(([k, v]) => labels[k] === v) &&
    labels[Labels.nabslUuid] === nacuuid &&
    annotations[Annotations.nabslNamespace] === namespace &&
    annotations[Annotations.nabslName] === name
  );
}

/**
 * Where a tenant's location stands, for NonAdminBackups that name it: the Velero BSL's name once the
 * location is approved and its BSL exists (made by tenantkit for exactly this NABSL), or why not yet.
 */
export interface StorageLocationLookup {
  /** The NABSL `name` of `namespace`, if any. */
  find(namespace: string, name: string): NonAdminBackupStorageLocation | undefined;
  /** The Velero BSL to use, or a message saying what the backup waits for. */
  resolve(namespace: string, name: string): { bsl: string } | { waiting: string };
}

export function storageLocationLookup(manager: Manager): StorageLocationLookup {
  const nabsls = manager.informer<NonAdminBackupStorageLocation>(NonAdminBackupStorageLocationCrd.type);
  const bsls = managedCache(manager, 'backupStorageLocations');
  const find = (namespace: string, name: string) => nabsls.get(`${namespace}/${name}`);
  return {
    find,
    resolve(namespace, name) {
      const field = `spec.backupSpec.storageLocation "${name}"`;
      const nabsl = find(namespace, name);
      if (!nabsl || nabsl.metadata.deletionTimestamp) {
        return {
          waiting: `${field}: NonAdminBackupStorageLocation ${name} does not exist in namespace ${namespace} (any more); create it, or make a new NonAdminBackup without storageLocation`,
        };
      }
      const uuid = nabsl.status?.veleroBackupStorageLocation?.nacuuid;
      // Only a BSL tenantkit made for this very NABSL counts: status alone is not proof.
      const bsl =
        uuid && isNacuuidOf(uuid, namespace, name)
          ? bsls
              .byIndex(Index.nabslUuid, uuid)
              .find((b) => isMadeFor(b, uuid, namespace, name) && !b.metadata.deletionTimestamp)
          : undefined;
      const approved = nabsl.status?.conditions?.find((c) => c.type === 'ClusterAdminApproved');
      const reachable = nabsl.status?.conditions?.find((c) => c.type === 'EndpointReachable');
      if (reachable?.status === 'False') {
        return {
          waiting: `${field}: NonAdminBackupStorageLocation ${name} is not used: ${reachable.message}`,
        };
      }
      if (bsl && approved?.status === 'True') return { bsl: bsl.metadata.name! };
      const why =
        approved?.status === 'False'
          ? `it was not approved (${approved.message})`
          : approved?.status === 'True'
            ? 'its Velero BackupStorageLocation is being set up'
            : 'it waits for approval or set-up (kubectl get nabsl shows its state)';
      return { waiting: `${field}: NonAdminBackupStorageLocation ${name} is not ready: ${why}` };
    },
  };
}
