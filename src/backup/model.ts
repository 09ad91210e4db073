// The backup capability's contract between its parts (admission/, controllers/, velero/, cli/): the
// labels, annotations and finalizers tenantkit writes, the names of the indexes its caches share, and the
// types they pass around. Parts import these names from here, never from each other's internals.
//
// Glossary: NAB NonAdminBackup, NAR NonAdminRestore, NABSL NonAdminBackupStorageLocation, NADR
// NonAdminDownloadRequest, NAS NonAdminSchedule, BSL (Velero) BackupStorageLocation, NACUUID the name
// tenantkit gives the Velero object made for a tenant's object (velero/names.ts).
//
// Identity is the NACUUID carried as a label, never a name alone: a tenant cannot forge it onto someone
// else's object because tenants cannot write in the Velero namespace. The origin labels and annotations
// are those of seed 001.
import type { UserInfo } from '../kube/access.ts';
import type { KubeObject } from '../kube/resources.ts';
import type { JsonObject } from './policy/enforce.ts';

/** A label value (no slashes): marks Velero objects that tenantkit made for tenants. */
export const ManagedByValue = 'tenantkit-backup';
export const Labels = {
  managedBy: 'app.kubernetes.io/managed-by',
  oadp: 'openshift.io/oadp',
  nabUuid: 'openshift.io/oadp-nab-origin-nacuuid',
  narUuid: 'openshift.io/oadp-nar-origin-nacuuid',
  nabslUuid: 'openshift.io/oadp-nabsl-origin-nacuuid',
  nadrUuid: 'openshift.io/oadp-nadr-origin-nacuuid',
  nasUuid: 'openshift.io/oadp-nas-origin-nacuuid',
  /**
   * On a NonAdminBackup that backup sync (or a NonAdminSchedule run) made for an existing Velero Backup:
   * that Backup's NACUUID. Tenants can write it too, so it is only a hint: the controller adopts the
   * Backup only when tenantkit's own records say it belongs to the NAB's namespace.
   */
  syncedFrom: 'openshift.io/oadp-nab-synced-from-nacuuid',
  backupName: 'velero.io/backup-name',
  backupUid: 'velero.io/backup-uid',
} as const;
export const Annotations = {
  nabName: 'openshift.io/oadp-nab-origin-name',
  nabNamespace: 'openshift.io/oadp-nab-origin-namespace',
  narName: 'openshift.io/oadp-nar-origin-name',
  narNamespace: 'openshift.io/oadp-nar-origin-namespace',
  nabslName: 'openshift.io/oadp-nabsl-origin-name',
  nabslNamespace: 'openshift.io/oadp-nabsl-origin-namespace',
  nadrName: 'openshift.io/oadp-nadr-origin-name',
  nadrNamespace: 'openshift.io/oadp-nadr-origin-namespace',
  nasName: 'openshift.io/oadp-nas-origin-name',
  nasNamespace: 'openshift.io/oadp-nas-origin-namespace',
  /**
   * On a Velero Backup or Schedule tenantkit made (and so on a Schedule's runs, which Velero copies them
   * to), or set by an admin: the UID of the namespace instance it was taken from and that namespace's
   * organization. Who owns it follows these, never the origin namespace's name alone
   * (velero/ownership.ts). Tenants cannot write objects in Velero's namespace.
   */
  originNamespaceUid: 'backup.tenantkit.io/origin-namespace-uid',
  originOrganization: 'backup.tenantkit.io/origin-organization',
} as const;

/** The labels every Velero-side object tenantkit makes carries (plus the kind's NACUUID label). */
export const managedLabels = { [Labels.managedBy]: ManagedByValue, [Labels.oadp]: 'True' } as const;
/** A label selector matching {@link managedLabels}: the informers of tenantkit's Velero-side objects. */
export const managedSelector = `${Labels.oadp}=True,${Labels.managedBy}=${ManagedByValue}`;

/** True for objects tenantkit made (by their labels; only admins and tenantkit write in Velero's namespace). */
export const isManaged = (o: KubeObject): boolean =>
  o.metadata.labels?.[Labels.oadp] === 'True' && o.metadata.labels?.[Labels.managedBy] === ManagedByValue;

/** The Velero Backup a NonAdminBackup's sync label asks for (see {@link Labels.syncedFrom}), if any. */
export const syncedFromOf = (o: KubeObject): string | undefined => o.metadata.labels?.[Labels.syncedFrom];

/**
 * On the Velero objects tenantkit creates: the creation time to the millisecond, which orders
 * same-second creations the same way after a restart (when a list, in name order, replaces the watch).
 */
export const CreatedAtAnnotation = 'backup.tenantkit.io/created-at';
/** On a DeleteBackupRequest the garbage collector made: why. */
export const GcReasonAnnotation = 'backup.tenantkit.io/garbage-collection';
/** The tenant namespace a transparency Role/RoleBinding is for (a namespace name is a valid label value). */
export const TenantNamespaceLabel = 'backup.tenantkit.io/tenant-namespace';

// The finalizers the controllers keep on the tenant kinds until their Velero-side objects are gone.
export const NabFinalizer = 'tenantkit.io/nonadminbackup';
export const NarFinalizer = 'tenantkit.io/nonadminrestore';
export const NabslFinalizer = 'tenantkit.io/nonadminbackupstoragelocation';
export const NadrFinalizer = 'tenantkit.io/nonadmindownloadrequest';
export const NasFinalizer = 'tenantkit.io/nonadminschedule';

/**
 * Index names of the shared caches, each always filled by one function (the informer refuses a second
 * function under a name it knows); controllers/caches.ts and velero/ownerships.ts add them.
 */
export const Index = {
  /** Velero objects by the NACUUID of the NonAdminBackup they were made for. */
  nabUuid: 'backup/nab-nacuuid',
  /** ... of the NonAdminRestore. */
  narUuid: 'backup/nar-nacuuid',
  /** ... of the NonAdminDownloadRequest. */
  nadrUuid: 'backup/nadr-nacuuid',
  /** ... of the NonAdminBackupStorageLocation. */
  nabslUuid: 'backup/nabsl-nacuuid',
  /** ... of the NonAdminSchedule (its Velero Schedule and the Backups of its runs). */
  nasUuid: 'backup/nas-nacuuid-label',
  /** NonAdminSchedules by the NACUUID in their status. */
  scheduleByUuid: 'backup/nas-nacuuid',
  /** NABs by `<namespace>/<Velero Backup name>`: the one their status names and the one their label asks for. */
  nabByBackupRef: 'backup/nab-backup-ref',
} as const;

/** A Velero object as the controllers read it: they copy and compare its spec and status as JSON. */
export type VeleroObject = KubeObject & { spec?: JsonObject; status?: JsonObject };
/** A Velero Backup, anyone's (admins', Velero's bucket sync's, tenantkit's). */
export type VeleroBackup = VeleroObject;

// Who asked for a NonAdminRestore (admission/requester.ts records it, controllers/restore/ copies it onto
// the Velero Restore, Velero's restore guard plugin checks every item as that user).

/** On the NonAdminRestore and on its Velero Restore: the requester's UserInfo as JSON. */
export const RequesterAnnotation = 'backup.tenantkit.io/requester';

/** The Velero plugin that enforces the requester's rights per item (its registered name). */
export const RestoreGuardPlugin = 'tenantkit.io/restore-guard';
/** On the ConfigMap `<restore>-refused` the guard writes in Velero's namespace: the Restore it reports on. */
export const RefusalsLabel = 'backup.tenantkit.io/refusals-of';
/** The ConfigMap's key holding the refusals (JSON: count and the first refusals). */
export const RefusalsKey = 'refused.json';
/** On a claim a tenant's restore creates: the nonce by which the guard tells Velero's claim from any other. */
export const RestoreClaimNonceAnnotation = 'tenantkit.io/restore-claim-nonce';

/**
 * Every name the restore guard (plugins/restore-guard, a Go program) shares with the rest of backup, by the
 * Go constant that holds it: `npm run generate` writes them into the plugin (names_generated.go), and a unit
 * test fails when that file and this table differ.
 */
export const RestoreGuardNames = {
  pluginName: RestoreGuardPlugin,
  requesterAnnotation: RequesterAnnotation,
  managedByLabel: Labels.managedBy,
  managedByValue: ManagedByValue,
  narUUIDLabel: Labels.narUuid,
  narNameAnnotation: Annotations.narName,
  narNsAnnotation: Annotations.narNamespace,
  refusalsLabel: RefusalsLabel,
  refusalsKey: RefusalsKey,
  claimNonceAnnotation: RestoreClaimNonceAnnotation,
} as const;

/** The requester recorded on `o`, or an explanation of why there is none that can be trusted. */
export function requesterOf(o: { metadata: { annotations?: Record<string, string> } }): UserInfo | string {
  const raw = o.metadata.annotations?.[RequesterAnnotation];
  if (raw === undefined) {
    return `it has no ${RequesterAnnotation} annotation (it was created before tenantkit recorded requesters, or while the admission webhook was bypassed); delete it and create it again`;
  }
  try {
    const parsed = JSON.parse(raw) as UserInfo;
    if (typeof parsed?.username === 'string' && parsed.username !== '') return parsed;
  } catch {}
  return `its ${RequesterAnnotation} annotation is not a user record tenantkit wrote; delete it and create it again`;
}

/** The annotation's value for `user`: only the fields of authentication.k8s.io UserInfo, in one order. */
export function requesterValue(user: UserInfo): string {
  return JSON.stringify({
    username: user.username,
    ...(user.uid ? { uid: user.uid } : {}),
    ...(user.groups?.length ? { groups: user.groups } : {}),
    ...(user.extra && Object.keys(user.extra).length ? { extra: user.extra } : {}),
  });
}

/**
 * The controllers' crash point between a NonAdminBackup's identity write (step 1) and its Velero Backup's
 * create (step 2): a pause there (src/kube/failpoint.ts, test-only, off by default) lets bench:faults
 * SIGKILL the leader inside that window every time.
 */
export const NabIdentityWritten = 'NAB_IDENTITY_WRITTEN';
