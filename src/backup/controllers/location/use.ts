// Velero's backup queue and the storage locations it writes to. Velero v1.18 fails a dequeued backup
// whose location is not Available (or is read-only, or gone) with FailedValidation, and such an immediate
// failure can stop its queue from dequeuing anything again until Velero restarts (Velero issue #10519,
// fixed after v1.18.3). So tenantkit hands Velero a backup only for a location Velero reports Available,
// and never removes a tenant location's BSL while one of tenantkit's unfinished backups still names it.

import { finishedPhases, VeleroResources } from '../../../crds/velero.ts';
import type { Informer } from '../../../kube/informer.ts';
import type { Manager } from '../../../kube/manager.ts';
import { Labels, type VeleroObject } from '../../model.ts';
import { managedCache } from '../caches.ts';

const ByStorageLocation = 'backup/storage-location';
const storageLocationOf = (b: VeleroObject) =>
  typeof b.spec?.storageLocation === 'string' ? [`${b.metadata.namespace}/${b.spec.storageLocation}`] : [];
/** Velero's name for the location a Backup without spec.storageLocation would use, failing all else. */
const ServerDefaultLocation = 'default';

const unfinished = (b: VeleroObject) =>
  !(finishedPhases as readonly string[]).includes(String(b.status?.phase ?? ''));

export interface LocationUse {
  /** tenantkit's Velero Backups in `veleroNs` that name BSL `name` and have not finished. */
  unfinishedBackups(veleroNs: string, name: string): VeleroObject[];
  /**
   * Why Velero would fail a backup to BSL `name` (undefined: the default location) of `veleroNs` right
   * now, or undefined when it would take it.
   */
  unusable(veleroNs: string, name: string | undefined): string | undefined;
  /**
   * Why Velero would fail a restore from a backup on BSL `name` right now (it must exist and be
   * Available: Velero v1.18 marks the Restore FailedValidation otherwise), or undefined.
   */
  unreadable(veleroNs: string, name: string | undefined): string | undefined;
  /** Whether BSL `name` was made by tenantkit for a tenant's own location (a bucket the tenant owns). */
  tenantOwned(veleroNs: string, name: string | undefined): boolean;
}

export function locationUse(manager: Manager): LocationUse {
  const backups = managedCache(manager, 'backups');
  backups.addIndex(ByStorageLocation, storageLocationOf);
  const locations = manager.informer<VeleroObject>(VeleroResources.backupStorageLocations);
  return {
    unfinishedBackups: (veleroNs, name) =>
      backups.byIndex(ByStorageLocation, `${veleroNs}/${name}`).filter(unfinished),
    unusable: (veleroNs, name) => locationProblem(locations, veleroNs, name),
    unreadable: (veleroNs, name) => readProblem(locations, veleroNs, name),
    tenantOwned: (veleroNs, name) =>
      name !== undefined &&
      locations.get(`${veleroNs}/${name}`)?.metadata.labels?.[Labels.nabslUuid] !== undefined,
  };
}

/** The location Velero picks for a Backup without one: the BSL marked default, else the server's. */
function defaultLocation(locations: Informer<VeleroObject>, veleroNs: string): string {
  const marked = locations
    .list()
    .filter((l) => l.metadata.namespace === veleroNs && l.spec?.default === true)
    .map((l) => l.metadata.name!)
    .sort();
  return marked[0] ?? ServerDefaultLocation;
}

function locationProblem(
  locations: Informer<VeleroObject>,
  veleroNs: string,
  wanted: string | undefined,
): string | undefined {
  const name = wanted ?? defaultLocation(locations, veleroNs);
  const which = wanted ? `storage location ${name}` : `Velero's default storage location ${name}`;
  const bsl = locations.get(`${veleroNs}/${name}`);
  if (!bsl || bsl.metadata.deletionTimestamp) {
    return `${which} does not exist in Velero (namespace ${veleroNs}); the backup starts once it does`;
  }
  if (bsl.spec?.accessMode === 'ReadOnly') {
    return `${which} is read-only; the backup starts once an admin makes it ReadWrite`;
  }
  const phase = bsl.status?.phase;
  if (phase !== 'Available') {
    // Velero's own message only for a tenant's location: the admin's may name their endpoints and buckets.
    const message = bsl.status?.message;
    const said = wanted && typeof message === 'string' && message ? `: ${message}` : '';
    return `${which} is ${phase ? String(phase) : 'not validated by Velero yet'}${said}; Velero would fail the backup, so it starts once the location is Available`;
  }
  return undefined;
}

function readProblem(
  locations: Informer<VeleroObject>,
  veleroNs: string,
  wanted: string | undefined,
): string | undefined {
  const name = wanted || defaultLocation(locations, veleroNs);
  const bsl = locations.get(`${veleroNs}/${name}`);
  const which = `the backup's storage location ${name}`;
  if (!bsl || bsl.metadata.deletionTimestamp) {
    return `${which} does not exist in Velero (namespace ${veleroNs}); the restore starts once it does`;
  }
  const phase = bsl.status?.phase;
  if (phase === 'Available') return undefined;
  return `${which} is ${phase ? String(phase) : 'not validated by Velero yet'}; Velero would fail the restore, so it starts once the location is Available`;
}
