// The admin's approval of a tenant's storage location (requireApprovalForBSL): a
// NonAdminBackupStorageLocationRequest in Velero's namespace, made by tenantkit for exactly one location
// and read only when it carries tenantkit's marks for that location.
import type {
  NonAdminBackupStorageLocation,
  NonAdminBackupStorageLocationRequest,
} from '../../../crds/backup.ts';
import { NonAdminBackupStorageLocationRequestCrd } from '../../../crds/backup.ts';
import { isAlreadyExists, isConflict, PatchType } from '../../../kube/client.ts';
import type { ReconcileContext } from '../../../kube/controller.ts';
import { Annotations, Labels, managedLabels } from '../../model.ts';
import { type Json, type JsonObject, jsonEqual } from '../../policy/enforce.ts';
import { isMadeFor } from './lookup.ts';

const requestType = NonAdminBackupStorageLocationRequestCrd.type;
type Request = NonAdminBackupStorageLocationRequest;

/** An object under the location's NACUUID that tenantkit did not make for it: left alone. */
export class ForeignObject extends Error {
  readonly kind: string;
  constructor(kind: string, where: string) {
    super(`${kind} ${where} exists but tenantkit did not make it for this location`);
    this.kind = kind;
  }
}

export type Approval = { decision: 'approve' | 'reject' | 'pending'; message: string };

/** One location's question to the admin: the request's name and place, and what it should show. */
interface Ask {
  ctx: ReconcileContext;
  nabsl: NonAdminBackupStorageLocation;
  uuid: string;
  veleroNs: string;
  /** What the request's status shows the admin: the location and the BSL spec that would be made. */
  wanted: { nacuuid: string; name: string; namespace: string; requestedSpec: JsonObject };
  /** The message while the admin has not decided. */
  wait: string;
}

/**
 * The admin's decision on `desired`, through the request named by the NACUUID in Velero's namespace:
 * created when missing; when the tenant's spec changed since the admin looked, the decision goes back
 * to pending (first) and the request shows the new spec (second), so an approval never carries over to
 * a spec the admin did not see.
 */
export async function approvalOf(
  ctx: ReconcileContext,
  nabsl: NonAdminBackupStorageLocation,
  uuid: string,
  veleroNs: string,
  desired: JsonObject,
  request: Request | undefined,
): Promise<Approval> {
  const ns = nabsl.metadata.namespace!;
  const name = nabsl.metadata.name!;
  const ask: Ask = {
    ctx,
    nabsl,
    uuid,
    veleroNs,
    wanted: { nacuuid: uuid, name, namespace: ns, requestedSpec: desired },
    wait: `waiting for a cluster admin to approve NonAdminBackupStorageLocationRequest ${uuid} (namespace ${veleroNs}); ask your admin`,
  };
  // An admin's decision counts only on the request tenantkit made for this very location.
  if (request && !isMadeFor(request, uuid, ns, name))
    throw new ForeignObject(RequestKind, `${veleroNs}/${uuid}`);
  if (!request) {
    await createRequest(ask);
    // Its status is written when the informer brings the request back.
    return { decision: 'pending', message: ask.wait };
  }
  const shown = request.status?.nonAdminBackupStorageLocation;
  if (!shown || !jsonEqual(shown as unknown as Json, ask.wanted as unknown as Json)) {
    // The admin has not seen this spec: any decision taken so far was about another one (or none).
    await showSpec(ask, request);
    return { decision: 'pending', message: ask.wait };
  }
  return readDecision(ask, request);
}

const RequestKind = 'NonAdminBackupStorageLocationRequest';

async function createRequest({ ctx, nabsl, uuid, veleroNs, wanted, wait }: Ask): Promise<void> {
  try {
    await ctx.client.create<Request>(requestType, {
      metadata: {
        name: uuid,
        namespace: veleroNs,
        labels: { ...managedLabels, [Labels.nabslUuid]: uuid },
        annotations: { [Annotations.nabslName]: wanted.name, [Annotations.nabslNamespace]: wanted.namespace },
      },
      spec: { approvalDecision: 'pending' },
    } as Request);
    ctx.events.record(nabsl, 'Normal', 'ApprovalRequested', 'Approve', wait);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    const existing = await ctx.client.get<Request>(requestType, uuid, veleroNs);
    if (existing && !isMadeFor(existing, uuid, wanted.namespace, wanted.name)) {
      throw new ForeignObject(RequestKind, `${veleroNs}/${uuid}`);
    }
  }
}

/** The decision back to pending (when one was taken), then the new spec shown in the request's status. */
async function showSpec({ ctx, nabsl, uuid, veleroNs, wanted, wait }: Ask, request: Request): Promise<void> {
  const decision = request.spec?.approvalDecision ?? 'pending';
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
}

/** The admin's decision on the spec the request shows; its phase follows the decision. */
async function readDecision({ ctx, uuid, veleroNs, wait }: Ask, request: Request): Promise<Approval> {
  const decision = request.spec?.approvalDecision ?? 'pending';
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
  return { decision: 'pending', message: wait };
}

const phaseOf = (decision: string) =>
  decision === 'approve' ? 'Approved' : decision === 'reject' ? 'Rejected' : 'Pending';
