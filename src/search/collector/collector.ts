// The search collector of one cluster: discovers every type that can be listed and watched, keeps one
// TypeWatcher per type, and writes what they see to an IndexSink (the hub's indexer in-process, or a
// RemoteSink from a managed cluster). Types that come and go (CRDs, aggregated APIs) are picked up
// without a restart: a CRD event triggers rediscovery at once, and discovery also runs every 30 s.
//
//   const collector = new Collector({ client, sink: indexer, cluster: HubCluster, hub: true, logger });
//   void collector.run(signal);
//   await collector.waitForInitialSync();
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Alarm } from '../../kube/alarm.ts';
import { RetryBackoff } from '../../kube/backoff.ts';
import { type KubeClient, metadataListAccept, metadataWatchAccept } from '../../kube/client.ts';
import type { KubeObject, ResourceType } from '../../kube/resources.ts';
import type { IndexedResource, IndexSink } from '../model.ts';
import { validateBatch } from '../policy/batch.ts';
import { BatchQueue } from './batch-queue.ts';
import { ClusterRow, clusterRowGroup, clusterRowPlural, clusterRowUid } from './cluster-row.ts';
import { discover, typeKey } from './discovery.ts';
import { collectorMetrics } from './metrics.ts';
import { parseSensitiveField } from './sensitive.ts';
import { needsFullObject, type TransformContext, toIndexed } from './transform.ts';
import { type ListReason, TypeWatcher, type WatcherHost } from './type-watcher.ts';

export interface CollectorOptions {
  /** Credentials that may list and watch everything (see `collectorRules`). */
  client: KubeClient;
  sink: IndexSink;
  /** The cluster's name in the index (`local-cluster` for the hub, as ACM names it). */
  cluster: string;
  /** This is the hub's own collector: rows carry `_hubClusterResource: true`. */
  hub: boolean;
  logger: Logger;
  /**
   * Full list and resync of every type this often (default 10 h, as controller-runtime's resync; 0
   * turns it off). A safety net only: watches keep the index current, and a 410 Gone relists.
   */
  resyncPeriodMs?: number;
  /**
   * Discovery runs this often besides on CRD and APIService events, which are what changes discovery
   * (default 1 h: a safety net, not polling).
   */
  rediscoveryPeriodMs?: number;
  /** Fields never indexed, in the syntax of `sensitive.ts` (e.g. `apps/Deployment:spec.template.metadata.annotations.foo`). */
  sensitiveFields?: string[];
  /** Objects per batch (default 500, at most 5,000). */
  batchMaxObjects?: number;
  /** A batch is sent at most this long after its first change (default 150 ms). */
  batchMaxDelayMs?: number;
  /** Queued objects at which reading from the API server pauses until the index catches up (default 5,000). */
  maxPendingObjects?: number;
  /** Server-side timeout of each watch (default 240-360 s, random per watch). */
  watchTimeoutSeconds?: number;
  /** Objects per page of a list (default 500). */
  listPageSize?: number;
  /** How long a stopping collector keeps delivering what it queued (default 5 s). */
  closeTimeoutMs?: number;
}

export interface CollectorStats {
  types: number;
  synced: boolean;
  pendingObjects: number;
  /** Complete lists so far, by reason. */
  lists: Record<ListReason, number>;
  /** Watches paused so far until the index caught up (each resumed where it stopped). */
  pauses: number;
  /** The index refusing this collector's batches (they are resent): since when, and its last error. */
  deliveryFailure?: { since: number; error: string };
}

const crdKey = 'apiextensions.k8s.io/customresourcedefinitions';
/** APIServices register aggregated APIs (and every built-in group): their changes change discovery too. */
const apiServiceKey = 'apiregistration.k8s.io/apiservices';
const nodeKey = '/nodes';
const listConcurrency = 4;

export class Collector {
  private readonly options: CollectorOptions;
  private readonly cluster: string;
  private readonly logger: Logger;
  private readonly context: TransformContext;
  private readonly queue: BatchQueue;
  private readonly clusterRow: ClusterRow;
  private readonly metadataClients: { list: KubeClient; watch: KubeClient };
  private readonly watchers = new Map<string, TypeWatcher>();
  private readonly stopped = new Set<Promise<void>>();
  private readonly lists: Record<ListReason, number> = { start: 0, gone: 0, resync: 0 };
  private pauses = 0;
  private readonly host: WatcherHost;
  private started = false;
  private initialSyncRunning = false;
  private closing = false;
  private synced = false;
  private readonly initialSync: Promise<void>;
  private resolveSync!: () => void;
  private rejectSync!: (err: Error) => void;
  /** Rings for a discovery sooner than the period (a CRD or APIService changed). */
  private readonly discoveryAlarm = new Alarm();
  private readonly wakeTimers = new Map<number, NodeJS.Timeout>();
  private freeSlots = listConcurrency;
  private readonly slotWaiters: (() => void)[] = [];

  constructor(options: CollectorOptions) {
    this.options = options;
    this.cluster = options.cluster;
    this.logger = options.logger;
    // Fail at start-up, with the validator's message, on a cluster name the index would refuse.
    validateBatch({ cluster: options.cluster }, options.hub ? options.cluster : '');
    this.context = {
      cluster: options.cluster,
      hub: options.hub,
      sensitiveFields: (options.sensitiveFields ?? []).map(parseSensitiveField),
    };
    const maxObjects = Math.min(Math.max(options.batchMaxObjects ?? 500, 1), 5_000);
    this.queue = new BatchQueue({
      sink: options.sink,
      cluster: options.cluster,
      logger: options.logger,
      maxObjects,
      maxDelayMs: options.batchMaxDelayMs ?? 150,
      maxPendingObjects: Math.max(options.maxPendingObjects ?? 5_000, maxObjects),
    });
    this.clusterRow = new ClusterRow(options.cluster, options.hub);
    this.metadataClients = {
      list: options.client.withHeaders({ Accept: metadataListAccept }),
      watch: options.client.withHeaders({ Accept: metadataWatchAccept }),
    };
    this.initialSync = new Promise((resolve, reject) => {
      this.resolveSync = resolve;
      this.rejectSync = reject;
    });
    // Nobody has to wait for the initial sync: a collector stopped before it must not crash the process.
    this.initialSync.catch(() => {});
    this.host = this.watcherHost();
  }

  /** Resolves once every type discovered at start has been listed once and those rows are committed. */
  waitForInitialSync(): Promise<void> {
    return this.initialSync;
  }

  stats(): CollectorStats {
    const failure = this.queue.deliveryFailure();
    return {
      types: this.watchers.size,
      synced: this.synced,
      pendingObjects: this.queue.pendingObjects(),
      lists: { ...this.lists },
      pauses: this.pauses,
      ...(failure ? { deliveryFailure: failure } : {}),
    };
  }

  /**
   * Why the collector is not ready, or undefined when it is: its first lists are not all in the index
   * yet, or the index has refused its batches for `graceMs` (a database that cannot write, say).
   */
  notReady(graceMs = 10_000): string | undefined {
    if (!this.synced) return 'the first list of every type is not in the index yet';
    const failure = this.queue.deliveryFailure();
    if (failure && Date.now() - failure.since >= graceMs) {
      const seconds = Math.round((Date.now() - failure.since) / 1000);
      return `the index has refused this collector's batches for ${seconds} s (they are kept and resent): ${failure.error}`;
    }
    return undefined;
  }

  /** Collects until `signal` aborts, then delivers what is queued (for a few seconds) and resolves. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.started) throw new Error('a Collector runs once; create a new one to start again');
    this.started = true;
    const { cluster, logger } = this;
    logger.info(
      { cluster, hub: this.options.hub, sensitiveFields: this.context.sensitiveFields.map((f) => f.source) },
      'collector starting',
    );
    try {
      await this.readVersion(signal);
      this.queue.upsert(this.clusterRow.resource());
      const backoff = new RetryBackoff({ baseMs: 500, capMs: 30_000 });
      while (!signal.aborted) {
        try {
          await this.rediscover(signal);
          backoff.reset();
        } catch (err) {
          const delay = backoff.next();
          logger.warn({ cluster, err: String(err), retryInMs: delay }, 'discovery failed');
          await sleep(delay, undefined, { signal }).catch(() => {});
          continue;
        }
        if (!this.synced && this.watchers.size > 0) void this.completeInitialSync();
        await this.discoveryAlarm.sleep(this.options.rediscoveryPeriodMs ?? 60 * 60_000, signal);
      }
    } finally {
      this.closing = true;
      for (const timer of this.wakeTimers.values()) clearTimeout(timer);
      for (const w of this.watchers.values()) this.stopped.add(w.stop());
      this.watchers.clear();
      await this.queue.close(this.options.closeTimeoutMs ?? 5_000);
      await Promise.all(this.stopped);
      collectorMetrics.types.set({ cluster }, 0);
      if (!this.synced) this.rejectSync(new Error('the collector stopped before its initial sync'));
      logger.info({ cluster }, 'collector stopped');
    }
  }

  private async readVersion(signal: AbortSignal): Promise<void> {
    try {
      const version = await this.options.client.request<{ gitVersion?: string }>('GET', '/version', {
        timeoutMs: 10_000,
        signal,
      });
      this.clusterRow.kubernetesVersion = version.gitVersion;
    } catch (err) {
      this.logger.warn({ cluster: this.cluster, err: String(err) }, 'could not read the Kubernetes version');
    }
  }

  private async completeInitialSync(): Promise<void> {
    if (this.initialSyncRunning) return;
    this.initialSyncRunning = true;
    const started = performance.now();
    try {
      await Promise.all([...this.watchers.values()].map((w) => w.firstList));
      await this.queue.barrier();
      // Watchers that were stopped also settle their first list: that is no sync.
      if (this.closing) return;
      this.synced = true;
      this.resolveSync();
      this.logger.info(
        { cluster: this.cluster, types: this.watchers.size, ms: Math.round(performance.now() - started) },
        'initial sync complete',
      );
    } catch {
      // Only a stop gets here; run() rejects the waiters.
    }
  }

  /** Brings the set of watchers in line with what the API server serves now. */
  private async rediscover(signal: AbortSignal): Promise<void> {
    const found = await discover(this.options.client, { signal });
    if (signal.aborted) return;
    const wanted = new Map(found.types.map((t) => [typeKey(t), t]));
    const first = this.watchers.size === 0;
    for (const [key, watcher] of [...this.watchers]) {
      const next = wanted.get(key);
      const same =
        next &&
        next.version === watcher.type.version &&
        next.kind === watcher.type.kind &&
        next.namespaced === watcher.type.namespaced;
      if (same) continue;
      // A group whose discovery failed may still serve the type: keep its rows and its watcher.
      if (!next && found.unavailableGroups.has(watcher.type.group)) continue;
      this.watchers.delete(key);
      this.stopped.add(watcher.stop());
      if (next) {
        this.logger.info(
          { cluster: this.cluster, resource: key, from: watcher.type.version, to: next.version },
          'resource type changed version; relisting',
        );
      } else {
        // Stopped first: nothing of this type is queued after the drop.
        this.queue.dropType({ apigroup: watcher.type.group, kind_plural: watcher.type.plural });
        this.logger.info(
          { cluster: this.cluster, resource: key },
          'resource type gone; its rows are dropped',
        );
      }
    }
    if (first && found.unavailableGroups.size === 0) {
      // Everything served is known: rows of any other type are of types removed while we were down.
      this.queue.keepTypes([
        ...[...wanted.values()].map((t) => ({ apigroup: t.group, kind_plural: t.plural })),
        { apigroup: clusterRowGroup, kind_plural: clusterRowPlural },
      ]);
    }
    for (const [key, type] of wanted) {
      if (this.watchers.has(key)) continue;
      const watcher = new TypeWatcher(this.host, type);
      this.watchers.set(key, watcher);
      watcher.start();
      if (!first)
        this.logger.info(
          { cluster: this.cluster, resource: key, version: type.version },
          'resource type added',
        );
    }
    if (first)
      this.logger.info({ cluster: this.cluster, types: this.watchers.size }, 'discovered resource types');
    collectorMetrics.types.set({ cluster: this.cluster }, this.watchers.size);
  }

  /** Rediscovers soon, and once more a little later: a new CRD shows in discovery shortly after its event. */
  private requestRediscovery(): void {
    for (const delay of [200, 2_000]) {
      if (this.wakeTimers.has(delay)) continue;
      const timer = setTimeout(() => {
        this.wakeTimers.delete(delay);
        this.discoveryAlarm.ring();
      }, delay);
      this.wakeTimers.set(delay, timer);
    }
  }

  private transform(object: KubeObject, type: ResourceType): IndexedResource | undefined {
    const resource = `${type.group || 'core'}/${type.plural}`;
    const row = toIndexed(object, type, this.context);
    try {
      if (!row) throw new Error('the object has no uid or name');
      // The same check the indexer makes, per object: one bad object is left out (and logged) instead
      // of making its whole batch fail over and over.
      validateBatch({ cluster: this.cluster, upserts: [row] }, this.options.hub ? this.cluster : '');
      return row;
    } catch (err) {
      collectorMetrics.skipped.inc({ cluster: this.cluster, resource });
      this.logger.error(
        {
          cluster: this.cluster,
          resource,
          name: object.metadata?.name,
          namespace: object.metadata?.namespace,
          err: String(err),
        },
        'object left out of the index',
      );
      return undefined;
    }
  }

  private updateClusterRow(changed: boolean): void {
    if (changed) this.queue.upsert(this.clusterRow.resource());
  }

  private watcherHost(): WatcherHost {
    return {
      cluster: this.cluster,
      logger: this.logger,
      queue: this.queue,
      resyncPeriodMs: this.options.resyncPeriodMs ?? 10 * 60 * 60_000,
      watchTimeoutSeconds: this.options.watchTimeoutSeconds,
      listPageSize: this.options.listPageSize,
      clientsFor: (type) =>
        needsFullObject(type)
          ? { list: this.options.client, watch: this.options.client }
          : this.metadataClients,
      transform: (object, type) => this.transform(object, type),
      listSlot: async () => {
        while (this.freeSlots === 0) await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
        this.freeSlots--;
        let released = false;
        return () => {
          if (released) return;
          released = true;
          this.freeSlots++;
          this.slotWaiters.shift()?.();
        };
      },
      changed: (type, change) => {
        const key = typeKey(type);
        if ((key === crdKey || key === apiServiceKey) && !change.listing) this.requestRediscovery();
        if (key !== nodeKey) return;
        if (change.upserted)
          this.updateClusterRow(this.clusterRow.setNode(change.upserted.uid, change.upserted.data));
        if (change.deleted) this.updateClusterRow(this.clusterRow.removeNode(change.deleted));
      },
      listed: (type, uids, reason) => {
        this.lists[reason]++;
        const key = typeKey(type);
        if (key === nodeKey) this.updateClusterRow(this.clusterRow.keepNodes(uids));
        // On a hub that serves ManagedClusterInfo, the cluster row shares that type: keep it in the resync.
        if (type.group === clusterRowGroup && type.plural === clusterRowPlural)
          uids.add(clusterRowUid(this.cluster));
      },
      missing: () => this.requestRediscovery(),
      paused: () => {
        this.pauses++;
        collectorMetrics.watchPauses.inc({ cluster: this.cluster });
      },
    };
  }
}
