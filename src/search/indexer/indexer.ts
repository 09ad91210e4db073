// The indexer applies collectors' batches to PostgreSQL. Batches of one cluster apply one at a time, in
// arrival order (a later batch may update the same object); clusters proceed in parallel. When a
// cluster's queue is full the indexer refuses more (BackPressureError, HTTP 429 for remote collectors)
// instead of buffering without bound. Across replicas, each cluster's fence row (fence.ts) applies a
// collector's batches once each and in the order it sent them.

import type pg from 'pg';
import type { Logger } from 'pino';
import { searchMetrics } from '../metrics.ts';
import { BackPressureError, type IndexBatch, type IndexSink, SupersededBatchError } from '../model.ts';
import { validateBatch } from '../policy/batch.ts';
import { passFence } from './fence.ts';
import { ClusterPartitions, noPartitionCode } from './partitions.ts';
import { deleteResources, pruneType, pruneTypesExcept, upsertResources } from './statements.ts';

export interface IndexerOptions {
  pool: pg.Pool;
  logger: Logger;
  /** The hub's cluster name: only its rows may carry `_hubClusterResource`. */
  hubCluster: string;
  /** Batches waiting per cluster before the indexer pushes back (default 8). */
  maxQueuedBatches?: number;
}

interface ClusterQueue {
  tail: Promise<void>;
  queued: number;
  /** Recent time per batch, for a Retry-After that matches how far behind we are. */
  averageMs: number;
}

export class Indexer implements IndexSink {
  private readonly options: IndexerOptions;
  private readonly queues = new Map<string, ClusterQueue>();
  private readonly partitions: ClusterPartitions;
  /** Clusters whose new partitions this process has had analyzed (see analyzeWhenNew). */
  private readonly analyzed = new Set<string>();

  constructor(options: IndexerOptions) {
    this.options = options;
    this.partitions = new ClusterPartitions(options.pool);
  }

  write(batch: IndexBatch): Promise<void> {
    validateBatch(batch, this.options.hubCluster);
    const queue = this.queueOf(batch.cluster);
    const max = this.options.maxQueuedBatches ?? 8;
    if (queue.queued >= max) {
      searchMetrics.indexerRejected.inc({ cluster: batch.cluster });
      return Promise.reject(new BackPressureError(Math.ceil(queue.averageMs * queue.queued) + 10));
    }
    queue.queued++;
    searchMetrics.indexerQueued.set({ cluster: batch.cluster }, queue.queued);
    const q = queue;
    const run = q.tail.then(() => this.applyInPartition(batch, q));
    q.tail = run.catch(() => {});
    return run.finally(() => {
      q.queued--;
      searchMetrics.indexerQueued.set({ cluster: batch.cluster }, q.queued);
    });
  }

  /**
   * Removes every object of `cluster` from the index (its partitions dropped), after the batches of it
   * this process has accepted. Batches of collector streams started before now are refused from then on.
   * Resolves to the number of objects removed.
   */
  removeCluster(cluster: string): Promise<number> {
    const q = this.queueOf(cluster);
    const run = q.tail.then(() => this.partitions.drop(cluster));
    q.tail = run.then(
      () => {},
      () => {},
    );
    return run.then((n) => {
      this.analyzed.delete(cluster);
      searchMetrics.indexerRows.inc({ cluster, change: 'deleted' }, n);
      this.options.logger.info({ cluster, objects: n }, 'cluster removed from the index');
      return n;
    });
  }

  /** Finishes the removals of clusters that were cut short (by a crash, say); run when an indexer starts. */
  async resumeRemovals(): Promise<void> {
    const finished = await this.partitions.resumeRemovals();
    for (const cluster of finished) {
      this.options.logger.info({ cluster }, 'finished removing a cluster from the index, cut short before');
    }
  }

  private queueOf(cluster: string): ClusterQueue {
    let queue = this.queues.get(cluster);
    if (!queue) {
      queue = { tail: Promise.resolve(), queued: 0, averageMs: 50 };
      this.queues.set(cluster, queue);
    }
    return queue;
  }

  /** Applies the batch into the cluster's partitions, created first when this process has not seen them. */
  private async applyInPartition(batch: IndexBatch, queue: ClusterQueue): Promise<void> {
    await this.partitions.ensure(batch.cluster);
    try {
      await this.apply(batch, queue);
    } catch (err) {
      // Another replica removed the cluster since: its partitions are made again, and the batch retried
      // (the fence then decides whether its stream may still write).
      if ((err as { code?: string }).code !== noPartitionCode) throw err;
      this.partitions.forget(batch.cluster);
      this.analyzed.delete(batch.cluster);
      await this.partitions.ensure(batch.cluster);
      await this.apply(batch, queue);
    }
  }

  private async apply(batch: IndexBatch, queue: ClusterQueue): Promise<void> {
    const started = performance.now();
    const client = await this.options.pool.connect();
    let changed = 0;
    let deleted = 0;
    try {
      await client.query('BEGIN');
      if (batch.sequence && !(await passFence(client, batch.cluster, batch.sequence))) {
        // Applied before (this is a resend whose first answer was lost): acknowledged, nothing redone.
        await client.query('COMMIT');
        searchMetrics.indexerBatches.inc({ cluster: batch.cluster, outcome: 'duplicate' });
        return;
      }
      if (batch.upserts?.length) {
        changed = (await upsertResources(client, batch.cluster, dedupe(batch.upserts))).length;
      }
      if (batch.deletes?.length) deleted += await deleteResources(client, batch.cluster, batch.deletes);
      for (const r of batch.resyncs ?? []) {
        deleted += await pruneType(client, batch.cluster, `${r.apigroup}/${r.kind_plural}`, r.uids);
      }
      for (const t of batch.dropTypes ?? []) {
        deleted += await pruneType(client, batch.cluster, `${t.apigroup}/${t.kind_plural}`, []);
      }
      if (batch.keepTypes) {
        const keep = batch.keepTypes.map((t) => `${t.apigroup}/${t.kind_plural}`);
        deleted += await pruneTypesExcept(client, batch.cluster, keep);
      }
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      if (err instanceof SupersededBatchError) {
        searchMetrics.indexerBatches.inc({ cluster: batch.cluster, outcome: 'superseded' });
        this.options.logger.warn({ cluster: batch.cluster, err: err.message }, 'index batch refused');
        throw err;
      }
      searchMetrics.indexerErrors.inc({ cluster: batch.cluster });
      this.options.logger.error({ cluster: batch.cluster, err: String(err) }, 'index batch failed');
      throw err;
    } finally {
      client.release();
    }
    searchMetrics.indexerBatches.inc({ cluster: batch.cluster, outcome: 'applied' });
    const ms = performance.now() - started;
    queue.averageMs = queue.averageMs * 0.8 + ms * 0.2;
    searchMetrics.indexerBatchSeconds.observe(ms / 1000);
    searchMetrics.indexerRows.inc({ cluster: batch.cluster, change: 'received' }, batch.upserts?.length ?? 0);
    searchMetrics.indexerRows.inc({ cluster: batch.cluster, change: 'changed' }, changed);
    searchMetrics.indexerRows.inc({ cluster: batch.cluster, change: 'deleted' }, deleted);
    if (batch.resyncs?.length) this.analyzeWhenNew(batch.cluster);
  }

  /**
   * Once a collector's list of a type is in (a batch with resyncs), the cluster's partitions that were
   * never analyzed are, beside the cluster's next batches (once per cluster per process; again after
   * its removal). A failure only leaves it to autovacuum.
   */
  private analyzeWhenNew(cluster: string): void {
    if (this.analyzed.has(cluster)) return;
    this.analyzed.add(cluster);
    this.partitions.analyzeNew(cluster).then(
      (parts) => {
        if (parts.length > 0)
          this.options.logger.debug({ cluster, parts }, "analyzed a new cluster's partitions");
      },
      (err) => {
        this.analyzed.delete(cluster);
        this.options.logger.warn(
          { cluster, err: String(err) },
          "could not analyze a new cluster's partitions",
        );
      },
    );
  }

  /** Resolves once every batch accepted so far has been applied (or failed). */
  async drain(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.tail));
  }
}

/** The last version of each object wins: one INSERT ... ON CONFLICT may not touch a row twice. */
function dedupe<T extends { uid: string }>(items: T[]): T[] {
  const byUid = new Map<string, T>();
  for (const item of items) byUid.set(item.uid, item);
  return byUid.size === items.length ? items : [...byUid.values()];
}
