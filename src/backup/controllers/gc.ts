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
// deleted namespace in time keeps its backups. Backups in a tenant's own storage location are never
// touched (the data is in the tenant's bucket, and the location goes with its namespace), nor are Backups
// that belong to no namespace.
//
// Also removed: DeleteBackupRequests that Velero processed more than a day ago (Velero's own limit; the
// NonAdminBackup controller makes a new one if its backup still needs deleting) and DownloadRequests whose
// URL expired. DeleteBackupRequests that Velero has not processed yet are never removed: that would
// cancel a deletion someone asked for.
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter, Gauge } from 'prom-client';
import type { NonAdminBackupConfig } from '../../api/backup.ts';
import { finishedPhases, VeleroResources } from '../../api/velero.ts';
import { isAlreadyExists, isConflict, type KubeClient } from '../../kube/client.ts';
import { type Condition, type ConditionInput, findCondition, setCondition } from '../../kube/conditions.ts';
import type { Informer } from '../../kube/informer.ts';
import type { Logger } from '../../kube/log.ts';
import type { Manager } from '../../kube/manager.ts';
import { registry } from '../../kube/metrics.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { ConfigName, configType, currentPolicy } from '../policy/config.ts';
import { Annotations, Labels, managedLabels, managedSelector } from '../velero/names.ts';
import { backupOwner, defaultLocationOf, type Location, type OwnedBackup } from '../velero/ownership.ts';
import { isManaged } from './caches.ts';
import {
  GcFieldManager,
  GcReasonAnnotation,
  gcCondition,
  identityOf,
  type Obj,
  type OriginKind,
  Origins,
  originNames,
  type PassResult,
  precheck,
  type TargetKind,
  Targets,
  veleroLabelValue,
} from './gc-rules.ts';

const maxTimerMs = 3600_000;

const collected = new Counter({
  name: 'tenantkit_backup_gc_collected_total',
  help: 'Orphaned Velero-side objects removed by backup garbage collection, by kind.',
  labelNames: ['kind'],
  registers: [registry],
});
const dataDeletions = new Counter({
  name: 'tenantkit_backup_gc_backup_data_deletions_total',
  help: 'DeleteBackupRequests made by garbage collection for Backups whose namespace is gone.',
  registers: [registry],
});
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

/** Wakes a sleeping loop when the config changes; a wake during work is kept for the next sleep. */
class Alarm {
  private pending = false;
  private wake?: () => void;

  ring(): void {
    this.pending = true;
    this.wake?.();
  }

  async sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return;
    }
    const stop = new AbortController();
    const abort = () => stop.abort();
    signal.addEventListener('abort', abort, { once: true });
    this.wake = abort;
    await sleep(Math.min(ms, maxTimerMs), undefined, { signal: stop.signal }).catch(() => {});
    this.wake = undefined;
    signal.removeEventListener('abort', abort);
    this.pending = false;
  }
}

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
    record: (regarding, reason, note) => manager.events.record(regarding, 'Normal', reason, 'Delete', note),
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

/** What a pass reads from caches: an informer, or a stand-in in unit tests. */
export type Cache = Pick<Informer<KubeObject>, 'get'>;
/** The API calls a pass makes. */
export type GcApi = Pick<KubeClient, 'listAll' | 'get' | 'delete' | 'create'>;

export interface GcDeps {
  originCache(origin: OriginKind): Cache;
  namespaces: Cache;
  missingSince: Map<string, number>;
  record(regarding: KubeObject, reason: string, note: string): void;
  /** The clock ages are judged by (default Date.now); tests move it to judge a day-old object now. */
  now?: () => number;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class GarbageCollector {
  private readonly client: GcApi;
  private readonly logger: Logger;
  private readonly deps: GcDeps;
  /** Secret copies found on earlier passes and kept: looked at again until they are gone. */
  private secretNames = new Set<string>();

  constructor(client: GcApi, logger: Logger, deps: GcDeps) {
    this.client = client;
    this.logger = logger;
    this.deps = deps;
  }

  /** One pass over every kind; never throws (errors are counted, the objects concerned are kept). */
  async pass(veleroNamespace: string, pass: number, signal: AbortSignal): Promise<PassResult> {
    const result: PassResult = { collected: {}, dataDeletions: 0, errors: [] };
    const seenMissing = new Set<string>();
    let deleteRequests: Obj[] = [];
    /** NACUUIDs of tenant storage locations seen this pass: the names of their Secret copies. */
    const nabslUuids = new Set<string>();
    for (const target of Targets) {
      if (signal.aborted) break;
      let items: Obj[];
      try {
        items =
          target.kind === 'Secret'
            ? await this.secretCandidates(veleroNamespace, nabslUuids, result)
            : (
                await this.client.listAll<Obj>(target.type, {
                  namespace: veleroNamespace,
                  labelSelector: managedSelector,
                })
              ).items;
      } catch (err) {
        result.errors.push(`list ${target.kind}: ${message(err)}`);
        continue;
      }
      if (target.kind === 'DeleteBackupRequest') deleteRequests = items;
      if (target.origin === Origins.nabsl && target.kind !== 'Secret') {
        for (const o of items) {
          const uuid = o.metadata.labels?.[Labels.nabslUuid];
          if (uuid) nabslUuids.add(uuid);
        }
      }
      let locations: Obj[] = [];
      if (target.kind === 'Backup') {
        // Every location, admins' included: a Backup's owner depends on which one it is in.
        try {
          locations = (
            await this.client.listAll<Obj>(VeleroResources.backupStorageLocations, {
              namespace: veleroNamespace,
            })
          ).items;
        } catch (err) {
          result.errors.push(`list BackupStorageLocation: ${message(err)}`);
          continue;
        }
      }
      for (const object of items) {
        if (signal.aborted) break;
        try {
          if (target.kind === 'Backup') {
            await this.backup(
              object,
              veleroNamespace,
              pass,
              { deleteRequests, locations },
              seenMissing,
              result,
            );
          } else {
            await this.other(target, object, veleroNamespace, result);
          }
        } catch (err) {
          result.errors.push(`${target.kind} ${object.metadata.name}: ${message(err)}`);
        }
      }
    }
    // Forget namespaces no Backup is waiting on any more.
    for (const ns of this.deps.missingSince.keys())
      if (!seenMissing.has(ns)) this.deps.missingSince.delete(ns);
    return result;
  }

  /**
   * The credential Secret copies to judge. tenantkit holds no right to list Secrets (that would be every
   * Secret of the cluster): a copy is named by its location's NACUUID, so the candidates are the NACUUIDs
   * of the BackupStorageLocations and requests seen this pass, and the copies kept on earlier passes, each
   * read by name. A copy whose location and request were both gone before any pass saw them is missed.
   */
  private async secretCandidates(veleroNamespace: string, uuids: Set<string>, result: PassResult) {
    const found: Obj[] = [];
    const names = new Set([...uuids, ...this.secretNames]);
    const next = new Set<string>();
    for (const name of names) {
      try {
        const secret = await this.client.get<Obj>(Resources.secrets, name, veleroNamespace);
        if (!secret) continue;
        found.push(secret);
        next.add(name);
      } catch (err) {
        result.errors.push(`Secret ${name}: ${message(err)}`);
        next.add(name);
      }
    }
    this.secretNames = next;
    return found;
  }

  private async other(target: TargetKind, object: Obj, veleroNamespace: string, result: PassResult) {
    const pre = precheck(target, object, veleroNamespace, this.deps.now?.() ?? Date.now());
    if (pre.verdict === 'keep') return;
    if (pre.verdict === 'collect') {
      await this.remove(target, object, pre.reason, result);
      return;
    }
    const id = identityOf(object, target.origin)!;
    const key = `${id.namespace}/${id.name}`;
    const cached = this.deps.originCache(target.origin).get(key);
    if (cached && originNames(cached, target.origin, id.uuid)) return;
    // Confirm: the cache may not have seen the origin's status (written before this object was made).
    const live = await this.client.get<KubeObject>(target.origin.type, id.name, id.namespace);
    if (live && originNames(live, target.origin, id.uuid)) return;
    const reason = live
      ? `${target.origin.kind} ${key} names another ${target.kind}`
      : `${target.origin.kind} ${key} is gone`;
    await this.remove(target, object, reason, result);
  }

  private async backup(
    object: Obj,
    veleroNamespace: string,
    pass: number,
    context: { deleteRequests: Obj[]; locations: Obj[] },
    seenMissing: Set<string>,
    result: PassResult,
  ) {
    if (!isManaged(object) || object.metadata.namespace !== veleroNamespace) return;
    if (object.metadata.deletionTimestamp) return;
    // Whose backup this is, by the rules backup sync uses (velero/ownership.ts). A backup in a tenant's own
    // storage location is never GC's: that location goes with its namespace, and the data is in the
    // tenant's own bucket. Nobody's backups (no single origin namespace, unknown location) are kept.
    const { locations } = context;
    const owner = backupOwner(
      object as OwnedBackup,
      (name) => locations.find((l) => l.metadata.name === name) as Location | undefined,
      () => defaultLocationOf(locations as Location[]),
    );
    if (owner.namespace === undefined || owner.via !== 'tenantkit-records') return;
    const ns = owner.namespace;
    // The namespace exists (or is only terminating): its NonAdminBackup, or backup sync, owns this.
    if (this.deps.namespaces.get(ns)) return;
    if (await this.client.get(Resources.namespaces, ns)) return;
    seenMissing.add(ns);
    const since = this.deps.missingSince.get(ns);
    if (since === undefined) {
      this.deps.missingSince.set(ns, pass);
      this.logger.info(
        { kind: 'Backup', name: object.metadata.name, originNamespace: ns },
        'origin namespace is gone; the backup data is deleted if it is still gone on the next pass',
      );
      return;
    }
    if (since >= pass) return;
    const phase = typeof object.status?.phase === 'string' ? object.status.phase : '';
    if (!(finishedPhases as readonly string[]).includes(phase)) return;
    const name = object.metadata.name!;
    // A request Velero has not processed yet is already doing the job.
    if (context.deleteRequests.some((r) => r.spec?.backupName === name && r.status?.phase !== 'Processed'))
      return;
    // The origin annotations the Backup carries (a NonAdminBackup's, or a NonAdminSchedule's for its runs).
    const originKeys = [
      Annotations.nabName,
      Annotations.nabNamespace,
      Annotations.nasName,
      Annotations.nasNamespace,
    ];
    const origin = Object.fromEntries(
      originKeys.flatMap((k) => {
        const v = object.metadata.annotations?.[k];
        return v ? [[k, v]] : [];
      }),
    );
    const originName = origin[Annotations.nabName] ?? origin[Annotations.nasName] ?? '';
    const reason = `namespace ${ns} of ${originName || 'its origin'} is gone`;
    try {
      await this.client.create(VeleroResources.deleteBackupRequests, {
        metadata: {
          // Named and labelled as the NonAdminBackup controller names its own: by the Backup's NACUUID,
          // which is its name (also for schedule runs, as backup sync treats them).
          name,
          namespace: veleroNamespace,
          labels: {
            ...managedLabels,
            ...(name.length <= 63 ? { [Labels.nabUuid]: name } : {}),
            [Labels.backupName]: veleroLabelValue(name),
            ...(object.metadata.uid ? { [Labels.backupUid]: object.metadata.uid } : {}),
          },
          annotations: { ...origin, [GcReasonAnnotation]: reason },
        },
        spec: { backupName: name },
      } as KubeObject);
    } catch (err) {
      // A request of that name exists (maybe just processed and not yet collected): the next pass decides.
      if (isAlreadyExists(err)) return;
      throw err;
    }
    result.dataDeletions++;
    dataDeletions.inc();
    this.logger.info(
      {
        kind: 'Backup',
        name,
        namespace: veleroNamespace,
        origin: `${ns}/${originName}`,
        reason,
      },
      'garbage collection: asked Velero to delete the backup and its data',
    );
    this.deps.record(
      object,
      'BackupDataDeletionRequested',
      `${reason}: asked Velero to delete backup ${name} and its data (DeleteBackupRequest ${name})`,
    );
  }

  private async remove(target: TargetKind, object: Obj, reason: string, result: PassResult) {
    try {
      const deleted = await this.client.delete(
        target.type,
        object.metadata.name!,
        object.metadata.namespace,
        {
          preconditions: { uid: object.metadata.uid! },
        },
      );
      if (!deleted) return;
    } catch (err) {
      // Replaced by a newer object of the same name since the list: not the one judged.
      if (isConflict(err)) return;
      throw err;
    }
    result.collected[target.kind] = (result.collected[target.kind] ?? 0) + 1;
    collected.inc({ kind: target.kind });
    const id = identityOf(object, target.origin);
    this.logger.info(
      {
        kind: target.kind,
        name: object.metadata.name,
        namespace: object.metadata.namespace,
        ...(id ? { origin: `${id.namespace}/${id.name}`, nacuuid: id.uuid } : {}),
        reason,
      },
      'garbage collected',
    );
  }
}
