// Keeps the index's rows of one resource type equal to the cluster's objects of that type, without
// keeping the objects: a paginated list (every object upserted, then a resync with the uids seen, which
// deletes whatever vanished), then a watch from the list's resourceVersion with bookmarks. A 410 Gone
// (our version fell out of the server's window) and the periodic resync both start over with a list.
// Only the uids of the list in progress are held, never the objects.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { RetryBackoff } from '../../kube/backoff.ts';
import {
  type ApiError,
  isGone,
  isNotFound,
  type KubeClient,
  type ObjectList,
  type WatchEvent,
} from '../../kube/client.ts';
import { type KubeObject, type ResourceType, resourcePath } from '../../kube/resources.ts';
import type { IndexedResource } from '../model.ts';
import type { BatchQueue } from './batch-queue.ts';
import { collectorMetrics } from './metrics.ts';

export type ListReason = 'start' | 'gone' | 'resync';

/** What a watcher needs from its collector. */
export interface WatcherHost {
  readonly cluster: string;
  readonly logger: Logger;
  readonly queue: BatchQueue;
  readonly resyncPeriodMs: number;
  readonly watchTimeoutSeconds: number | undefined;
  /** Objects per list page (default 500). */
  readonly listPageSize?: number | undefined;
  /** The client to list with and the one to watch with (metadata-only for kinds that need no more). */
  clientsFor(type: ResourceType): { list: KubeClient; watch: KubeClient };
  /** The object's index row, or undefined (already logged) when it cannot be indexed. */
  transform(object: KubeObject, type: ResourceType): IndexedResource | undefined;
  /** Holds one of a few list slots, so a hundred types do not all list at once; returns its release. */
  listSlot(): Promise<() => void>;
  /** Told about every change this watcher queued (the collector derives its cluster row from nodes). */
  changed(
    type: ResourceType,
    change: { upserted?: IndexedResource; deleted?: string; listing?: boolean },
  ): void;
  /** Told after each complete list, with the index uids it saw (it may add uids the resync must keep). */
  listed(type: ResourceType, uids: Set<string>, reason: ListReason): void;
  /** The type answered 404: it may be gone; the collector rediscovers. */
  missing(type: ResourceType): void;
  /** A watch paused because the index is behind (it resumes from the same resourceVersion). */
  paused(type: ResourceType): void;
}

/** Thrown from the watch callback to stop the stream while the index catches up (resumes where it left). */
class Paused extends Error {}

const listPageSize = 500;

export class TypeWatcher {
  readonly type: ResourceType;
  private readonly host: WatcherHost;
  private readonly stopping = new AbortController();
  private watchAbort: AbortController | undefined;
  private resourceVersion = '';
  private resyncDue = false;
  private resyncTimer: NodeJS.Timeout | undefined;
  private firstListSettled!: () => void;
  /** Settles after the first list attempt, whether it succeeded or failed (failures are retried). */
  readonly firstList: Promise<void> = new Promise((resolve) => {
    this.firstListSettled = resolve;
  });
  private running: Promise<void> | undefined;

  constructor(host: WatcherHost, type: ResourceType) {
    this.host = host;
    this.type = type;
  }

  start(): void {
    this.running ??= this.run().finally(() => {
      clearTimeout(this.resyncTimer);
      this.firstListSettled();
    });
  }

  /** Stops listing and watching; nothing is queued for this type once this returns. */
  stop(): Promise<void> {
    this.stopping.abort();
    this.watchAbort?.abort();
    return this.running ?? Promise.resolve();
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private get resource(): string {
    return `${this.type.group || 'core'}/${this.type.plural}`;
  }

  private async run(): Promise<void> {
    const { cluster, logger } = this.host;
    let reason: ListReason | undefined = 'start';
    const backoff = new RetryBackoff({ baseMs: 250, capMs: 30_000, jitter: 0.2 });
    while (!this.stopped) {
      if (this.resyncDue && !reason) reason = 'resync';
      const listing = reason !== undefined;
      try {
        if (reason) {
          await this.list(reason);
          backoff.reset();
          reason = undefined;
          this.resyncDue = false;
          this.scheduleResync();
        }
        await this.watch(() => backoff.reset());
      } catch (err) {
        if (this.stopped) break;
        if (err instanceof Paused) {
          this.host.paused(this.type);
          await this.host.queue.room();
          continue;
        }
        if (!listing && this.watchAbort?.signal.aborted) continue; // a resync ended the watch
        if (!listing && isGone(err)) {
          // Our resourceVersion is older than what the server keeps: only a new list is consistent.
          logger.info(
            { cluster, resource: this.resource },
            'watch resourceVersion too old (410 Gone); relisting',
          );
          reason = 'gone';
          continue;
        }
        collectorMetrics.watchErrors.inc({ cluster });
        if (isNotFound(err)) this.host.missing(this.type);
        const delay = backoff.next();
        logger.warn(
          {
            cluster,
            resource: this.resource,
            err: String(err),
            status: (err as Partial<ApiError>).status,
            retryInMs: Math.round(delay),
          },
          listing ? 'list failed' : 'watch failed',
        );
        // A failed first list must not hold up the collector's initial sync; it is retried all the same.
        if (listing) this.firstListSettled();
        // A failed list is retried as a list; a failed watch resumes from the last version seen.
        await sleep(delay, undefined, { signal: this.stopping.signal }).catch(() => {});
      }
    }
  }

  private scheduleResync(): void {
    clearTimeout(this.resyncTimer);
    const period = this.host.resyncPeriodMs;
    if (!(period > 0) || this.stopped) return;
    // Jitter spreads the types' resyncs so they do not all list at the same moment.
    this.resyncTimer = setTimeout(
      () => {
        this.resyncDue = true;
        this.watchAbort?.abort();
      },
      period * (0.9 + Math.random() * 0.2),
    );
    this.resyncTimer.unref();
  }

  private async list(reason: ListReason): Promise<void> {
    const { cluster, logger, queue } = this.host;
    const client = this.host.clientsFor(this.type).list;
    const started = performance.now();
    const release = await this.host.listSlot();
    let uids = new Set<string>();
    let pages = 0;
    let version = '';
    try {
      collectorMetrics.lists.inc({ cluster, reason });
      let next: string | undefined;
      // Not a do-while: a `continue` there tests the condition, so the expired token's `next = undefined`
      // below ended the list after its first pages and the resync deleted every other row of the type.
      for (;;) {
        await queue.room();
        if (this.stopped) return;
        let page: ObjectList<KubeObject>;
        try {
          page = await client.request<ObjectList<KubeObject>>('GET', resourcePath(this.type), {
            query: { limit: this.host.listPageSize ?? listPageSize, continue: next },
            signal: this.stopping.signal,
            timeoutMs: 60_000,
          });
        } catch (err) {
          if (!(next && isGone(err))) throw err;
          // The continue token expired (the list took longer than the server keeps old versions):
          // start over. Rows upserted from the first pages are real objects; the resync fixes the rest.
          collectorMetrics.lists.inc({ cluster, reason: 'expired' });
          uids = new Set();
          next = undefined;
          continue;
        }
        if (this.stopped) return;
        pages++;
        // An empty PartialObjectMetadataList has `items: null`.
        for (const item of page.items ?? []) {
          const row = this.host.transform(item, this.type);
          if (!row) continue;
          uids.add(row.uid);
          queue.upsert(row);
          this.host.changed(this.type, { upserted: row, listing: true });
        }
        next = page.metadata?.continue || undefined;
        version = page.metadata?.resourceVersion ?? version;
        if (!next) break;
      }
    } finally {
      release();
    }
    this.host.listed(this.type, uids, reason);
    queue.resync({ apigroup: this.type.group, kind_plural: this.type.plural, uids: [...uids] });
    this.resourceVersion = version;
    // Periodic resyncs are routine; lists at start and after a 410 are worth a line at info.
    logger[reason === 'resync' ? 'debug' : 'info'](
      {
        cluster,
        resource: this.resource,
        reason,
        objects: uids.size,
        pages,
        ms: Math.round(performance.now() - started),
      },
      'listed',
    );
    this.firstListSettled();
  }

  /** Watches from the last version seen; `opened` once the server accepted the watch. */
  private async watch(opened: () => void): Promise<void> {
    const abort = new AbortController();
    this.watchAbort = abort;
    if (this.stopped || this.resyncDue) return;
    const client = this.host.clientsFor(this.type).watch;
    const timeoutSeconds = this.host.watchTimeoutSeconds ?? 240 + Math.floor(Math.random() * 120);
    await client.watch<KubeObject>(
      this.type,
      { resourceVersion: this.resourceVersion, timeoutSeconds, signal: abort.signal, onOpen: opened },
      (event) => this.apply(event),
    );
  }

  private apply(event: WatchEvent<KubeObject>): void {
    if (this.stopped) return;
    const version = event.object?.metadata?.resourceVersion;
    if (event.type === 'DELETED') {
      const uid = event.object.metadata?.uid;
      if (uid) {
        const indexUid = `${this.host.cluster}/${uid}`;
        this.host.queue.delete(indexUid);
        this.host.changed(this.type, { deleted: indexUid });
      }
    } else if (event.type === 'ADDED' || event.type === 'MODIFIED') {
      const row = this.host.transform(event.object, this.type);
      if (row) {
        this.host.queue.upsert(row);
        this.host.changed(this.type, { upserted: row });
      }
    }
    if (version) this.resourceVersion = version;
    if (this.host.queue.full()) throw new Paused('paused while the index catches up');
  }
}
