// The name of the Velero object made for a tenant's object: its NACUUID (written to the tenant object's
// status before any Velero object exists, and carried as a label: the labels and annotations are in
// ../model.ts), as seed 001 makes it.
import { randomUUID } from 'node:crypto';

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
