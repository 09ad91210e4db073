// Names and metadata that tie a tenant's object to the Velero object made for it, as seed 001 lists
// them. Identity is the NACUUID (written to the tenant object's status before any Velero object exists)
// carried as a label, never the name alone: a tenant cannot forge it onto someone else's object because
// tenants cannot write in the Velero namespace.
import { randomUUID } from 'node:crypto';

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

const maxName = 63;

/**
 * `<namespace>-<name>-<uuid v4>`, at most 63 characters (a valid object name and label value): when too
 * long, the name is shortened first, then the namespace; the UUID is always whole, so names stay unique.
 */
export function nacObjectName(namespace: string, name: string, uuid: string = randomUUID()): string {
  const room = maxName - uuid.length - 2;
  let ns = namespace;
  let n = name;
  if (ns.length + n.length > room) n = n.slice(0, Math.max(0, room - ns.length));
  if (ns.length + n.length > room) ns = ns.slice(0, room);
  // A cut may leave a trailing '-' or '.', which would make two separators in a row.
  const parts = [ns.replace(/[-.]+$/, ''), n.replace(/[-.]+$/, ''), uuid].filter((p) => p !== '');
  return parts.join('-');
}

const uuidSuffix = /-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/**
 * Whether `value` is a NACUUID tenantkit could have written for `namespace`/`name` ({@link nacObjectName}
 * with some UUID). A status a tenant forged (say, through a restore of a crafted backup) naming another
 * namespace's Velero object, or a name outside Velero's conventions, fails this check.
 */
export function isNacObjectName(namespace: string, name: string, value: string | undefined): boolean {
  const uuid = value ? uuidSuffix.exec(value)?.[1] : undefined;
  return uuid !== undefined && nacObjectName(namespace, name, uuid) === value;
}

/** The labels every Velero-side object tenantkit makes carries (plus the kind's NACUUID label). */
export const managedLabels = { [Labels.managedBy]: ManagedByValue, [Labels.oadp]: 'True' } as const;
/** A label selector matching {@link managedLabels}: the informers of tenantkit's Velero-side objects. */
export const managedSelector = `${Labels.oadp}=True,${Labels.managedBy}=${ManagedByValue}`;
