// What the NABSL controller makes in Velero's namespace for a tenant's location, and how it removes it:
// the Secret copy (static keys only, rendered by tenantkit), the BackupStorageLocation's marks, and a
// delete that touches only objects carrying this very location's marks (by UID).
import {
  type NonAdminBackupStorageLocationRequest,
  NonAdminBackupStorageLocationRequestCrd,
} from '../../../crds/backup.ts';
import { VeleroResources } from '../../../crds/velero.ts';
import { isAlreadyExists } from '../../../kube/client.ts';
import type { ReconcileContext } from '../../../kube/controller.ts';
import { type KubeObject, Resources, type ResourceType } from '../../../kube/resources.ts';
import type { StatusWriter } from '../../../kube/status.ts';
import { Annotations, Labels, type VeleroObject } from '../../model.ts';
import { readCredentials } from '../../policy/credentials.ts';
import { type JsonObject, jsonEqual } from '../../policy/enforce.ts';
import { managedMeta } from '../velero-objects.ts';
import { ForeignObject } from './approval.ts';
import { isMadeFor } from './lookup.ts';

type Secret = KubeObject & { type?: string; data?: Record<string, string> };
export type Credential = { name: string; key: string };

/** A tenant's location as the objects made for it see it: whose it is, where Velero runs, how to report. */
export interface LocationRef {
  ns: string;
  name: string;
  veleroNs: string;
  ctx: ReconcileContext;
  status: Pick<StatusWriter<object>, 'event'>;
}

/** Name, marks and origin of what tenantkit makes in Velero's namespace for the location. */
export const objectMeta = ({ ns, name, veleroNs }: LocationRef, uuid: string) =>
  managedMeta(uuid, veleroNs, Labels.nabslUuid, {
    [Annotations.nabslName]: name,
    [Annotations.nabslNamespace]: ns,
  });

/**
 * The Secret copy in Velero's namespace: a file tenantkit writes, holding only the static keys read from
 * the tenant's (never the tenant's bytes). Throws ForeignObject when the name holds someone else's Secret.
 */
export async function syncSecretCopy(
  loc: LocationRef,
  uuid: string,
  credential: Credential,
  file: string,
): Promise<void> {
  const { veleroNs, ctx, status } = loc;
  const meta = objectMeta(loc, uuid);
  const data = { [credential.key]: Buffer.from(file).toString('base64') };
  const copy = await ctx.client.get<Secret>(Resources.secrets, uuid, veleroNs);
  if (!copy) {
    await ctx.client.create<Secret>(Resources.secrets, { metadata: meta, type: 'Opaque', data });
    return;
  }
  if (!isMadeFor(copy, uuid, loc.ns, loc.name)) throw new ForeignObject('Secret', `${veleroNs}/${uuid}`);
  if (jsonEqual(copy.data ?? {}, data) && jsonEqual(copy.metadata.labels ?? {}, meta.labels)) return;
  // Carries copy's resourceVersion: a change made in between fails (409) and is judged again.
  await ctx.client.replace<Secret>(Resources.secrets, {
    ...copy,
    metadata: {
      ...copy.metadata,
      labels: meta.labels,
      annotations: { ...copy.metadata.annotations, ...meta.annotations },
    },
    data,
  });
  status.event({
    type: 'Normal',
    reason: 'SecretSynced',
    action: 'Sync',
    message: `copied the new keys of Secret ${credential.name} key ${credential.key} for Velero`,
  });
}

/** The Velero BSL, named and marked by the NACUUID; one of ours already there (not cached yet) is fine. */
export async function createBslObject(loc: LocationRef, uuid: string, desired: JsonObject): Promise<void> {
  const { veleroNs, ctx, status } = loc;
  const bslType = VeleroResources.backupStorageLocations;
  const storage = desired.objectStorage as JsonObject;
  try {
    await ctx.client.create(bslType, { metadata: objectMeta(loc, uuid), spec: desired } as KubeObject);
    status.event({
      type: 'Normal',
      reason: 'BackupStorageLocationCreated',
      action: 'Create',
      message: `created Velero BackupStorageLocation ${uuid} (bucket ${storage.bucket}, prefix ${storage.prefix})`,
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    // Ours, not in the cache yet; or someone else's, which is left alone.
    const existing = await ctx.client.get<VeleroObject>(bslType, uuid, veleroNs);
    if (existing && !isMadeFor(existing, uuid, loc.ns, loc.name)) {
      throw new ForeignObject('BackupStorageLocation', `${veleroNs}/${uuid}`);
    }
  }
}

/**
 * Removes the BSLs (`cached`, and the one named `uuid` live: one created just now may not be cached yet),
 * the Secret copy and, when `all`, the approval request. Returns whether anything was removed.
 */
export async function removeLocationObjects(
  loc: LocationRef,
  uuid: string,
  cached: VeleroObject[],
  all: boolean,
): Promise<boolean> {
  const { veleroNs, ctx } = loc;
  let removed = false;
  const bslType = VeleroResources.backupStorageLocations;
  for (const b of cached)
    removed = (await removeOurs(loc, uuid, bslType, 'BackupStorageLocation', b)) || removed;
  if (!cached.some((b) => b.metadata.name === uuid && b.metadata.namespace === veleroNs)) {
    const live = await ctx.client.get<VeleroObject>(bslType, uuid, veleroNs);
    removed = (await removeOurs(loc, uuid, bslType, 'BackupStorageLocation', live)) || removed;
  }
  const copy = await ctx.client.get<Secret>(Resources.secrets, uuid, veleroNs);
  removed = (await removeOurs(loc, uuid, Resources.secrets, 'Secret', copy)) || removed;
  if (all) {
    const requestType = NonAdminBackupStorageLocationRequestCrd.type;
    const request = await ctx.client.get<NonAdminBackupStorageLocationRequest>(requestType, uuid, veleroNs);
    await removeOurs(loc, uuid, requestType, 'NonAdminBackupStorageLocationRequest', request);
  }
  return removed;
}

/** Deletes `o` (by UID) when tenantkit made it for this location; otherwise leaves it alone with an Event. */
async function removeOurs(
  { ns, name, status, ctx }: LocationRef,
  uuid: string,
  type: ResourceType,
  kind: string,
  o: KubeObject | undefined,
): Promise<boolean> {
  if (!o) return false;
  if (!isMadeFor(o, uuid, ns, name)) {
    status.event({
      type: 'Warning',
      reason: 'ForeignObjectLeftAlone',
      action: 'Delete',
      message: `${kind} ${o.metadata.namespace}/${o.metadata.name} has this location's name but tenantkit did not make it for this location; it was left alone`,
    });
    return false;
  }
  return ctx.client.delete(type, o.metadata.name!, o.metadata.namespace, {
    preconditions: { uid: o.metadata.uid },
  });
}

/** The static keys of the tenant's credential Secret (of the location's own namespace), or what is wrong. */
export async function readTenantCredential(
  ctx: ReconcileContext,
  ns: string,
  credential: Credential,
  profile: string,
): Promise<ReturnType<typeof readCredentials> & { where: string }> {
  const secret = await ctx.client.get<Secret>(Resources.secrets, credential.name, ns);
  const where = `Secret ${credential.name} key ${credential.key}`;
  if (!secret) {
    return {
      where,
      problems: [
        `Secret ${credential.name} does not exist in namespace ${ns} (a location can only use a Secret of its own namespace); create it with key ${credential.key} holding an AWS credentials file`,
      ],
    };
  }
  // Own keys only: a key named like an Object.prototype member is not in the Secret.
  const value =
    secret.data && Object.hasOwn(secret.data, credential.key) ? secret.data[credential.key] : undefined;
  if (value === undefined) {
    return {
      where,
      problems: [
        `Secret ${credential.name} has no key ${credential.key}; add it, or change spec.backupStorageLocationSpec.credential.key`,
      ],
    };
  }
  return { where, ...readCredentials(Buffer.from(value, 'base64').toString('utf8'), profile, where) };
}
