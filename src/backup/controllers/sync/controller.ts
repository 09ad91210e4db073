// Backup sync (seed 001's Non-Admin Backup Sync controller): every Completed Velero Backup that belongs to
// a tenant namespace (src/backup/velero/ownership.ts) and has no NonAdminBackup there gets one, carrying
// the sync label, which the NAB controller then adopts (adopt.ts). This brings back a NAB that was lost
// (deleted without its finalizer, a namespace re-created) and the Backups Velero's own bucket sync found,
// so the tenant can restore from them. Runs per Backup on its events, for a namespace's Backups when the
// namespace is made, and again every backupSyncPeriod of NonAdminBackupConfig "cluster" (read live; 0 turns
// sync off).
import type { NonAdminBackupConfig } from '../../../crds/backup.ts';
import { VeleroResources } from '../../../crds/velero.ts';
import { generationChanged } from '../../../kube/controller.ts';
import type { Informer } from '../../../kube/informer.ts';
import type { Manager } from '../../../kube/manager.ts';
import { type KubeObject, objectKey, Resources } from '../../../kube/resources.ts';
import { Index, Labels } from '../../model.ts';
import { configType, currentPolicy } from '../../policy/config.ts';
import { ownerships } from '../../velero/ownerships.ts';
import { scheduleCache } from '../caches.ts';
import { ensureSyncedNab } from './adopt.ts';

export function registerSyncController(manager: Manager): void {
  const o = ownerships(manager);
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  const namespaces: Informer<KubeObject> = manager.informer(Resources.namespaces);
  // NonAdminSchedules by their NACUUID: their runs are the schedule controller's to show, not sync's.
  const schedules = scheduleCache(manager);

  manager
    .controller('backupsync')
    .for(VeleroResources.backups)
    // Turning sync on, changing its period or Velero's namespace: every Backup is looked at again.
    .watchesAll(configType, generationChanged)
    // A tenant namespace made (again, after it was deleted): its Backups get their NABs now, not at the
    // next periodic look.
    .watches(
      Resources.namespaces,
      (ns) =>
        o.backups
          .list()
          .filter((b) => o.ownerOf(b).namespace === ns.metadata.name)
          .map((b) => objectKey(b.metadata)),
      { predicate: (previous) => previous === undefined },
    )
    .concurrency(2)
    .complete(async (key, ctx) => {
      const policy = currentPolicy(configs);
      if (!policy.enabled || policy.backupSyncPeriodMs === 0) return undefined;
      const again = { requeueAfterMs: policy.backupSyncPeriodMs };
      const backup = o.backups.get(key);
      if (!backup || backup.metadata.namespace !== policy.veleroNamespace) return undefined;
      // Its completion (an event) brings it back; until then there is nothing to restore from.
      if (backup.metadata.deletionTimestamp || backup.status?.phase !== 'Completed') return undefined;
      const owner = o.ownerOf(backup);
      // Ownership may still change (its storage location appears), hence the periodic look.
      if (!owner.namespace) return again;
      const ns = owner.namespace;
      // A live schedule's runs get their NABs from the schedule controller (owned by the schedule).
      const run = backup.metadata.labels?.[Labels.nasUuid];
      if (run && schedules.byIndex(Index.scheduleByUuid, run).some((s) => s.metadata.namespace === ns))
        return again;
      const namespace = namespaces.get(ns);
      if (!namespace || namespace.metadata.deletionTimestamp) return again;
      const made = await ensureSyncedNab(o, ctx, backup, ns);
      if (made) {
        ctx.logger.info(
          { backup: backup.metadata.name, nab: `${ns}/${made.metadata.name}` },
          'made a NonAdminBackup for an existing Velero Backup',
        );
      }
      return again;
    });
}
