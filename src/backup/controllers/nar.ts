// NonAdminRestore controller: a tenant's NAR becomes a Velero Restore in Velero's namespace, from the
// Velero backup of one of the tenant's own NonAdminBackups, into the tenant's namespace only, with the
// admin's enforced fields filled in; the Restore's progress is mirrored back.
// Crash safety as for backups: the NACUUID goes into status before any Velero object exists, the Restore
// is named by it and found by its label, so a controller killed at any step neither duplicates nor
// orphans anything. A Restore is never run twice behind the tenant's back: once tenantkit has seen it,
// a Restore that disappears is reported, not made again.
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../../api/backup.ts';
import { finishedPhases, VeleroResources } from '../../api/velero.ts';
import { isAlreadyExists, PatchType } from '../../kube/client.ts';
import { type Condition, findCondition, isTrue, setCondition } from '../../kube/conditions.ts';
import { generationChanged } from '../../kube/controller.ts';
import { ensureFinalizer, hasFinalizer, removeFinalizer } from '../../kube/finalizers.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, objectKey } from '../../kube/resources.ts';
import { RequesterAnnotation, requesterOf, requesterValue } from '../admission/requester.ts';
import { configType, currentPolicy } from '../policy/config.ts';
import { type JsonObject, jsonEqual, withEnforced } from '../policy/enforce.ts';
import { enforceableRestoreSpec, restoreSpecProblems } from '../policy/validate.ts';
import { withForcedRestoreFields } from '../policy/velero-filters.ts';
import { Annotations, isNacObjectName, Labels, ManagedByValue, nacObjectName } from '../velero/names.ts';
import { adoptedBackup, ownerships } from './adopt.ts';
import { Index, isManaged, ManagedTypes, managedCache } from './caches.ts';
import { restoreProgress, withProgress } from './progress.ts';
import { CreatedAtAnnotation, changedFields, QueueTracker, restoreQueuePhases } from './queue.ts';
import { RestoreGuardPresence, readRefusals, refusalSummary } from './restore-guard.ts';

export const NarFinalizer = 'tenantkit.io/nonadminrestore';
/** NARs by the NonAdminBackup they restore from, as `namespace/name`. */
const ByBackupRef = 'backup/nar-backup';
const backupRefOf = (nar: NonAdminRestore): string[] => {
  const name = nar.spec?.restoreSpec?.backupName;
  return name ? [`${nar.metadata.namespace}/${name}`] : [];
};
type Status = NonNullable<NonAdminRestore['status']>;

/** The NAR a Velero Restore was made for, from the annotations tenantkit wrote (tenants cannot write there). */
const originOf = (o: KubeObject): string[] => {
  const ns = o.metadata.annotations?.[Annotations.narNamespace];
  const name = o.metadata.annotations?.[Annotations.narName];
  return ns && name ? [`${ns}/${name}`] : [];
};

const restoreSpecOf = (nar: NonAdminRestore): JsonObject => ({
  ...((nar.spec?.restoreSpec ?? {}) as JsonObject),
});

export function registerNarController(manager: Manager): void {
  // Velero's queue of Restores, anyone's (see the NAB controller): the tracker's handlers run first.
  const queue = new QueueTracker({
    queuePhases: restoreQueuePhases,
    originOf: (o) => (isManaged(o) ? originOf(o)[0] : undefined),
  });
  manager.informer(VeleroResources.restores).addHandlers(queue.handlers());
  const nars = manager.informer<NonAdminRestore>(NonAdminRestoreCrd.type);
  const nabs = manager.informer<NonAdminBackup>(NonAdminBackupCrd.type);
  const restores = managedCache(manager, 'restores');
  const backups = managedCache(manager, 'backups');
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  const adoption = ownerships(manager);
  const progress = restoreProgress(manager);
  const guard = new RestoreGuardPresence();
  nars.addIndex(ByBackupRef, backupRefOf);

  manager
    .controller('nonadminrestore')
    .for(NonAdminRestoreCrd.type)
    .watches(ManagedTypes.restores, originOf)
    .watches(VeleroResources.restores, () => queue.drain())
    // Progress counts: a PodVolumeRestore or DataDownload of a tenant's Restore moved.
    .watches(progress.podVolumes, progress.map)
    .watches(progress.dataMovers, progress.map)
    // A NAR waiting for its backup to complete (or to exist) goes on when it does.
    .watches(NonAdminBackupCrd.type, (nab) =>
      nars.byIndex(ByBackupRef, objectKey(nab.metadata)).map((n) => objectKey(n.metadata)),
    )
    // A policy change applies live: every NAR is checked again.
    .watches(configType, () => nars.list().map((n) => objectKey(n.metadata)), generationChanged)
    .concurrency(4)
    .complete(async (key, ctx) => {
      const nar = nars.get(key);
      if (!nar) return undefined;
      const policy = currentPolicy(configs);
      const ref = nar.status?.veleroRestore;
      const uuid = ref?.nacuuid;
      const type = NonAdminRestoreCrd.type;
      const ns = nar.metadata.namespace!;
      // A NACUUID tenantkit did not write (a status forged through a restore, say) is never acted on.
      const trusted = uuid !== undefined && isNacObjectName(ns, nar.metadata.name!, uuid);
      // Only the Restore named by the NACUUID in Velero's namespace (the config's, never the one status
      // names) and made for this very NAR.
      const ours = (r: KubeObject) =>
        r.metadata.name === uuid &&
        r.metadata.namespace === policy.veleroNamespace &&
        originOf(r)[0] === `${ns}/${nar.metadata.name}`;
      const found = trusted ? restores.byIndex(Index.narUuid, uuid).filter(ours) : [];
      const restore = found[0];
      const generation = nar.metadata.generation;
      const base: Status = { ...(nar.status ?? {}) };

      /** `ifVersion`: fail (409, retried) unless the object is still at that resourceVersion. */
      const writeStatus = async (status: Status, ifVersion?: string) => {
        if (jsonEqual(status as never, (nar.status ?? {}) as never)) return;
        await ctx.client.patch(
          type,
          nar.metadata.name!,
          ns,
          {
            ...(ifVersion ? { metadata: { resourceVersion: ifVersion } } : {}),
            status: changedFields(status as JsonObject, (nar.status ?? {}) as JsonObject),
          },
          PatchType.merge,
          'status',
        );
      };
      const condition = (c: Omit<Condition, 'lastTransitionTime'>): Condition[] =>
        setCondition(base.conditions as Condition[] | undefined, { ...c, observedGeneration: generation });
      const backOff = async (reason: string, message: string) =>
        writeStatus({
          ...base,
          phase: 'BackingOff',
          conditions: condition({ type: 'Accepted', status: 'False', reason, message }),
        });

      // Removed by the tenant: the Velero Restore object goes too (Velero then removes its own finalizer
      // and the restore's logs and results); what was restored stays in the namespace.
      if (nar.metadata.deletionTimestamp) {
        if (!hasFinalizer(nar, NarFinalizer)) return undefined;
        for (const r of found) {
          await ctx.client.delete(VeleroResources.restores, r.metadata.name!, r.metadata.namespace);
        }
        // Also by name: a Restore created just now may not be in the cache yet. Only the NACUUID
        // tenantkit wrote, in Velero's namespace: a forged status must not delete anyone's Restore.
        if (trusted && found.length === 0) {
          await ctx.client.delete(VeleroResources.restores, uuid, policy.veleroNamespace);
        }
        await removeFinalizer(ctx.client, type, nar, NarFinalizer);
        return undefined;
      }

      if (uuid !== undefined && !trusted) {
        await backOff(
          'InvalidStatus',
          `status.veleroRestore.nacuuid ${uuid} was not written by tenantkit for this NonAdminRestore; delete it and create a new one`,
        );
        return undefined;
      }

      if (!policy.enabled) {
        await backOff(
          'NonAdminDisabled',
          'non-admin restores are not enabled: an admin must set spec.nonAdmin.enable: true in NonAdminBackupConfig "cluster"',
        );
        return undefined;
      }

      // Once a Velero Restore exists, the NAR's request is settled: mirror it, whatever the spec says now.
      if (restore) {
        // Until the queue's informer saw the Restore its position is unknown; its event brings this back.
        const veleroNs = restore.metadata.namespace!;
        if (!queue.has(veleroNs, restore.metadata.name!)) return undefined;
        const veleroPhase = (restore.status?.phase as string | undefined) ?? 'New';
        // Accepted may read False from a check made while the Restore was being created (or while the
        // feature was disabled): the Restore exists, so the request was accepted.
        const conditions = isTrue(base.conditions as Condition[] | undefined, 'Accepted')
          ? base.conditions
          : condition({
              type: 'Accepted',
              status: 'True',
              reason: 'RestoreAccepted',
              message: `Velero Restore ${restore.metadata.name} was created for this restore`,
            });
        const mirrored: Status = {
          ...base,
          phase: 'Created',
          queueInfo: { estimatedQueuePosition: queue.position(veleroNs, restore.metadata.name!) },
          veleroRestore: {
            ...base.veleroRestore,
            name: restore.metadata.name!,
            namespace: restore.metadata.namespace!,
            ...(restore.status ? { status: restore.status as never } : {}),
          },
          conditions: setCondition(conditions as Condition[] | undefined, {
            type: 'Queued',
            status: 'True',
            observedGeneration: generation,
            reason: 'RestoreScheduled',
            message: `Velero Restore ${restore.metadata.name} is ${veleroPhase}`,
          }),
        };
        // Once finished: what the restore guard left out, read once (then kept in status).
        const finished = (finishedPhases as readonly string[]).includes(veleroPhase);
        if (finished && base.refusedItems === undefined) {
          const refusals = await readRefusals(ctx.client, restore);
          // Velero counts every item it processed as restored, the ones the guard skipped included.
          const processed =
            (restore.status?.progress as { itemsRestored?: number } | undefined)?.itemsRestored ?? 0;
          const who = (() => {
            const r = requesterOf(nar);
            return typeof r === 'string' ? 'the requester' : r.username;
          })();
          const nothingRestored = refusals.count > 0 && refusals.count >= processed;
          const message =
            refusals.count === 0
              ? `every object of the backup passed the checks as ${who}`
              : refusalSummary(refusals, who, nothingRestored);
          mirrored.refusedItems = { count: refusals.count, items: refusals.items };
          mirrored.conditions = setCondition(mirrored.conditions as Condition[] | undefined, {
            type: 'ItemsRefused',
            status: refusals.count > 0 ? 'True' : 'False',
            observedGeneration: generation,
            reason:
              refusals.count === 0 ? 'NoneRefused' : nothingRestored ? 'AllItemsRefused' : 'SomeItemsRefused',
            message,
          });
          if (refusals.count > 0) {
            ctx.events.record(
              nar,
              'Warning',
              nothingRestored ? 'AllItemsRefused' : 'ItemsRefused',
              'Restore',
              message,
            );
          }
        }
        // Pod volume and data mover counts; written only when they change (see progress.ts).
        await writeStatus(withProgress(mirrored, progress.counts(veleroNs, restore.metadata.name!)));
        return undefined;
      }

      // Seen before (Queued is only set once the Restore was observed) and gone now: deleted outside
      // tenantkit. Making it again would restore a second time, unasked.
      if (uuid && findCondition(base.conditions as Condition[] | undefined, 'Queued')) {
        await writeStatus({
          ...base,
          conditions: condition({
            type: 'Queued',
            status: 'False',
            reason: 'VeleroRestoreDeleted',
            message: `Velero Restore ${ref?.name ?? uuid} no longer exists (it was deleted outside tenantkit); create a new NonAdminRestore to restore again`,
          }),
        });
        return undefined;
      }

      // Checked again before the Restore is made (not only before the NACUUID is): the backup named must
      // still be there and complete when Velero is asked to restore it.
      const tenantSpec = restoreSpecOf(nar);
      const findNab = (name: string) => nabs.get(`${ns}/${name}`);
      const problems = restoreSpecProblems(ns, tenantSpec, policy.enforceRestoreSpec, findNab);
      const nab = problems.length === 0 ? findNab(tenantSpec.backupName as string) : undefined;
      const source = nab?.status?.veleroBackup;
      // The Velero Backup the NAB reports must be one tenantkit made for that very NAB, in Velero's
      // namespace. Or, for a NAB of an existing Backup (schedule run, backup sync), one this namespace owns.
      const made =
        nab && source
          ? (backups
              .byIndex(Index.nabUuid, source.nacuuid ?? '')
              .find(
                (b) =>
                  b.metadata.name === source.name &&
                  b.metadata.namespace === policy.veleroNamespace &&
                  b.metadata.annotations?.[Annotations.nabNamespace] === ns &&
                  b.metadata.annotations?.[Annotations.nabName] === nab.metadata.name,
              ) ??
            (() => {
              const adopted = adoptedBackup(adoption, nab, policy.veleroNamespace);
              return adopted?.metadata.name === source.name ? adopted : undefined;
            })())
          : undefined;
      if (nab && source) {
        if (!made) {
          problems.push(
            `spec.restoreSpec.backupName "${nab.metadata.name}": its Velero Backup ${source.name} no longer exists (expired or deleted); pick another NonAdminBackup`,
          );
        }
      }
      if (problems.length > 0) {
        const message = problems.join('; ');
        ctx.events.record(nar, 'Warning', 'InvalidRestoreSpec', 'Validate', message);
        ctx.logger.info({ nar: key, problems }, 'NonAdminRestore rejected');
        await backOff('InvalidRestoreSpec', message);
        return undefined;
      }
      // Whose rights bound the restore: only as admission recorded it at creation (admission/requester.ts).
      const requester = requesterOf(nar);
      if (typeof requester === 'string') {
        const message = `this NonAdminRestore cannot run: ${requester}`;
        ctx.events.record(nar, 'Warning', 'NoRequester', 'Validate', message);
        await backOff('NoRequester', message);
        return undefined;
      }

      const current = await ensureFinalizer(ctx.client, type, nar, NarFinalizer);
      if (!uuid) {
        // Step 1: the identity, in status, before anything exists in Velero's namespace. Guarded by
        // resourceVersion: a reconcile on a cache that has not seen an earlier step 1 yet would
        // otherwise write a second NACUUID over it, and two Velero Restores could follow.
        const name = nacObjectName(ns, nar.metadata.name!);
        await writeStatus(
          {
            ...base,
            phase: 'New',
            veleroRestore: { nacuuid: name, name, namespace: policy.veleroNamespace },
            conditions: condition({
              type: 'Accepted',
              status: 'True',
              reason: 'RestoreAccepted',
              message: `restore from NonAdminBackup ${nab!.metadata.name} accepted against NonAdminBackupConfig generation ${policy.generation}`,
            }),
          },
          current.metadata.resourceVersion,
        );
        return undefined;
      }

      // Step 2: the Velero Restore, named and labelled by the NACUUID, from the NAB's Velero backup (the
      // tenant's backupName is a NAB name, never passed to Velero), into this namespace only.
      // No cluster-scoped object ever (Velero skips cluster-scoped additional items, a PVC's PV say, only
      // when includeClusterResources is explicitly false), and never the kinds of policy/velero-filters.ts; from
      // a tenant's own storage location (whose contents the tenant writes), not its RBAC either. A
      // location tenantkit cannot identify as an admin's counts as the tenant's.
      const owner = adoption.ownerOf(made!);
      const fromTenantLocation = owner.namespace === undefined || owner.via === 'tenant-location';
      const restoreSpec: JsonObject = withForcedRestoreFields(
        {
          ...withEnforced(tenantSpec, enforceableRestoreSpec(policy.enforceRestoreSpec)),
          backupName: made!.metadata.name!,
          includedNamespaces: [ns],
        },
        fromTenantLocation,
      );
      for (const field of ['scheduleName', 'excludedNamespaces', 'namespaceMapping'] as const) {
        delete restoreSpec[field];
      }
      // Without the guard in Velero, Velero would write every item with its own rights: wait for it.
      const missing = await guard.missing(ctx.client, policy.veleroNamespace);
      if (missing) {
        ctx.logger.info({ nar: key, veleroNamespace: policy.veleroNamespace }, missing);
        await backOff('RestoreGuardMissing', missing);
        return { requeueAfterMs: 30_000 };
      }
      // The NACUUID and the config's namespace: never a name or namespace read back from status.
      const restoreName = uuid;
      try {
        await ctx.client.create(VeleroResources.restores, {
          metadata: {
            name: restoreName,
            namespace: policy.veleroNamespace,
            labels: {
              [Labels.managedBy]: ManagedByValue,
              [Labels.oadp]: 'True',
              [Labels.narUuid]: uuid,
            },
            annotations: {
              [Annotations.narName]: nar.metadata.name!,
              [Annotations.narNamespace]: ns,
              [CreatedAtAnnotation]: new Date().toISOString(),
              // The guard plugin checks every item as this user (admission/requester.ts).
              [RequesterAnnotation]: requesterValue(requester),
            },
          },
          spec: restoreSpec,
        } as KubeObject);
        ctx.events.record(
          nar,
          'Normal',
          'RestoreCreated',
          'Create',
          `created Velero Restore ${restoreName} from Velero Backup ${source!.name} (NonAdminBackup ${nab!.metadata.name})`,
        );
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      return undefined;
    });
}
