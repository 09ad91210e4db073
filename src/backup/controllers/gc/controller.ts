// Garbage collection of the Velero-side objects tenantkit made for tenants: every
// `garbageCollectionPeriod` of the NonAdminBackupConfig (read live; 0 disables; a change reschedules at
// once) and once at start, the leader lists each kind in Velero's namespace by tenantkit's labels
// (credential Secret copies are read by name instead: see secretCandidates) and removes the orphans. An object is an orphan when the tenant object named by its origin annotations is
// gone, or exists but names another object in its status (`status.<velero ref>.nacuuid` differs from the
// object's NACUUID label).
//
// Fail safe, never sorry: the NACUUID is written to the origin's status before the Velero object is
// created, so an origin that names the object proves it is not an orphan. Origins are read from the
// informer caches, and an object that looks orphaned there is confirmed with a GET of its origin before
// it is deleted (a cache can lag behind a create). The delete carries the listed object's uid, so a newer
// object of the same name is never hit. Anything unexpected (no NACUUID label or origin annotations, an
// API error) keeps the object. Only objects with tenantkit's labels, in Velero's namespace, are looked at:
// tenants cannot write there, so nothing a tenant writes can make tenantkit delete anything.
//
// Backups are special: deleting a Velero Backup object does not delete its data, and Velero's bucket sync
// brings it back. A Backup whose NonAdminBackup is gone but whose namespace exists is backup sync's to
// deal with (it recreates the NonAdminBackup), so it is kept. The namespace a Backup belongs to is decided
// as backup sync decides it (velero/ownership.ts), never from its annotations alone. When that namespace is gone,
// nobody can reach the backup through tenantkit any more (sync recreates NonAdminBackups only in existing
// namespaces), and the data would stay in the admin's bucket until its TTL: GC asks Velero to delete it
// with a DeleteBackupRequest, labelled as the NonAdminBackup controller labels its own. Because that is
// the one irreversible step, it waits until the namespace was missing on two passes in a row (at least one
// period apart, confirmed by a GET each time) and until the Backup finished, so an admin who recreates a
// deleted namespace in time keeps its backups. When Velero refuses the request and the Backup stays, the
// next pass removes the processed request and asks again (each pass, whether the Backup came from a
// NonAdminBackup or a schedule). Backups in a tenant's own storage location are never
// touched (the data is in the tenant's bucket, and the location goes with its namespace), nor are Backups
// that belong to no namespace.
//
// Also removed: DeleteBackupRequests that Velero processed more than a day ago (Velero's own limit; the
// NonAdminBackup controller makes a new one if its backup still needs deleting) and DownloadRequests whose
// URL expired. DeleteBackupRequests that Velero has not processed yet are never removed: that would
// cancel a deletion someone asked for.
import { Counter, Gauge } from 'prom-client';
import type { NonAdminBackupConfig } from '../../../crds/backup.ts';
import { Alarm } from '../../../kube/alarm.ts';
import type { KubeClient } from '../../../kube/client.ts';
import {
  type Condition,
  type ConditionInput,
  findCondition,
  setCondition,
} from '../../../kube/conditions.ts';
import type { Informer } from '../../../kube/informer.ts';
import type { Logger } from '../../../kube/log.ts';
import type { Manager } from '../../../kube/manager.ts';
import { registry } from '../../../kube/metrics.ts';
import { type KubeObject, Resources } from '../../../kube/resources.ts';
import { ConfigName, configType, currentPolicy } from '../../policy/config.ts';
import { GarbageCollector } from './pass.ts';
import { GcFieldManager, gcCondition, type OriginKind, Origins } from './rules.ts';

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

const maxTimerMs = 3600_000;

const passes = new Counter({
  name: 'tenantkit_backup_gc_runs_total',
  help: 'Garbage collection passes, by result (success, error).',
  labelNames: ['result'],
  registers: [registry],
});
const lastSuccess = new Gauge({
  name: 'tenantkit_backup_gc_last_success_timestamp_seconds',
  help: 'When the last garbage collection pass without errors ended (Unix time).',
  registers: [registry],
});

/**
 * The GarbageCollected condition on the NonAdminBackupConfig: written by server-side apply of this one
 * entry (conditions are a map keyed by type), so other writers' conditions are left alone; not written
 * again while the config (or the last write, which the cache may not show yet) already says it.
 */
class ConditionReporter {
  private readonly client: KubeClient;
  private readonly configs: Informer<NonAdminBackupConfig>;
  private readonly logger: Logger;
  private reported: string | undefined;

  constructor(client: KubeClient, configs: Informer<NonAdminBackupConfig>, logger: Logger) {
    this.client = client;
    this.configs = configs;
    this.logger = logger;
  }

  /** The config was deleted: its next incarnation is told again. */
  forget(): void {
    this.reported = undefined;
  }

  async report(condition: ConditionInput): Promise<void> {
    const config = this.configs.get(ConfigName);
    if (!config) return;
    const current = findCondition(config.status?.conditions as Condition[] | undefined, condition.type);
    const same =
      current &&
      current.status === condition.status &&
      current.reason === condition.reason &&
      current.message === condition.message &&
      current.observedGeneration === condition.observedGeneration;
    if (same || this.reported === JSON.stringify(condition)) return;
    const [next] = setCondition(current ? [current] : [], condition);
    try {
      await this.client.apply(
        configType,
        {
          apiVersion: `${configType.group}/${configType.version}`,
          kind: configType.kind,
          metadata: { name: ConfigName },
          status: { conditions: [next] },
        } as KubeObject,
        { fieldManager: GcFieldManager, force: true, subresource: 'status' },
      );
      this.reported = JSON.stringify(condition);
    } catch (err) {
      this.logger.warn({ err: message(err) }, 'could not report garbage collection on the config');
    }
  }
}

export function registerGarbageCollector(manager: Manager): void {
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  const namespaces = manager.informer<KubeObject>(Resources.namespaces);
  const originCaches = new Map<OriginKind, Informer<KubeObject>>(
    Object.values(Origins).map((o) => [o, manager.informer<KubeObject>(o.type)]),
  );
  const logger = manager.logger.child({ controller: 'backup-gc' });
  const alarm = new Alarm();
  const reporter = new ConditionReporter(manager.client, configs, logger);
  const specChanged = (p: KubeObject | undefined, c: KubeObject) =>
    p?.metadata.generation !== c.metadata.generation;
  configs.addHandlers({
    onAdd: () => alarm.ring(),
    onUpdate: (p, c) => {
      if (specChanged(p, c)) alarm.ring();
    },
    onDelete: () => {
      reporter.forget();
      alarm.ring();
    },
  });
  // Namespace → the pass in which it was first found missing (see the Backup rule above).
  const missingSince = new Map<string, number>();
  let passNumber = 0;

  const gc = new GarbageCollector(manager.client, logger, {
    originCache: (o) => originCaches.get(o)!,
    namespaces,
    missingSince,
    record: (regarding, reason, note, type = 'Normal') =>
      manager.events.record(regarding, type, reason, 'Delete', note),
  });

  manager.add({
    name: 'backup-gc',
    leader: true,
    async run(signal) {
      let lastStart: number | undefined;
      const report = (condition: ConditionInput) => reporter.report(condition);
      while (!signal.aborted) {
        const policy = currentPolicy(configs);
        const period = policy.garbageCollectionPeriodMs;
        if (period <= 0) {
          await report(gcCondition('disabled', configs.get(ConfigName)?.metadata.generation));
          await alarm.sleep(maxTimerMs, signal);
          continue;
        }
        const wait = lastStart === undefined ? 0 : lastStart + period - Date.now();
        if (wait > 0) {
          await alarm.sleep(wait, signal);
          continue;
        }
        lastStart = Date.now();
        passNumber++;
        const result = await gc.pass(policy.veleroNamespace, passNumber, signal);
        if (signal.aborted) break;
        passes.inc({ result: result.errors.length ? 'error' : 'success' });
        if (result.errors.length === 0) lastSuccess.set(Date.now() / 1000);
        logger.info(
          {
            pass: passNumber,
            collected: result.collected,
            dataDeletions: result.dataDeletions,
            errors: result.errors.length,
            ms: Date.now() - lastStart,
          },
          'garbage collection pass done',
        );
        await report(gcCondition(result, configs.get(ConfigName)?.metadata.generation));
      }
    },
  });
}
