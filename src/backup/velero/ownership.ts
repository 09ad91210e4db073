// Which tenant namespace a Velero Backup belongs to, from records only tenantkit and admins write. Security
// critical: backup sync, adoption of existing backups and restores from them all ask this question, and a
// wrong answer hands one tenant's data to another.
//
// - A Backup stored through a tenant's own storage location (a BackupStorageLocation tenantkit made for a
//   NonAdminBackupStorageLocation: label nabslUuid, annotation nabslNamespace) belongs to that NABSL's
//   namespace, whatever the Backup's own labels and annotations say: the tenant can write anything into
//   its bucket, and Velero's bucket sync copies that metadata into the cluster.
// - A Backup stored through an admin's location belongs to the namespace tenantkit recorded on it (the
//   origin-namespace annotation of a NonAdminBackup or NonAdminSchedule, with tenantkit's labels and
//   includedNamespaces exactly that namespace). Only admins and tenantkit write those buckets.
// - Anything else (admin backups without tenantkit's records, unknown locations) belongs to nobody.
import { Annotations, Labels, ManagedByValue } from './names.ts';

export interface OwnedBackup {
  metadata: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { storageLocation?: unknown; includedNamespaces?: unknown };
}

export interface Location {
  metadata: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { default?: unknown };
}

export type Ownership =
  | { namespace: string; via: 'tenant-location' | 'tenantkit-records'; location: string }
  | { namespace?: undefined; why: string };

/**
 * The namespace `backup` belongs to. `location(name)` finds a BackupStorageLocation of Velero's
 * namespace; `defaultLocation()` the one marked default (what Velero uses for a Backup that names none).
 */
export function backupOwner(
  backup: OwnedBackup,
  location: (name: string) => Location | undefined,
  defaultLocation: () => Location | undefined,
): Ownership {
  const named = typeof backup.spec?.storageLocation === 'string' ? backup.spec.storageLocation : '';
  const bsl = named ? location(named) : defaultLocation();
  if (!bsl) {
    return {
      why: named
        ? `its storage location ${named} does not exist`
        : 'it names no storage location and there is no default one',
    };
  }
  const locationName = bsl.metadata.name ?? named;
  if (bsl.metadata.labels?.[Labels.nabslUuid] !== undefined) {
    const ns = bsl.metadata.annotations?.[Annotations.nabslNamespace];
    if (!ns) return { why: `its storage location ${locationName} has no origin namespace` };
    return { namespace: ns, via: 'tenant-location', location: locationName };
  }
  const labels = backup.metadata.labels ?? {};
  if (labels[Labels.oadp] !== 'True' || labels[Labels.managedBy] !== ManagedByValue) {
    return { why: 'tenantkit did not make it (an admin backup)' };
  }
  const annotations = backup.metadata.annotations ?? {};
  const origins = [annotations[Annotations.nabNamespace], annotations[Annotations.nasNamespace]].filter(
    (v): v is string => typeof v === 'string' && v !== '',
  );
  const ns = origins[0];
  if (!ns || origins.some((o) => o !== ns)) {
    return { why: 'it carries no single origin namespace' };
  }
  const included = backup.spec?.includedNamespaces;
  if (!Array.isArray(included) || included.length !== 1 || included[0] !== ns) {
    return { why: `it does not cover exactly namespace ${ns}` };
  }
  return { namespace: ns, via: 'tenantkit-records', location: locationName };
}

/** The location Velero uses for Backups that name none: the one with spec.default true, if exactly one. */
export function defaultLocationOf<T extends Location>(locations: T[]): T | undefined {
  const defaults = locations.filter((l) => l.spec?.default === true);
  return defaults.length === 1 ? defaults[0] : undefined;
}
