// NonAdminBackup controller: a tenant's NAB becomes a Velero Backup in Velero's namespace, limited to the
// tenant's namespace, with the admin's enforced fields filled in; the Backup's progress is mirrored back.
// Crash safety: the NACUUID goes into status before any Velero object exists, the Backup is named by it
// and found by its label, so a controller killed at any step neither duplicates nor orphans anything.
import { type NonAdminBackup, type NonAdminBackupConfig, NonAdminBackupCrd } from '../api/backup.ts';
import { isAlreadyExists, PatchType } from '../kube/client.ts';
import { type Condition, setCondition } from '../kube/conditions.ts';
import type { ReconcileContext } from '../kube/controller.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../kube/finalizers.ts';
import type { Manager } from '../kube/manager.ts';
import { type KubeObject, objectKey, type ResourceType } from '../kube/resources.ts';
import { finishedPhases, VeleroResources } from '../kube/velero.ts';
import { configType, currentPolicy } from './config.ts';
import { type JsonObject, jsonEqual, withEnforced } from './enforce.ts';
import { Annotations, Labels, ManagedByValue, managedSelector, nacObjectName } from './names.ts';
import { backupQueuePhases, CreatedAtAnnotation, changedFields, QueueTracker } from './queue.ts';
import { backupSpecProblems } from './validate.ts';

export const NabFinalizer = 'tenantkit.io/nonadminbackup';
export const ByNabUuid = 'backup/nab-nacuuid';
const managed = managedSelector;

/** Velero objects tenantkit made, only: the caches never hold anyone else's Backups. */
export const managedBackups: ResourceType = { ...VeleroResources.backups, labelSelector: managed };
export const managedDeleteRequests: ResourceType = {
  ...VeleroResources.deleteBackupRequests,
  labelSelector: managed,
};

type VeleroObject = KubeObject & { spec?: JsonObject; status?: JsonObject };
type Status = NonNullable<NonAdminBackup['status']>;

/** The NAB a Velero object was made for, from the annotations tenantkit wrote (tenants cannot write there). */
const originOf = (o: KubeObject): string[] => {
  const ns = o.metadata.annotations?.[Annotations.nabNamespace];
  const name = o.metadata.annotations?.[Annotations.nabName];
  return ns && name ? [`${ns}/${name}`] : [];
};

/** True for Velero objects tenantkit made (by their labels; only admins write in Velero's namespace). */
export const isManaged = (o: KubeObject): boolean =>
  o.metadata.labels?.[Labels.oadp] === 'True' && o.metadata.labels?.[Labels.managedBy] === ManagedByValue;

export function registerNabController(manager: Manager): void {
  // Velero's queue: every Backup in Velero's namespace counts, not only tenantkit's, so this informer
  // is unfiltered. The tracker's handlers run before the controller's (registered first), so the watch
  // below maps each event to the NABs whose position it changed, and to nothing else.
  const queue = new QueueTracker({
    queuePhases: backupQueuePhases,
    originOf: (o) => (isManaged(o) ? originOf(o)[0] : undefined),
  });
  manager.informer(VeleroResources.backups).addHandlers(queue.handlers());
  const nabs = manager.informer<NonAdminBackup>(NonAdminBackupCrd.type);
  const backups = manager.informer<VeleroObject>(managedBackups);
  const deleteRequests = manager.informer<VeleroObject>(managedDeleteRequests);
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  const uuidOf = (o: KubeObject) => {
    const v = o.metadata.labels?.[Labels.nabUuid];
    return v ? [v] : [];
  };
  backups.addIndex(ByNabUuid, uuidOf);
  deleteRequests.addIndex(ByNabUuid, uuidOf);

  manager
    .controller('nonadminbackup')
    .for(NonAdminBackupCrd.type)
    .watches(managedBackups, originOf)
    .watches(managedDeleteRequests, originOf)
    .watches(VeleroResources.backups, () => queue.drain())
    // A policy change applies live: every NAB is checked again.
    .watches(configType, () => nabs.list().map((n) => objectKey(n.metadata)))
    .concurrency(4)
    .complete(async (key, ctx) => {
      const nab = nabs.get(key);
      if (!nab) return undefined;
      const policy = currentPolicy(configs);
      const uuid = nab.status?.veleroBackup?.nacuuid;
      const backup = uuid ? backups.byIndex(ByNabUuid, uuid)[0] : undefined;
      const type = NonAdminBackupCrd.type;
      const ns = nab.metadata.namespace!;
      const generation = nab.metadata.generation;

      const writeStatus = async (status: Status) => {
        if (jsonEqual(status as never, (nab.status ?? {}) as never)) return;
        await ctx.client.patch(
          type,
          nab.metadata.name!,
          ns,
          { status: changedFields(status as JsonObject, (nab.status ?? {}) as JsonObject) },
          PatchType.merge,
          'status',
        );
      };
      const condition = (status: Status, c: Omit<Condition, 'lastTransitionTime'>): Condition[] =>
        setCondition(status.conditions as Condition[] | undefined, { ...c, observedGeneration: generation });

      // Removed by the tenant: the Velero Backup object goes, its data stays in storage.
      if (nab.metadata.deletionTimestamp) {
        if (!hasFinalizer(nab, NabFinalizer)) return undefined;
        for (const b of uuid ? backups.byIndex(ByNabUuid, uuid) : []) {
          await ctx.client.delete(VeleroResources.backups, b.metadata.name!, b.metadata.namespace);
        }
        if (backup && !nab.spec?.deleteBackup) {
          ctx.events.record(
            nab,
            'Normal',
            'BackupDataKept',
            'Delete',
            `Velero Backup ${backup.metadata.name} was removed but its data stays in object storage; set spec.deleteBackup: true before deleting to remove the data too`,
          );
        }
        await removeFinalizer(ctx.client, type, nab, NabFinalizer);
        return undefined;
      }

      if (spec(nab).deleteBackup === true)
        return deleteBackup(nab, backup, uuid, ctx, writeStatus, condition);

      const base: Status = { ...(nab.status ?? {}) };
      if (!policy.enabled) {
        const message =
          'non-admin backups are not enabled: an admin must set spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"';
        await writeStatus({
          ...base,
          phase: 'BackingOff',
          conditions: condition(base, {
            type: 'Accepted',
            status: 'False',
            reason: 'NonAdminDisabled',
            message,
          }),
        });
        return undefined;
      }

      // Once a Velero Backup exists, the NAB's request is settled: mirror it, whatever the spec says now.
      if (!backup) {
        const problems = backupSpecProblems(ns, tenantSpec(nab), policy.enforceBackupSpec);
        if (problems.length > 0 && !uuid) {
          const message = problems.join('; ');
          ctx.events.record(nab, 'Warning', 'InvalidBackupSpec', 'Validate', message);
          ctx.logger.info({ nab: key, problems }, 'NonAdminBackup rejected');
          await writeStatus({
            ...base,
            phase: 'BackingOff',
            conditions: condition(base, {
              type: 'Accepted',
              status: 'False',
              reason: 'InvalidBackupSpec',
              message,
            }),
          });
          return undefined;
        }
        await ensureFinalizer(ctx.client, type, nab, NabFinalizer);
        if (!uuid) {
          // Step 1: the identity, in status, before anything exists in Velero's namespace.
          const name = nacObjectName(ns, nab.metadata.name!);
          await writeStatus({
            ...base,
            phase: 'New',
            veleroBackup: { nacuuid: name, name, namespace: policy.veleroNamespace },
            conditions: condition(base, {
              type: 'Accepted',
              status: 'True',
              reason: 'BackupAccepted',
              message: `backup accepted against NonAdminBackupConfig generation ${policy.generation}`,
            }),
          });
          return undefined;
        }
        // Step 2: the Velero Backup, named and labelled by the NACUUID.
        const ref = nab.status!.veleroBackup!;
        const backupSpec: JsonObject = {
          ...withEnforced(tenantSpec(nab), policy.enforceBackupSpec),
          includedNamespaces: [ns],
        };
        delete backupSpec.storageLocation;
        try {
          await ctx.client.create(VeleroResources.backups, {
            metadata: {
              name: ref.name!,
              namespace: ref.namespace ?? policy.veleroNamespace,
              labels: {
                [Labels.managedBy]: ManagedByValue,
                [Labels.oadp]: 'True',
                [Labels.nabUuid]: uuid,
              },
              annotations: {
                [Annotations.nabName]: nab.metadata.name!,
                [Annotations.nabNamespace]: ns,
                [CreatedAtAnnotation]: new Date().toISOString(),
              },
            },
            spec: backupSpec,
          } as KubeObject);
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
        }
        return undefined;
      }

      // Step 3: mirror the Velero Backup, with its place in Velero's queue. Until the queue's informer
      // saw the Backup its position is unknown; that informer's event brings this NAB back.
      const veleroNs = backup.metadata.namespace!;
      if (!queue.has(veleroNs, backup.metadata.name!)) return undefined;
      const veleroPhase = (backup.status?.phase as string | undefined) ?? 'New';
      // One Event when the outcome is known (not one per step: that would double the API writes per NAB).
      const before = nab.status?.veleroBackup?.status?.phase;
      if (before !== veleroPhase && (finishedPhases as readonly string[]).includes(veleroPhase)) {
        const ok = veleroPhase === 'Completed';
        ctx.events.record(
          nab,
          ok ? 'Normal' : 'Warning',
          `Backup${veleroPhase}`,
          'Backup',
          `Velero Backup ${backup.metadata.name} ended ${veleroPhase}${ok ? '' : '; see its logs and status.veleroBackup.status'}`,
        );
      }
      await writeStatus({
        ...base,
        phase: 'Created',
        queueInfo: { estimatedQueuePosition: queue.position(veleroNs, backup.metadata.name!) },
        veleroBackup: {
          ...base.veleroBackup,
          name: backup.metadata.name!,
          namespace: backup.metadata.namespace!,
          spec: backup.spec as never,
          ...(backup.status ? { status: backup.status as never } : {}),
        },
        conditions: condition(base, {
          type: 'Queued',
          status: 'True',
          reason: 'BackupScheduled',
          message: `Velero Backup ${backup.metadata.name} is ${veleroPhase}`,
        }),
      });
      return undefined;
    });
}

const spec = (nab: NonAdminBackup) => nab.spec ?? { backupSpec: {} };
const tenantSpec = (nab: NonAdminBackup): JsonObject => ({ ...((spec(nab).backupSpec ?? {}) as JsonObject) });

/** spec.deleteBackup: a DeleteBackupRequest removes the data and the Backup, then the NAB goes. */
async function deleteBackup(
  nab: NonAdminBackup,
  backup: VeleroObject | undefined,
  uuid: string | undefined,
  ctx: ReconcileContext,
  writeStatus: (s: Status) => Promise<void>,
  condition: (s: Status, c: Omit<Condition, 'lastTransitionTime'>) => Condition[],
): Promise<undefined> {
  const type = NonAdminBackupCrd.type;
  const base: Status = { ...(nab.status ?? {}) };
  if (!backup || !uuid) {
    // Nothing (left) in Velero: the NAB itself goes.
    await removeFinalizer(ctx.client, type, nab, NabFinalizer);
    await ctx.client.delete(type, nab.metadata.name!, nab.metadata.namespace);
    return undefined;
  }
  const name = backup.metadata.name!;
  try {
    await ctx.client.create(VeleroResources.deleteBackupRequests, {
      metadata: {
        name: uuid,
        namespace: backup.metadata.namespace,
        labels: {
          [Labels.managedBy]: ManagedByValue,
          [Labels.oadp]: 'True',
          [Labels.nabUuid]: uuid,
          [Labels.backupName]: name,
          ...(backup.metadata.uid ? { [Labels.backupUid]: backup.metadata.uid } : {}),
        },
        annotations: {
          [Annotations.nabName]: nab.metadata.name!,
          [Annotations.nabNamespace]: nab.metadata.namespace!,
        },
      },
      spec: { backupName: name },
    } as KubeObject);
    ctx.events.record(
      nab,
      'Normal',
      'DeleteRequested',
      'Delete',
      `asked Velero to delete backup ${name} and its data`,
    );
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  await writeStatus({
    ...base,
    phase: 'Deleting',
    veleroDeleteBackupRequest: { nacuuid: uuid, name: uuid, namespace: backup.metadata.namespace! },
    conditions: condition(base, {
      type: 'Deleting',
      status: 'True',
      reason: 'DeletionPending',
      message: `Velero is deleting backup ${name} and its data`,
    }),
  });
  return undefined;
}
