// NonAdminBackupStorageLocation controller: a tenant's location becomes a Velero BackupStorageLocation in
// Velero's namespace, reading a copy of the tenant's credential Secret, with its objects under a prefix
// named after the tenant's namespace; with requireApprovalForBSL, only once an admin approved exactly that
// spec in a NonAdminBackupStorageLocationRequest (Velero's namespace, admin-only).
// Crash safety as for backups: the NACUUID goes into status before anything exists in Velero's namespace;
// the request, the Secret copy and the BSL are all named by it and carry it as a label, so a controller
// killed at any step finds what it made instead of making it twice, and the finalizer removes all three.
// Status is not proof of identity (a restore can bring back a forged one): the NACUUID must have the
// shape tenantkit gives this location, everything happens in the policy's Velero namespace, and an
// object is changed or deleted only when it carries tenantkit's marks for this very location.
import {
  type NonAdminBackupConfig,
  type NonAdminBackupStorageLocation,
  NonAdminBackupStorageLocationCrd,
  type NonAdminBackupStorageLocationRequest,
  NonAdminBackupStorageLocationRequestCrd,
} from '../../api/backup.ts';
import { VeleroResources } from '../../api/velero.ts';
import { isAlreadyExists, isConflict, PatchType } from '../../kube/client.ts';
import { type Condition, type ConditionInput, setCondition } from '../../kube/conditions.ts';
import { generationChanged, type ReconcileContext } from '../../kube/controller.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../../kube/finalizers.ts';
import type { Manager } from '../../kube/manager.ts';
import { mergePatch } from '../../kube/merge-patch.ts';
import { type KubeObject, objectKey, Resources, type ResourceType } from '../../kube/resources.ts';
import {
  bslSpecProblems,
  credentialProfile,
  readCredentials,
  renderCredentials,
  veleroBslSpec,
} from '../policy/bsl-validate.ts';
import { configType, currentPolicy } from '../policy/config.ts';
import { type Json, type JsonObject, jsonEqual } from '../policy/enforce.ts';
import { Annotations, Labels, managedLabels, nacObjectName } from '../velero/names.ts';
import { EndpointProbeTimeoutMs, probeEndpoint } from './bsl-probe.ts';
import { Index, ManagedTypes, managedCache, type VeleroObject } from './caches.ts';
import { isMadeFor, isNacuuidOf } from './location-lookup.ts';
import { locationUse } from './location-use.ts';

export const NabslFinalizer = 'tenantkit.io/nonadminbackupstoragelocation';
/**
 * How often an approved location's credential Secret is read again (tenantkit does not watch Secrets:
 * that would need list/watch on every Secret of the cluster). A change to the NABSL applies at once.
 */
export const SecretResyncMs = 30_000;

export const NabslType = NonAdminBackupStorageLocationCrd.type;
const nabslType = NabslType;
const requestType = NonAdminBackupStorageLocationRequestCrd.type;
type Secret = KubeObject & { type?: string; data?: Record<string, string> };
type Status = NonNullable<NonAdminBackupStorageLocation['status']>;
type Request = NonAdminBackupStorageLocationRequest;

/** The NABSL a Velero-side object was made for, from the annotations tenantkit wrote there. */
const originOf = (o: KubeObject): string[] => {
  const ns = o.metadata.annotations?.[Annotations.nabslNamespace];
  const name = o.metadata.annotations?.[Annotations.nabslName];
  return ns && name ? [`${ns}/${name}`] : [];
};

/** An object under the location's NACUUID that tenantkit did not make for it: left alone. */
class ForeignObject extends Error {
  readonly kind: string;
  constructor(kind: string, where: string) {
    super(`${kind} ${where} exists but tenantkit did not make it for this location`);
    this.kind = kind;
  }
}

export function registerNabslController(manager: Manager): void {
  const nabsls = manager.informer<NonAdminBackupStorageLocation>(nabslType);
  const bsls = managedCache(manager, 'backupStorageLocations');
  const requests = managedCache<Request>(manager, 'locationRequests');
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  const use = locationUse(manager);
  /** The location whose BSL a tenantkit Backup writes to (a deletion may wait for that Backup). */
  const locationOfBackup = (b: KubeObject & { spec?: JsonObject }) => {
    const bsl = bsls.get(`${b.metadata.namespace}/${String(b.spec?.storageLocation ?? '')}`);
    return bsl ? originOf(bsl) : [];
  };

  manager
    .controller('nonadminbackupstoragelocation')
    .for(nabslType)
    .watches(ManagedTypes.backupStorageLocations, originOf)
    .watches(ManagedTypes.locationRequests, originOf)
    .watches(ManagedTypes.backups, locationOfBackup)
    // A policy change (enforced fields, approval on or off) applies live.
    .watches(configType, () => nabsls.list().map((n) => objectKey(n.metadata)), generationChanged)
    .concurrency(4)
    .complete(async (key, ctx) => {
      const nabsl = nabsls.get(key);
      if (!nabsl) return undefined;
      const policy = currentPolicy(configs);
      const ns = nabsl.metadata.namespace!;
      const name = nabsl.metadata.name!;
      const generation = nabsl.metadata.generation;
      const claimed = nabsl.status?.veleroBackupStorageLocation?.nacuuid;
      // Only a NACUUID tenantkit could have written for this location is acted on, and only in the
      // policy's Velero namespace: status.*.namespace is never used.
      const uuid = claimed && isNacuuidOf(claimed, ns, name) ? claimed : undefined;
      const veleroNs = policy.veleroNamespace;
      const base: Status = { ...(nabsl.status ?? {}) };
      let conditions = (base.conditions ?? []) as Condition[];
      const set = (c: Omit<ConditionInput, 'observedGeneration'>) => {
        conditions = setCondition(conditions, { ...c, observedGeneration: generation });
      };
      /** `ifVersion`: fail (409, retried) unless the NABSL is still at that resourceVersion. */
      const writeStatus = async (status: Status, ifVersion?: string) => {
        const next = { ...status, conditions } as unknown as JsonObject;
        const patch = mergePatch(next, (nabsl.status ?? {}) as JsonObject);
        if (Object.keys(patch).length === 0) return;
        const body = { ...(ifVersion ? { metadata: { resourceVersion: ifVersion } } : {}), status: patch };
        await ctx.client.patch(nabslType, name, ns, body, PatchType.merge, 'status');
      };
      const ours = (o: KubeObject) => uuid !== undefined && isMadeFor(o, uuid, ns, name);
      const made = { bsls: uuid ? bsls.byIndex(Index.nabslUuid, uuid).filter(ours) : [] };
      /**
       * Removes the BSL and the Secret copy (and, when `all`, the request): nothing may outlive approval.
       * Only objects carrying this location's marks, each deleted by UID; others are left alone (Event).
       */
      let busy = 0;
      const teardown = async (all: boolean) => {
        if (!uuid) return false;
        // Velero would fail a queued backup whose location vanished, and that can stall its queue for
        // every tenant (location-use.ts): the location stays until tenantkit's backups to it finished.
        busy = use.unfinishedBackups(veleroNs, uuid).length;
        if (busy > 0) return false;
        let removed = false;
        const remove = async (type: ResourceType, kind: string, o: KubeObject | undefined) => {
          if (!o) return false;
          if (!ours(o)) {
            ctx.events.record(
              nabsl,
              'Warning',
              'ForeignObjectLeftAlone',
              'Delete',
              `${kind} ${o.metadata.namespace}/${o.metadata.name} has this location's name but tenantkit did not make it for this location; it was left alone`,
            );
            return false;
          }
          const preconditions = { uid: o.metadata.uid };
          return ctx.client.delete(type, o.metadata.name!, o.metadata.namespace, { preconditions });
        };
        const bslType = VeleroResources.backupStorageLocations;
        for (const b of made.bsls) removed = (await remove(bslType, 'BackupStorageLocation', b)) || removed;
        // By name too: one created just now may not be in the cache yet.
        if (!made.bsls.some((b) => b.metadata.name === uuid && b.metadata.namespace === veleroNs)) {
          const live = await ctx.client.get<VeleroObject>(bslType, uuid, veleroNs);
          removed = (await remove(bslType, 'BackupStorageLocation', live)) || removed;
        }
        const copy = await ctx.client.get<Secret>(Resources.secrets, uuid, veleroNs);
        removed = (await remove(Resources.secrets, 'Secret', copy)) || removed;
        if (all) {
          const request = await ctx.client.get<Request>(requestType, uuid, veleroNs);
          await remove(requestType, 'NonAdminBackupStorageLocationRequest', request);
        }
        return removed;
      };
      const unmirrored = (): Status => ({
        ...base,
        ...(uuid ? { veleroBackupStorageLocation: { nacuuid: uuid, name: uuid, namespace: veleroNs } } : {}),
      });

      // Removed by the tenant: the BSL, the Secret copy and the request go; the bucket's data stays.
      if (nabsl.metadata.deletionTimestamp) {
        if (!hasFinalizer(nabsl, NabslFinalizer)) return undefined;
        await teardown(true);
        if (busy > 0) {
          const message = `deletion waits for ${busy} Velero backup(s) to this location to finish (Velero fails a queued backup whose location is gone)`;
          set({ type: 'Deleting', status: 'True', reason: 'BackupsInProgress', message });
          await writeStatus({ ...base });
          return undefined;
        }
        await removeFinalizer(ctx.client, nabslType, nabsl, NabslFinalizer);
        return undefined;
      }

      if (claimed && !uuid) {
        // Not a name tenantkit gives this location (e.g. a status brought back by a restore): nothing
        // in Velero's namespace is touched under it.
        const message = `status.veleroBackupStorageLocation.nacuuid "${claimed}" was not written by tenantkit for this location (it would start with the namespace and name, then a UUID), so tenantkit does not act on it; delete this NonAdminBackupStorageLocation and create it again`;
        ctx.events.record(nabsl, 'Warning', 'InvalidNACUUID', 'Validate', message);
        set({ type: 'Accepted', status: 'False', reason: 'InvalidNACUUID', message });
        await writeStatus({ ...base, phase: 'BackingOff' });
        return undefined;
      }

      if (!policy.enabled) {
        set({
          type: 'Accepted',
          status: 'False',
          reason: 'NonAdminDisabled',
          message:
            'non-admin backups are not enabled: an admin must set spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"',
        });
        await writeStatus({ ...base, phase: 'BackingOff' });
        return undefined;
      }

      const spec = { ...((nabsl.spec?.backupStorageLocationSpec ?? {}) as JsonObject) };
      const problems = bslSpecProblems(ns, spec, policy.enforceBSLSpec, policy.allowedStorageEndpoints);
      if (problems.length > 0) {
        const message = problems.join('; ');
        ctx.events.record(nabsl, 'Warning', 'InvalidStorageLocationSpec', 'Validate', message);
        // A policy tightened after approval: the location no longer meets it, so Velero stops using it.
        await teardown(false);
        set({ type: 'Accepted', status: 'False', reason: 'InvalidStorageLocationSpec', message });
        await writeStatus({ ...unmirrored(), phase: 'BackingOff' });
        return undefined;
      }

      const current = await ensureFinalizer(ctx.client, nabslType, nabsl, NabslFinalizer);
      set({
        type: 'Accepted',
        status: 'True',
        reason: 'StorageLocationAccepted',
        message: `storage location accepted against NonAdminBackupConfig generation ${policy.generation}`,
      });
      if (!uuid) {
        // Step 1: the identity, in status, before anything exists in Velero's namespace. Guarded by
        // resourceVersion: a reconcile on a cache that has not seen an earlier step 1 yet would
        // otherwise write a second NACUUID over it, and the first one's objects would be orphaned.
        const id = nacObjectName(ns, name);
        await writeStatus(
          {
            ...base,
            phase: 'New',
            veleroBackupStorageLocation: { nacuuid: id, name: id, namespace: veleroNs },
          },
          current.metadata.resourceVersion,
        );
        return undefined;
      }

      /** Steps 2 to 5, once the location has its NACUUID. */
      const sync = async (uuid: string): Promise<{ requeueAfterMs: number } | undefined> => {
        // Step 2: the tenant's Secret, read from the tenant's namespace only; only its static keys are kept.
        const credential = spec.credential as { name: string; key: string };
        // The BSL that would be made (its profile is the copy's; the tenant's picks the keys to take).
        const desired = veleroBslSpec(ns, spec, policy.enforceBSLSpec, uuid);
        const profile = credentialProfile(spec, policy.enforceBSLSpec);
        const secret = await ctx.client.get<Secret>(Resources.secrets, credential.name, ns);
        const where = `Secret ${credential.name} key ${credential.key}`;
        // Own keys only: a key named like an Object.prototype member is not in the Secret.
        const value =
          secret?.data && Object.hasOwn(secret.data, credential.key)
            ? secret.data[credential.key]
            : undefined;
        const read = !secret
          ? {
              problems: [
                `Secret ${credential.name} does not exist in namespace ${ns} (a location can only use a Secret of its own namespace); create it with key ${credential.key} holding an AWS credentials file`,
              ],
            }
          : value === undefined
            ? {
                problems: [
                  `Secret ${credential.name} has no key ${credential.key}; add it, or change spec.backupStorageLocationSpec.credential.key`,
                ],
              }
            : readCredentials(Buffer.from(value, 'base64').toString('utf8'), profile, where);
        if (!read.keys) {
          const message = read.problems.join('; ');
          ctx.events.record(nabsl, 'Warning', 'InvalidCredential', 'Validate', message);
          await teardown(false);
          set({ type: 'SecretSynced', status: 'False', reason: 'InvalidCredential', message });
          await writeStatus({ ...unmirrored(), phase: 'BackingOff' });
          // The Secret is not watched: look again later.
          return { requeueAfterMs: SecretResyncMs };
        }

        // Step 3: approval, for exactly the BSL spec that would be created.
        const approval = policy.requireApprovalForBSL
          ? await approvalOf(ctx, nabsl, uuid, veleroNs, desired, requests.get(`${veleroNs}/${uuid}`))
          : ({ decision: 'approve', message: 'approval is not required on this cluster' } as const);
        if (approval.decision !== 'approve') {
          const removed = await teardown(false);
          const rejected = approval.decision === 'reject';
          if (removed) {
            ctx.events.record(
              nabsl,
              'Warning',
              rejected ? 'ApprovalRevoked' : 'ApprovalPending',
              'Approve',
              `Velero BackupStorageLocation ${uuid} and its Secret were removed: ${approval.message}`,
            );
          }
          set({
            type: 'ClusterAdminApproved',
            status: rejected ? 'False' : 'Unknown',
            reason: rejected ? 'Rejected' : 'Pending',
            message: approval.message,
          });
          conditions = conditions.filter(
            (c) => c.type !== 'SecretSynced' && c.type !== 'BackupStorageLocationSynced',
          );
          await writeStatus({ ...unmirrored(), phase: rejected ? 'BackingOff' : 'New' });
          return undefined;
        }
        set({ type: 'ClusterAdminApproved', status: 'True', reason: 'Approved', message: approval.message });

        // The endpoint must answer before Velero is given the location (or a change of it): Velero's
        // plugin would wait for a silent store forever (bsl-probe.ts).
        const bsl = made.bsls.find((b) => b.metadata.name === uuid && b.metadata.namespace === veleroNs);
        const bucket = String((desired.objectStorage as JsonObject).bucket ?? '');
        const reach = await probeEndpoint(desired.config as JsonObject, bucket);
        if (!reach.ok) {
          const before = conditions.find((c) => c.type === 'EndpointReachable');
          if (before?.status !== 'False' || before.message !== reach.message) {
            ctx.events.record(nabsl, 'Warning', 'EndpointUnreachable', 'Validate', reach.message);
          }
          set({
            type: 'EndpointReachable',
            status: 'False',
            reason: 'EndpointUnreachable',
            message: reach.message,
          });
          await writeStatus(bsl ? { ...base } : { ...unmirrored(), phase: 'New' });
          return { requeueAfterMs: SecretResyncMs };
        }
        set({
          type: 'EndpointReachable',
          status: 'True',
          reason: 'EndpointAnswers',
          message: `the endpoint answered within the ${EndpointProbeTimeoutMs / 1000}s tenantkit allows`,
        });

        // Step 4: the Secret copy in Velero's namespace: a file tenantkit writes, holding only the
        // static keys read from the tenant's (never the tenant's bytes).
        const meta = {
          name: uuid,
          namespace: veleroNs,
          labels: { ...managedLabels, [Labels.nabslUuid]: uuid },
          annotations: { [Annotations.nabslName]: name, [Annotations.nabslNamespace]: ns },
        };
        const data = {
          [credential.key]: Buffer.from(renderCredentials(read.keys)).toString('base64'),
        };
        const copy = await ctx.client.get<Secret>(Resources.secrets, uuid, veleroNs);
        if (!copy) {
          await ctx.client.create<Secret>(Resources.secrets, { metadata: meta, type: 'Opaque', data });
        } else if (!ours(copy)) {
          throw new ForeignObject('Secret', `${veleroNs}/${uuid}`);
        } else if (!jsonEqual(copy.data ?? {}, data) || !jsonEqual(copy.metadata.labels ?? {}, meta.labels)) {
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
          ctx.events.record(
            nabsl,
            'Normal',
            'SecretSynced',
            'Sync',
            `copied the new keys of ${where} for Velero`,
          );
        }
        set({
          type: 'SecretSynced',
          status: 'True',
          reason: 'SecretSynced',
          message: `the static keys of ${where} (profile ${profile}) are copied to Velero's namespace`,
        });

        // Step 5: the Velero BSL, named and labelled by the NACUUID.
        const bslType = VeleroResources.backupStorageLocations;
        if (!bsl) {
          try {
            await ctx.client.create(bslType, { metadata: meta, spec: desired } as KubeObject);
            ctx.events.record(
              nabsl,
              'Normal',
              'BackupStorageLocationCreated',
              'Create',
              `created Velero BackupStorageLocation ${uuid} (bucket ${(desired.objectStorage as JsonObject).bucket}, prefix ${(desired.objectStorage as JsonObject).prefix})`,
            );
          } catch (err) {
            if (!isAlreadyExists(err)) throw err;
            // Ours, not in the cache yet; or someone else's, which is left alone.
            const existing = await ctx.client.get<VeleroObject>(bslType, uuid, veleroNs);
            if (existing && !ours(existing)) {
              throw new ForeignObject('BackupStorageLocation', `${veleroNs}/${uuid}`);
            }
          }
          set({
            type: 'BackupStorageLocationSynced',
            status: 'True',
            reason: 'BackupStorageLocationCreated',
            message: `Velero BackupStorageLocation ${uuid} created`,
          });
          await writeStatus({ ...unmirrored(), phase: 'Created' });
          return { requeueAfterMs: SecretResyncMs };
        }
        if (!jsonEqual(bsl.spec ?? {}, desired)) {
          // The tenant changed the location (approved again when approval is required): Velero follows.
          // Carries the cached resourceVersion: a stale cache fails (409) and is retried.
          await ctx.client.replace(bslType, { ...bsl, spec: desired } as KubeObject);
        }
        const veleroStatus = bsl.status;
        set({
          type: 'BackupStorageLocationSynced',
          status: 'True',
          reason: 'BackupStorageLocationSynced',
          message: `Velero BackupStorageLocation ${uuid} is ${(veleroStatus?.phase as string | undefined) ?? 'not validated yet'}`,
        });
        await writeStatus({
          ...base,
          phase: 'Created',
          veleroBackupStorageLocation: {
            nacuuid: uuid,
            name: uuid,
            namespace: veleroNs,
            ...(veleroStatus ? { status: veleroStatus as never } : {}),
          },
        });
        return { requeueAfterMs: SecretResyncMs };
      };

      try {
        return await sync(uuid);
      } catch (err) {
        if (!(err instanceof ForeignObject)) throw err;
        // Someone else's object under this location's name: left alone, and nothing of ours may use it.
        await teardown(false);
        const message = `${err.message} (it lacks tenantkit's labels or origin annotations for ${ns}/${name}); tenantkit leaves it alone and this location is not used. Delete this NonAdminBackupStorageLocation and create it again (it gets a new name in Velero's namespace), or ask your admin about that ${err.kind}`;
        ctx.events.record(nabsl, 'Warning', 'ForeignObject', 'Sync', message);
        const types: Record<string, string> = {
          Secret: 'SecretSynced',
          NonAdminBackupStorageLocationRequest: 'ClusterAdminApproved',
        };
        set({
          type: types[err.kind] ?? 'BackupStorageLocationSynced',
          status: 'False',
          reason: 'ForeignObject',
          message,
        });
        await writeStatus({ ...unmirrored(), phase: 'BackingOff' });
        return { requeueAfterMs: SecretResyncMs };
      }
    });
}

type Approval = { decision: 'approve' | 'reject' | 'pending'; message: string };

/**
 * The admin's decision on `desired`, through the request named by the NACUUID in Velero's namespace:
 * created when missing; when the tenant's spec changed since the admin looked, the decision goes back
 * to pending (first) and the request shows the new spec (second), so an approval never carries over to
 * a spec the admin did not see.
 */
async function approvalOf(
  ctx: ReconcileContext,
  nabsl: NonAdminBackupStorageLocation,
  uuid: string,
  veleroNs: string,
  desired: JsonObject,
  request: Request | undefined,
): Promise<Approval> {
  const ns = nabsl.metadata.namespace!;
  const name = nabsl.metadata.name!;
  const pending = (message: string): Approval => ({ decision: 'pending', message });
  const wait = `waiting for a cluster admin to approve NonAdminBackupStorageLocationRequest ${uuid} (namespace ${veleroNs}); ask your admin`;
  const wanted = { nacuuid: uuid, name, namespace: ns, requestedSpec: desired };
  const kind = 'NonAdminBackupStorageLocationRequest';
  // An admin's decision counts only on the request tenantkit made for this very location.
  if (request && !isMadeFor(request, uuid, ns, name)) throw new ForeignObject(kind, `${veleroNs}/${uuid}`);
  if (!request) {
    try {
      await ctx.client.create<Request>(requestType, {
        metadata: {
          name: uuid,
          namespace: veleroNs,
          labels: { ...managedLabels, [Labels.nabslUuid]: uuid },
          annotations: { [Annotations.nabslName]: name, [Annotations.nabslNamespace]: ns },
        },
        spec: { approvalDecision: 'pending' },
      } as Request);
      ctx.events.record(nabsl, 'Normal', 'ApprovalRequested', 'Approve', wait);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const existing = await ctx.client.get<Request>(requestType, uuid, veleroNs);
      if (existing && !isMadeFor(existing, uuid, ns, name)) {
        throw new ForeignObject(kind, `${veleroNs}/${uuid}`);
      }
    }
    // Its status is written when the informer brings the request back.
    return pending(wait);
  }
  const shown = request.status?.nonAdminBackupStorageLocation;
  const decision = request.spec?.approvalDecision ?? 'pending';
  if (!shown || !jsonEqual(shown as unknown as Json, wanted as unknown as Json)) {
    // The admin has not seen this spec: any decision taken so far was about another one (or none).
    try {
      let rv = request.metadata.resourceVersion;
      if (decision !== 'pending') {
        const updated = await ctx.client.patch<Request>(
          requestType,
          uuid,
          veleroNs,
          { metadata: { resourceVersion: rv }, spec: { approvalDecision: 'pending' } },
          PatchType.merge,
        );
        rv = updated.metadata.resourceVersion;
        ctx.events.record(
          nabsl,
          'Normal',
          'ApprovalRequested',
          'Approve',
          `the location changed after the admin's decision (${decision}); asking again: ${wait}`,
        );
      }
      // Guarded by resourceVersion: an admin decision made in between is judged again, not overwritten.
      await ctx.client.patch<Request>(
        requestType,
        uuid,
        veleroNs,
        {
          metadata: { resourceVersion: rv },
          status: { phase: 'Pending', nonAdminBackupStorageLocation: wanted },
        },
        PatchType.merge,
        'status',
      );
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
    return pending(wait);
  }
  if (request.status?.phase !== phaseOf(decision)) {
    await ctx.client.patch<Request>(
      requestType,
      uuid,
      veleroNs,
      { status: { phase: phaseOf(decision) } },
      PatchType.merge,
      'status',
    );
  }
  if (decision === 'approve') {
    return {
      decision,
      message: `approved by a cluster admin (NonAdminBackupStorageLocationRequest ${uuid})`,
    };
  }
  if (decision === 'reject') {
    return {
      decision,
      message: `a cluster admin rejected this location (NonAdminBackupStorageLocationRequest ${uuid} in ${veleroNs}); ask your admin why, or change the spec to ask again`,
    };
  }
  return pending(wait);
}

const phaseOf = (decision: string) =>
  decision === 'approve' ? 'Approved' : decision === 'reject' ? 'Rejected' : 'Pending';
