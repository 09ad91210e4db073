// NonAdminBackups for Velero Backups that already exist: a schedule's runs and backups that backup sync
// found without a NonAdminBackup. Such a NAB carries the label `Labels.syncedFrom` (value: the Velero
// Backup's name, which for a NonAdminBackup's own Backup is also its NACUUID) and no status; the NAB
// controller then adopts that Backup instead of making one, but only when tenantkit's own records say the
// Backup belongs to the NAB's namespace (velero/ownership.ts, velero/ownerships.ts). Tenants can write
// labels, so the label is only a request: the admission webhook (admission/synced-from.ts) and the
// controller both check it, and a NAB carrying it never makes a Velero Backup of its own (that would
// duplicate the one it names).
import { type NonAdminBackup, NonAdminBackupCrd } from '../../../crds/backup.ts';
import { VeleroResources } from '../../../crds/velero.ts';
import { isAlreadyExists, isForbidden, isNotFound } from '../../../kube/client.ts';
import type { ReconcileContext } from '../../../kube/controller.ts';
import { ensureFinalizer } from '../../../kube/finalizers.ts';
import type { KubeObject, OwnerReference } from '../../../kube/resources.ts';
import type { StatusWriter } from '../../../kube/status.ts';
import { Annotations, Labels, NabFinalizer, syncedFromOf, type VeleroBackup } from '../../model.ts';
import type { BackupPolicy } from '../../policy/config.ts';
import { adoptionProblem, type Ownerships } from '../../velero/ownerships.ts';
import { backOff } from '../back-off.ts';

type Status = NonNullable<NonAdminBackup['status']>;

/** Label values are at most 63 characters; a longer Backup name cannot be named by the label. */
const maxLabelValue = 63;

/**
 * The Velero Backup an adopted NAB mirrors (by the name in its status), while it still belongs to the
 * NAB's namespace; undefined for other NABs. Looked up in Velero's namespace (the admin's config), never
 * in the namespace the status names: a status is only as trustworthy as whoever wrote it last.
 */
export function adoptedBackup(
  o: Ownerships,
  nab: NonAdminBackup,
  veleroNamespace: string,
): VeleroBackup | undefined {
  if (syncedFromOf(nab) === undefined) return undefined;
  const ref = nab.status?.veleroBackup;
  if (!ref?.name) return undefined;
  const backup = o.backup(veleroNamespace, ref.name);
  return backup && o.ownerOf(backup).namespace === nab.metadata.namespace ? backup : undefined;
}

/** The NABs to revisit when `backup` changes: those in its owner's namespace that name it. */
export function nabKeysFor(o: Ownerships, backup: KubeObject): string[] {
  const owner = o.ownerOf(backup as VeleroBackup).namespace;
  if (!owner) return [];
  return o.nabsFor(owner, backup.metadata.name!).map((n) => `${n.metadata.namespace}/${n.metadata.name}`);
}

interface AdoptHelpers {
  policy: BackupPolicy;
  status: StatusWriter<Status>;
}

/**
 * A NAB with the sync label whose Backup is not (or no longer) found: adopt the Backup the label names,
 * or back off saying why. Never creates a Velero Backup.
 */
export async function reconcileAdoption(
  o: Ownerships,
  nab: NonAdminBackup,
  ctx: ReconcileContext,
  { policy, status }: AdoptHelpers,
): Promise<undefined> {
  const ns = nab.metadata.namespace!;
  const name = syncedFromOf(nab)!;
  const base: Status = { ...(nab.status ?? {}) };
  const refuse = (reason: string, message: string) =>
    backOff(status, { reason, message }, { action: 'Adopt' });
  if (name.length > maxLabelValue) return refuse('NotAdoptable', `label ${Labels.syncedFrom} is too long`);
  const backup = o.backup(policy.veleroNamespace, name);
  if (!backup && base.veleroBackup?.name === name) {
    return refuse(
      'BackupNotFound',
      `Velero Backup ${name} no longer exists (expired or deleted); if its data is still in object storage, Velero's sync brings it back and this NonAdminBackup follows it again; otherwise delete this NonAdminBackup`,
    );
  }
  const problem = adoptionProblem(o, policy, ns, name);
  if (problem) {
    ctx.logger.info({ nab: `${ns}/${nab.metadata.name}`, backup: name }, 'refused to adopt a Velero Backup');
    return refuse('NotAdoptable', problem);
  }
  const other = o
    .nabsFor(ns, name)
    .find((n) => n.metadata.name !== nab.metadata.name && n.status?.veleroBackup?.name === name);
  if (other) {
    return refuse(
      'AlreadyAdopted',
      `Velero Backup ${name} is already NonAdminBackup ${other.metadata.name}'s; delete this NonAdminBackup`,
    );
  }
  // Deleting the NAB removes the Backup object (../backup/reconciler.ts).
  await ensureFinalizer(ctx.client, NonAdminBackupCrd.type, nab, NabFinalizer);
  status.event({
    type: 'Normal',
    reason: 'BackupAdopted',
    action: 'Adopt',
    message: `follows existing Velero Backup ${name}`,
  });
  await status.write({
    ...base,
    phase: 'Created',
    veleroBackup: { nacuuid: name, name, namespace: policy.veleroNamespace },
    conditions: status.condition(base, {
      type: 'Accepted',
      status: 'True',
      reason: 'BackupAdopted',
      message: `adopted existing Velero Backup ${name}, which belongs to namespace ${ns}`,
    }),
  });
  return undefined;
}

const runSuffix = /-([0-9]{14})$/;
const maxName = 253;

/**
 * The NAB name for a backup of `namespace`, first free one of: for a schedule run `<schedule>-<timestamp>`,
 * for a NonAdminBackup's Backup its original name; then the Backup's name, then `synced-<Backup name>`.
 * Deterministic, so two passes (or the schedule controller and sync) pick the same name.
 */
export function syncedNabName(
  backup: KubeObject,
  namespace: string,
  taken: (name: string) => boolean,
): string {
  const a = backup.metadata.annotations ?? {};
  const name = backup.metadata.name!;
  const candidates: string[] = [];
  const run = runSuffix.exec(name);
  const nas = a[Annotations.nasName];
  if (a[Annotations.nasNamespace] === namespace && nas && run) {
    candidates.push(`${nas.slice(0, maxName - 15).replace(/[-.]+$/, '')}-${run[1]}`);
  }
  const nab = a[Annotations.nabName];
  if (a[Annotations.nabNamespace] === namespace && nab) candidates.push(nab);
  candidates.push(name, `synced-${name}`.slice(0, maxName));
  return candidates.find((c) => !taken(c)) ?? candidates[candidates.length - 1]!;
}

/**
 * Makes the NAB of `namespace` for an existing Velero Backup, unless one exists. Safe to repeat and to
 * crash in: the Backup is read live (a NAB being deleted may just have removed it), NABs already naming
 * it are listed live by label just before the create, and the name is deterministic. The caller must
 * serialize calls per Backup (one controller key).
 */
export async function ensureSyncedNab(
  o: Ownerships,
  ctx: ReconcileContext,
  backup: VeleroBackup,
  namespace: string,
  ownerReferences?: OwnerReference[],
): Promise<NonAdminBackup | undefined> {
  const name = backup.metadata.name!;
  if (name.length > maxLabelValue) {
    ctx.logger.info({ backup: name }, 'backup name too long for the sync label; not synced');
    return undefined;
  }
  if (o.nabsFor(namespace, name).length > 0) return undefined;
  const live = await ctx.client.get<VeleroBackup>(VeleroResources.backups, name, backup.metadata.namespace);
  if (!live || live.metadata.deletionTimestamp) return undefined;
  const type = NonAdminBackupCrd.type;
  const existing = await ctx.client.list<NonAdminBackup>(type, {
    namespace,
    labelSelector: `${Labels.syncedFrom}=${name}`,
  });
  if (existing.items.length > 0) return undefined;
  const nabName = syncedNabName(backup, namespace, (n) => o.nabs.get(`${namespace}/${n}`) !== undefined);
  try {
    const nab = await ctx.client.create<NonAdminBackup>(type, {
      metadata: {
        name: nabName,
        namespace,
        labels: { [Labels.syncedFrom]: name },
        ...(ownerReferences ? { ownerReferences } : {}),
      },
      // Empty: the Backup exists already; status.veleroBackup.spec shows what it did.
      spec: { backupSpec: {} },
    } as NonAdminBackup);
    ctx.events.record(nab, 'Normal', 'BackupSynced', 'Sync', `made for existing Velero Backup ${name}`);
    return nab;
  } catch (err) {
    // Taken by a NAB our cache had not seen yet: the next pass sees it and picks the next name.
    if (isAlreadyExists(err)) throw new Error(`NonAdminBackup ${namespace}/${nabName} exists; retrying`);
    // The namespace is going away: nothing to sync into.
    if (isForbidden(err) || isNotFound(err)) {
      ctx.logger.info({ namespace, backup: name, err: String(err) }, 'could not make a NonAdminBackup');
      return undefined;
    }
    throw err;
  }
}
