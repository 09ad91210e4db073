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
} from '../../../crds/backup.ts';
import { VeleroResources } from '../../../crds/velero.ts';
import type { Condition, ConditionInput } from '../../../kube/conditions.ts';
import {
  generationChanged,
  ObjectReconciler,
  type ReconcileContext,
  type ReconcileResult,
} from '../../../kube/controller.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../../../kube/finalizers.ts';
import type { Informer } from '../../../kube/informer.ts';
import type { Manager } from '../../../kube/manager.ts';
import type { KubeObject } from '../../../kube/resources.ts';
import { type StatusView, StatusWriter, type WriteOptions } from '../../../kube/status.ts';
import { Index, NabslFinalizer, type VeleroObject } from '../../model.ts';
import { bslSpecProblems, credentialProfile, veleroBslSpec } from '../../policy/bsl-validate.ts';
import { type BackupPolicy, configType, currentPolicy, NonAdminDisabled } from '../../policy/config.ts';
import { renderCredentials } from '../../policy/credentials.ts';
import { type JsonObject, jsonEqual } from '../../policy/enforce.ts';
import { nacObjectName } from '../../velero/names.ts';
import { ManagedTypes, managedCache, Origin } from '../caches.ts';
import { approvalOf, ForeignObject } from './approval.ts';
import { isMadeFor, isNacuuidOf } from './lookup.ts';
import {
  type Credential,
  createBslObject,
  readTenantCredential,
  removeLocationObjects,
  syncSecretCopy,
} from './objects.ts';
import { EndpointProbeTimeoutMs, probeEndpoint } from './probe.ts';
import { type LocationUse, locationUse } from './use.ts';

/**
 * How often an approved location's credential Secret is read again (tenantkit does not watch Secrets:
 * that would need list/watch on every Secret of the cluster). A change to the NABSL applies at once.
 */
export const SecretResyncMs = 30_000;

export const NabslType = NonAdminBackupStorageLocationCrd.type;
type Status = NonNullable<NonAdminBackupStorageLocation['status']>;
type Request = NonAdminBackupStorageLocationRequest;
type Result = Promise<ReconcileResult | undefined>;

/** What the NABSL controller reads, wired by registerNabslController. */
export interface NabslSources {
  nabsls: Informer<NonAdminBackupStorageLocation>;
  bsls: Informer<VeleroObject>;
  requests: Informer<Request>;
  configs: Informer<NonAdminBackupConfig>;
  use: LocationUse;
}

/**
 * One reconcile's view of a NABSL. Its conditions build up as the steps pass (each step sets its own),
 * and every write sends them along.
 */
interface Seen extends StatusView<Status> {
  nabsl: NonAdminBackupStorageLocation;
  ns: string;
  name: string;
  policy: BackupPolicy;
  veleroNs: string;
  /** The NACUUID status claims, and that NACUUID if tenantkit could have written it for this location. */
  claimed: string | undefined;
  uuid: string | undefined;
  /** The BSLs the cache holds that tenantkit made for this location. */
  bsls: VeleroObject[];
  conditions: Condition[];
}

export function registerNabslController(manager: Manager): void {
  const nabsls = manager.informer<NonAdminBackupStorageLocation>(NabslType);
  const bsls = managedCache(manager, 'backupStorageLocations');
  const reconciler = new NabslReconciler(
    {
      nabsls,
      bsls,
      requests: managedCache<Request>(manager, 'locationRequests'),
      configs: manager.informer<NonAdminBackupConfig>(configType),
      use: locationUse(manager),
    },
    nabsls,
  );
  /** The location whose BSL a tenantkit Backup writes to (a deletion may wait for that Backup). */
  const locationOfBackup = (b: KubeObject & { spec?: JsonObject }) => {
    const bsl = bsls.get(`${b.metadata.namespace}/${String(b.spec?.storageLocation ?? '')}`);
    return bsl ? Origin.nabsl(bsl) : [];
  };

  manager
    .controller('nonadminbackupstoragelocation')
    .for(NabslType)
    .watches(ManagedTypes.backupStorageLocations, Origin.nabsl)
    .watches(ManagedTypes.locationRequests, Origin.nabsl)
    .watches(ManagedTypes.backups, locationOfBackup)
    // A policy change (enforced fields, approval on or off) applies live.
    .watchesAll(configType, generationChanged)
    .concurrency(4)
    .complete(reconciler);
}

export class NabslReconciler extends ObjectReconciler<NabslSources, NonAdminBackupStorageLocation, Seen> {
  protected override async converge(seen: Seen): Result {
    const { nabsl, ctx } = seen;
    if (seen.claimed && !seen.uuid) return this.refuseNacuuid(seen, seen.claimed);
    if (!seen.policy.enabled) {
      set(seen, { type: 'Accepted', status: 'False', ...NonAdminDisabled });
      return this.write(seen, { ...seen.base, phase: 'BackingOff' });
    }
    const spec = { ...((nabsl.spec?.backupStorageLocationSpec ?? {}) as JsonObject) };
    const { policy } = seen;
    const problems = bslSpecProblems(seen.ns, spec, policy.enforceBSLSpec, policy.allowedStorageEndpoints);
    if (problems.length > 0) return this.rejectSpec(seen, problems.join('; '));
    const current = await ensureFinalizer(ctx.client, NabslType, nabsl, NabslFinalizer);
    set(seen, {
      type: 'Accepted',
      status: 'True',
      reason: 'StorageLocationAccepted',
      message: `storage location accepted against NonAdminBackupConfig generation ${policy.generation}`,
    });
    if (!seen.uuid) return this.admit(seen, current.metadata.resourceVersion);
    try {
      return await this.sync(seen, seen.uuid, spec);
    } catch (err) {
      if (!(err instanceof ForeignObject)) throw err;
      return this.foreign(seen, err);
    }
  }

  protected override read(nabsl: NonAdminBackupStorageLocation, ctx: ReconcileContext): Seen {
    const policy = currentPolicy(this.from.configs);
    const ns = nabsl.metadata.namespace!;
    const name = nabsl.metadata.name!;
    const claimed = nabsl.status?.veleroBackupStorageLocation?.nacuuid;
    // Only a NACUUID tenantkit could have written for this location is acted on, and only in the
    // policy's Velero namespace: status.*.namespace is never used.
    const uuid = claimed && isNacuuidOf(claimed, ns, name) ? claimed : undefined;
    const bsls = uuid
      ? this.from.bsls.byIndex(Index.nabslUuid, uuid).filter((o) => isMadeFor(o, uuid, ns, name))
      : [];
    const status = new StatusWriter<Status>(ctx, NabslType, nabsl);
    const base = status.current;
    const conditions = [...((base.conditions ?? []) as Condition[])];
    const veleroNs = policy.veleroNamespace;
    return { nabsl, ns, name, policy, veleroNs, claimed, uuid, bsls, base, conditions, status, ctx };
  }

  /** Writes `next` with the conditions set so far. */
  private async write(seen: Seen, next: Status, options?: WriteOptions): Promise<undefined> {
    await seen.status.write({ ...next, conditions: seen.conditions } as Status, options);
    return undefined;
  }

  /** Removed by the tenant: the BSL, the Secret copy and the request go; the bucket's data stays. */
  protected override async finalize(seen: Seen): Result {
    if (!hasFinalizer(seen.nabsl, NabslFinalizer)) return undefined;
    const { busy } = await this.teardown(seen, true);
    if (busy > 0) {
      const message = `deletion waits for ${busy} Velero backup(s) to this location to finish (Velero fails a queued backup whose location is gone)`;
      set(seen, { type: 'Deleting', status: 'True', reason: 'BackupsInProgress', message });
      return this.write(seen, { ...seen.base });
    }
    await removeFinalizer(seen.ctx.client, NabslType, seen.nabsl, NabslFinalizer);
    return undefined;
  }

  /**
   * Not a name tenantkit gives this location (e.g. a status brought back by a restore): nothing in
   * Velero's namespace is touched under it.
   */
  private async refuseNacuuid(seen: Seen, claimed: string): Result {
    const message = `status.veleroBackupStorageLocation.nacuuid "${claimed}" was not written by tenantkit for this location (it would start with the namespace and name, then a UUID), so tenantkit does not act on it; delete this NonAdminBackupStorageLocation and create it again`;
    set(seen, { type: 'Accepted', status: 'False', reason: 'InvalidNACUUID', message });
    return this.write(
      seen,
      { ...seen.base, phase: 'BackingOff' },
      { event: { type: 'Warning', reason: 'InvalidNACUUID', action: 'Validate', message } },
    );
  }

  /** A spec the rules refuse; also a policy tightened after approval: Velero stops using the location. */
  private async rejectSpec(seen: Seen, message: string): Result {
    seen.status.event({ type: 'Warning', reason: 'InvalidStorageLocationSpec', action: 'Validate', message });
    await this.teardown(seen, false);
    set(seen, { type: 'Accepted', status: 'False', reason: 'InvalidStorageLocationSpec', message });
    return this.write(seen, { ...unmirrored(seen), phase: 'BackingOff' });
  }

  /**
   * Step 1: the identity, in status, before anything exists in Velero's namespace. Guarded by
   * resourceVersion: a reconcile on a cache that has not seen an earlier step 1 yet would otherwise write
   * a second NACUUID over it, and the first one's objects would be orphaned.
   */
  private async admit(seen: Seen, resourceVersion?: string): Result {
    const id = nacObjectName(seen.ns, seen.name);
    return this.write(
      seen,
      {
        ...seen.base,
        phase: 'New',
        veleroBackupStorageLocation: { nacuuid: id, name: id, namespace: seen.veleroNs },
      },
      { ifVersion: resourceVersion },
    );
  }

  /** Steps 2 to 5, once the location has its NACUUID. */
  private async sync(seen: Seen, uuid: string, spec: JsonObject): Result {
    const { ns, policy, veleroNs, ctx } = seen;
    // Step 2: the tenant's Secret, read from the tenant's namespace only; only its static keys are kept.
    const credential = spec.credential as Credential;
    // The BSL that would be made (its profile is the copy's; the tenant's picks the keys to take).
    const desired = veleroBslSpec(ns, spec, policy.enforceBSLSpec, uuid);
    const profile = credentialProfile(spec, policy.enforceBSLSpec);
    const read = await readTenantCredential(ctx, ns, credential, profile);
    if (!read.keys) return this.invalidCredential(seen, read.problems.join('; '));
    // Step 3: approval, for exactly the BSL spec that would be created.
    const approved = await this.approve(seen, uuid, desired);
    if (!approved) return undefined;
    // The endpoint must answer before Velero is given the location (or a change of it): Velero's plugin
    // would wait for a silent store forever (probe.ts).
    const bsl = seen.bsls.find((b) => b.metadata.name === uuid && b.metadata.namespace === veleroNs);
    const bucket = String((desired.objectStorage as JsonObject).bucket ?? '');
    const reach = await probeEndpoint(desired.config as JsonObject, bucket);
    if (!reach.ok) return this.unreachable(seen, reach.message, bsl !== undefined);
    set(seen, {
      type: 'EndpointReachable',
      status: 'True',
      reason: 'EndpointAnswers',
      message: `the endpoint answered within the ${EndpointProbeTimeoutMs / 1000}s tenantkit allows`,
    });
    // Step 4: the Secret copy in Velero's namespace.
    await syncSecretCopy(seen, uuid, credential, renderCredentials(read.keys));
    set(seen, {
      type: 'SecretSynced',
      status: 'True',
      reason: 'SecretSynced',
      message: `the static keys of ${read.where} (profile ${profile}) are copied to Velero's namespace`,
    });
    // Step 5: the Velero BSL, named and labelled by the NACUUID.
    return bsl ? this.updateBsl(seen, uuid, bsl, desired) : this.createBsl(seen, uuid, desired);
  }

  private async invalidCredential(seen: Seen, message: string): Result {
    seen.status.event({ type: 'Warning', reason: 'InvalidCredential', action: 'Validate', message });
    await this.teardown(seen, false);
    set(seen, { type: 'SecretSynced', status: 'False', reason: 'InvalidCredential', message });
    await this.write(seen, { ...unmirrored(seen), phase: 'BackingOff' });
    // The Secret is not watched: look again later.
    return { requeueAfterMs: SecretResyncMs };
  }

  /** The admin's decision (when required); while not approved, nothing of the location stays in Velero. */
  private async approve(seen: Seen, uuid: string, desired: JsonObject): Promise<boolean> {
    const { policy, veleroNs, ctx, nabsl } = seen;
    const approval = policy.requireApprovalForBSL
      ? await approvalOf(ctx, nabsl, uuid, veleroNs, desired, this.from.requests.get(`${veleroNs}/${uuid}`))
      : ({ decision: 'approve', message: 'approval is not required on this cluster' } as const);
    if (approval.decision === 'approve') {
      set(seen, {
        type: 'ClusterAdminApproved',
        status: 'True',
        reason: 'Approved',
        message: approval.message,
      });
      return true;
    }
    const { removed } = await this.teardown(seen, false);
    const rejected = approval.decision === 'reject';
    if (removed) {
      seen.status.event({
        type: 'Warning',
        reason: rejected ? 'ApprovalRevoked' : 'ApprovalPending',
        action: 'Approve',
        message: `Velero BackupStorageLocation ${uuid} and its Secret were removed: ${approval.message}`,
      });
    }
    set(seen, {
      type: 'ClusterAdminApproved',
      status: rejected ? 'False' : 'Unknown',
      reason: rejected ? 'Rejected' : 'Pending',
      message: approval.message,
    });
    seen.conditions = seen.conditions.filter(
      (c) => c.type !== 'SecretSynced' && c.type !== 'BackupStorageLocationSynced',
    );
    await this.write(seen, { ...unmirrored(seen), phase: rejected ? 'BackingOff' : 'New' });
    return false;
  }

  private async unreachable(seen: Seen, message: string, hasBsl: boolean): Result {
    const before = seen.conditions.find((c) => c.type === 'EndpointReachable');
    const known = before?.status === 'False' && before.message === message;
    set(seen, { type: 'EndpointReachable', status: 'False', reason: 'EndpointUnreachable', message });
    await this.write(
      seen,
      hasBsl ? { ...seen.base } : { ...unmirrored(seen), phase: 'New' },
      known ? {} : { event: { type: 'Warning', reason: 'EndpointUnreachable', action: 'Validate', message } },
    );
    return { requeueAfterMs: SecretResyncMs };
  }

  private async createBsl(seen: Seen, uuid: string, desired: JsonObject): Result {
    await createBslObject(seen, uuid, desired);
    set(seen, {
      type: 'BackupStorageLocationSynced',
      status: 'True',
      reason: 'BackupStorageLocationCreated',
      message: `Velero BackupStorageLocation ${uuid} created`,
    });
    await this.write(seen, { ...unmirrored(seen), phase: 'Created' });
    return { requeueAfterMs: SecretResyncMs };
  }

  private async updateBsl(seen: Seen, uuid: string, bsl: VeleroObject, desired: JsonObject): Result {
    if (!jsonEqual(bsl.spec ?? {}, desired)) {
      // The tenant changed the location (approved again when approval is required): Velero follows.
      // Carries the cached resourceVersion: a stale cache fails (409) and is retried.
      await seen.ctx.client.replace(VeleroResources.backupStorageLocations, {
        ...bsl,
        spec: desired,
      } as KubeObject);
    }
    const veleroStatus = bsl.status;
    set(seen, {
      type: 'BackupStorageLocationSynced',
      status: 'True',
      reason: 'BackupStorageLocationSynced',
      message: `Velero BackupStorageLocation ${uuid} is ${(veleroStatus?.phase as string | undefined) ?? 'not validated yet'}`,
    });
    await this.write(seen, {
      ...seen.base,
      phase: 'Created',
      veleroBackupStorageLocation: {
        nacuuid: uuid,
        name: uuid,
        namespace: seen.veleroNs,
        ...(veleroStatus ? { status: veleroStatus as never } : {}),
      },
    });
    return { requeueAfterMs: SecretResyncMs };
  }

  /** Someone else's object under this location's name: left alone, and nothing of ours may use it. */
  private async foreign(seen: Seen, err: ForeignObject): Result {
    await this.teardown(seen, false);
    const message = `${err.message} (it lacks tenantkit's labels or origin annotations for ${seen.ns}/${seen.name}); tenantkit leaves it alone and this location is not used. Delete this NonAdminBackupStorageLocation and create it again (it gets a new name in Velero's namespace), or ask your admin about that ${err.kind}`;
    const types: Record<string, string> = {
      Secret: 'SecretSynced',
      NonAdminBackupStorageLocationRequest: 'ClusterAdminApproved',
    };
    set(seen, {
      type: types[err.kind] ?? 'BackupStorageLocationSynced',
      status: 'False',
      reason: 'ForeignObject',
      message,
    });
    await this.write(
      seen,
      { ...unmirrored(seen), phase: 'BackingOff' },
      { event: { type: 'Warning', reason: 'ForeignObject', action: 'Sync', message } },
    );
    return { requeueAfterMs: SecretResyncMs };
  }

  /**
   * Removes the BSL and the Secret copy (and, when `all`, the request): nothing may outlive approval.
   * Only objects carrying this location's marks, each deleted by UID; others are left alone (Event).
   * Velero would fail a queued backup whose location vanished, and that can stall its queue for every
   * tenant (use.ts): the location stays while tenantkit's backups to it are unfinished (`busy`).
   */
  private async teardown(seen: Seen, all: boolean): Promise<{ removed: boolean; busy: number }> {
    const { uuid, veleroNs } = seen;
    if (!uuid) return { removed: false, busy: 0 };
    const busy = this.from.use.unfinishedBackups(veleroNs, uuid).length;
    if (busy > 0) return { removed: false, busy };
    const removed = await removeLocationObjects(seen, uuid, seen.bsls, all);
    return { removed, busy: 0 };
  }
}

/** Sets a condition among the ones this reconcile builds up. */
function set(seen: Seen, c: Omit<ConditionInput, 'observedGeneration'>): void {
  seen.conditions = seen.status.condition({ conditions: seen.conditions } as Status, c);
}

/** The status without the Velero BSL's mirrored state (it is gone, or not made yet). */
const unmirrored = ({ base, uuid, veleroNs }: Seen): Status => ({
  ...base,
  ...(uuid ? { veleroBackupStorageLocation: { nacuuid: uuid, name: uuid, namespace: veleroNs } } : {}),
});
