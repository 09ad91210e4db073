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
//
// A name is not a namespace: a namespace deleted and made again by someone else has the same name. So a
// Backup of an admin's location belongs to the namespace of that name only while it is the same instance
// (the UID recorded on the Backup) or belongs to the same organization (the organization recorded on it):
// {@link ownerNow}. A Backup with neither record (made before tenantkit recorded them) belongs to nobody
// until an admin annotates it (docs/backup.md, "Backups made before owners were recorded").
import { DefaultOrganizationLabel } from '../../crds/tenancy.ts';
import { Annotations, Labels, ManagedByValue } from '../model.ts';

export interface OwnedBackup {
  metadata: {
    name?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp?: string;
  };
  spec?: { storageLocation?: unknown; includedNamespaces?: unknown };
  status?: { startTimestamp?: unknown };
}

/**
 * Whether `namespace` was made before Velero started `backup` (its status.startTimestamp, which Velero's
 * bucket sync keeps; creationTimestamp is reset by a re-sync). False when either time is unknown.
 */
function olderThan(namespace: NamespaceLike, backup: OwnedBackup): boolean {
  const made = Date.parse(namespace.metadata.creationTimestamp ?? '');
  const started = Date.parse(
    typeof backup.status?.startTimestamp === 'string' ? backup.status.startTimestamp : '',
  );
  return Number.isFinite(made) && Number.isFinite(started) && made <= started;
}

export interface NamespaceLike {
  metadata: {
    uid?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
    creationTimestamp?: string;
  };
}

/** The label that names a namespace's organization (tenancy's default, src/crds/tenancy.ts). */
export const OrganizationLabel = DefaultOrganizationLabel;

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

/** What tenantkit records on a Velero Backup or Schedule it makes for `namespace`: see {@link ownerNow}. */
export function originRecord(namespace: NamespaceLike): Record<string, string> {
  const record: Record<string, string> = {};
  if (namespace.metadata.uid) record[Annotations.originNamespaceUid] = namespace.metadata.uid;
  const org = namespace.metadata.labels?.[OrganizationLabel];
  if (org) record[Annotations.originOrganization] = org;
  return record;
}

/**
 * {@link backupOwner}, checked against the namespace as it is now (`namespace(name)`: the live object).
 * A tenant location's Backups stay that location's namespace's (the location goes with its namespace).
 * Otherwise the namespace of the recorded name must exist and be the recorded instance (UID) or belong to
 * the recorded organization: a namespace re-created by the same organization gets its backups back; one
 * re-created by another organization gets none.
 */
export function ownerNow(
  owner: Ownership,
  backup: OwnedBackup,
  namespace: (name: string) => NamespaceLike | undefined,
): Ownership {
  if (owner.namespace === undefined || owner.via !== 'tenantkit-records') return owner;
  const a = backup.metadata.annotations ?? {};
  const uid = a[Annotations.originNamespaceUid];
  const org = a[Annotations.originOrganization];
  const live = namespace(owner.namespace);
  if (!live || live.metadata.deletionTimestamp) return { why: `namespace ${owner.namespace} does not exist` };
  if (!uid && !org) {
    // Made before owners were recorded: still the namespace's if the namespace is older than the backup
    // (then it is the very instance the backup was taken from: names are unique while they live).
    if (olderThan(live, backup)) return owner;
    return {
      why: `it records neither the UID nor the organization of the namespace ${owner.namespace} it was taken from (made before tenantkit recorded them, by an earlier namespace of that name); a cluster admin assigns it by annotating it with ${Annotations.originNamespaceUid} or ${Annotations.originOrganization} (docs/backup.md)`,
    };
  }
  if (uid && live.metadata.uid === uid) return owner;
  if (org && live.metadata.labels?.[OrganizationLabel] === org) return owner;
  return {
    why: `it was taken from an earlier namespace ${owner.namespace} (another instance, of another organization)`,
  };
}
