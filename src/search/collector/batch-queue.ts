// Turns the collector's stream of changes into index batches and delivers them in order, one at a time.
//
// - A batch closes when it holds `maxObjects` objects or `maxDelayMs` after its first change, and always
//   right after a resync or a dropped type: those apply after the batch's upserts, so a later change of
//   the same type must go into a later batch or the resync would delete it again.
// - Each batch carries this run's stream and its sequence number, so the indexer applies a resent batch
//   once and never after a later one, whichever replica each reached.
// - Delivery never skips a batch: back-pressure (BackPressureError) waits as long as the index asks,
//   any other failure retries with capped exponential backoff, each failure logged. The cap is short
//   (5 s): the index must follow the cluster again within seconds of its database or search being back,
//   and a retry costs one request.
// - Memory stays bounded: once `maxPendingObjects` are queued, `full()` tells watchers to pause and
//   `room()` holds lists until delivery catches up.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { RetryBackoff } from '../../kube/backoff.ts';
import {
  BackPressureError,
  type IndexBatch,
  type IndexedResource,
  type IndexedType,
  type IndexSink,
} from '../model.ts';
import { collectorMetrics } from './metrics.ts';

export interface BatchQueueOptions {
  sink: IndexSink;
  cluster: string;
  logger: Logger;
  maxObjects: number;
  maxDelayMs: number;
  maxPendingObjects: number;
}

interface Sealed {
  batch: IndexBatch;
  seq: number;
  objects: number;
}

/** Between resends of a batch that failed: 200 ms doubling up to 5 s, spread ±20%. */
const resendBackoff = { baseMs: 200, capMs: 5_000, jitter: 0.2 };
const maxBackPressureWaitMs = 60_000;

export class BatchQueue {
  private readonly options: BatchQueueOptions;
  private upserts = new Map<string, IndexedResource>();
  private deletes = new Set<string>();
  private resyncs: (IndexedType & { uids: string[] })[] = [];
  private dropTypes: IndexedType[] = [];
  private keep: IndexedType[] | undefined;
  private openObjects = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly sealed: Sealed[] = [];
  private sealedSeq = 0;
  /** This run's stream: batches carry it and their sequence number (the indexer's fence, indexer/fence.ts). */
  private readonly stream = `${Date.now()}.${randomBytes(8).toString('hex')}`;
  private writtenSeq = 0;
  private pending = 0;
  private pumping = false;
  /** Since when (ms since the epoch) the batch at the head has failed, and why; undefined when it has not. */
  private failing: { since: number; error: string } | undefined;
  private readonly stopping = new AbortController();
  private roomWaiters: (() => void)[] = [];
  private barrierWaiters: { seq: number; resolve: () => void; reject: (err: Error) => void }[] = [];

  constructor(options: BatchQueueOptions) {
    this.options = options;
  }

  upsert(resource: IndexedResource): void {
    if (this.stopping.signal.aborted) return;
    // A uid deleted earlier in this batch cannot come back (uids are never reused); seal anyway so a
    // batch never holds both for one uid, whose order the indexer would not keep.
    if (this.deletes.has(resource.uid)) this.seal();
    if (!this.upserts.has(resource.uid)) this.count(1);
    this.upserts.set(resource.uid, resource);
    collectorMetrics.objects.inc({ cluster: this.options.cluster, operation: 'upsert' });
    this.added();
  }

  delete(uid: string): void {
    if (this.stopping.signal.aborted || this.deletes.has(uid)) return;
    // An upsert and then a delete in the same batch is just a delete.
    if (!this.upserts.delete(uid)) this.count(1);
    this.deletes.add(uid);
    collectorMetrics.objects.inc({ cluster: this.options.cluster, operation: 'delete' });
    this.added();
  }

  /** After a complete list: `uids` are all the objects of the type; the index deletes the others. */
  resync(resync: IndexedType & { uids: string[] }): void {
    if (this.stopping.signal.aborted) return;
    this.resyncs.push(resync);
    this.seal();
  }

  /** The type is no longer served: every row of it goes. */
  dropType(type: IndexedType): void {
    if (this.stopping.signal.aborted) return;
    this.dropTypes.push(type);
    this.seal();
  }

  /** After a complete discovery: rows of any type but these go (types removed while we were down). */
  keepTypes(types: IndexedType[]): void {
    if (this.stopping.signal.aborted) return;
    this.keep = types;
    this.seal();
  }

  /** Whether watchers should pause until {@link room} resolves. */
  full(): boolean {
    return this.pending >= this.options.maxPendingObjects;
  }

  /** Resolves when there is room again (half the limit), at once when there is. */
  room(): Promise<void> {
    if (!this.full() || this.stopping.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  /** Closes the open batch and resolves once it and every batch before it are committed. */
  barrier(): Promise<void> {
    this.seal();
    const seq = this.sealedSeq;
    if (this.writtenSeq >= seq) return Promise.resolve();
    if (this.stopping.signal.aborted) return Promise.reject(new Error('the collector stopped'));
    return new Promise((resolve, reject) => this.barrierWaiters.push({ seq, resolve, reject }));
  }

  /** Objects queued and not yet committed. */
  pendingObjects(): number {
    return this.pending;
  }

  /** The index refusing the batch at the head (not back-pressure): since when, and its last error. */
  deliveryFailure(): { since: number; error: string } | undefined {
    return this.failing && { ...this.failing };
  }

  /**
   * Delivers what is queued for up to `timeoutMs`, then stops. Whatever could not be delivered is
   * reported; the next start's full lists and resyncs bring the index up to date again.
   */
  async close(timeoutMs: number): Promise<void> {
    const drained = this.barrier().then(
      () => true,
      () => false,
    );
    const timer = new Promise<boolean>((resolve) => setTimeout(resolve, timeoutMs, false).unref());
    const done = await Promise.race([drained, timer]);
    this.stopping.abort();
    clearTimeout(this.timer);
    if (!done && this.sealed.length > 0) {
      this.options.logger.warn(
        { cluster: this.options.cluster, batches: this.sealed.length, objects: this.pending },
        'collector stopped with batches the index did not accept; the next start resyncs them',
      );
    }
    for (const w of this.barrierWaiters.splice(0)) w.reject(new Error('the collector stopped'));
    for (const resolve of this.roomWaiters.splice(0)) resolve();
  }

  private count(n: number): void {
    this.openObjects += n;
    this.pending += n;
    collectorMetrics.pending.set({ cluster: this.options.cluster }, this.pending);
  }

  private added(): void {
    if (this.openObjects >= this.options.maxObjects) this.seal();
    else this.timer ??= setTimeout(() => this.seal(), this.options.maxDelayMs);
  }

  private seal(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch: IndexBatch = { cluster: this.options.cluster };
    if (this.upserts.size > 0) batch.upserts = [...this.upserts.values()];
    if (this.deletes.size > 0) batch.deletes = [...this.deletes];
    if (this.resyncs.length > 0) batch.resyncs = this.resyncs;
    if (this.dropTypes.length > 0) batch.dropTypes = this.dropTypes;
    if (this.keep) batch.keepTypes = this.keep;
    if (!batch.upserts && !batch.deletes && !batch.resyncs && !batch.dropTypes && !batch.keepTypes) return;
    const seq = ++this.sealedSeq;
    batch.sequence = { stream: this.stream, seq };
    this.sealed.push({ batch, seq, objects: this.openObjects });
    this.upserts = new Map();
    this.deletes = new Set();
    this.resyncs = [];
    this.dropTypes = [];
    this.keep = undefined;
    this.openObjects = 0;
    void this.pump();
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.sealed.length > 0 && !this.stopping.signal.aborted) {
        const head = this.sealed[0]!;
        if (!(await this.deliver(head.batch))) return;
        this.sealed.shift();
        this.writtenSeq = head.seq;
        this.pending -= head.objects;
        collectorMetrics.pending.set({ cluster: this.options.cluster }, this.pending);
        this.barrierWaiters = this.barrierWaiters.filter((w) => {
          if (w.seq > this.writtenSeq) return true;
          w.resolve();
          return false;
        });
        if (this.pending <= this.options.maxPendingObjects / 2) {
          for (const resolve of this.roomWaiters.splice(0)) resolve();
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Writes one batch until the index commits it; false only when the queue stopped first. */
  private async deliver(batch: IndexBatch): Promise<boolean> {
    const { cluster, logger, sink } = this.options;
    const started = performance.now();
    const backoff = new RetryBackoff(resendBackoff);
    let failures = 0;
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      try {
        await sink.write(batch);
        this.failing = undefined;
        collectorMetrics.batches.inc({ cluster });
        collectorMetrics.batchSeconds.observe((performance.now() - started) / 1000);
        return true;
      } catch (err) {
        if (err instanceof BackPressureError) {
          collectorMetrics.backPressure.inc({ cluster });
          const wait = Math.min(Math.max(err.retryAfterMs, 10), maxBackPressureWaitMs);
          logger.debug({ cluster, retryInMs: wait }, 'index is behind; waiting to resend the batch');
          await sleep(wait, undefined, { signal }).catch(() => {});
          continue;
        }
        failures++;
        this.failing = { since: this.failing?.since ?? Date.now(), error: String(err) };
        collectorMetrics.sinkErrors.inc({ cluster });
        const delay = backoff.next();
        logger.warn(
          {
            cluster,
            err: String(err),
            failures,
            retryInMs: Math.round(delay),
            upserts: batch.upserts?.length ?? 0,
          },
          'index batch failed; resending',
        );
        await sleep(delay, undefined, { signal }).catch(() => {});
      }
    }
    return false;
  }
}
