// An informer keeps a local, indexed copy of one resource type: list once, then watch from the list's
// resourceVersion (with bookmarks, so a reconnect resumes close to now). A 410 Gone means our version is
// too old; we relist and emit the difference, so handlers never miss a change or see a phantom one.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { RetryBackoff } from './backoff.ts';
import {
  isGone,
  type KubeClient,
  metadataListAccept,
  metadataWatchAccept,
  type ObjectList,
  type WatchEvent,
} from './client.ts';
import { metrics } from './metrics.ts';
import { type CacheView, type KubeObject, objectKey, type ResourceType } from './resources.ts';
import { slim } from './slim.ts';

export type IndexFunc<T> = (object: T) => string[];

export interface EventHandlers<T> {
  onAdd?(object: T): void;
  onUpdate?(previous: T, current: T): void;
  onDelete?(object: T): void;
}

export interface InformerOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Cache PartialObjectMetadata: metadata only (see {@link ResourceType.metadataOnly}). */
  metadataOnly?: boolean;
  /** What of each object is cached (see {@link CacheView}). */
  view?: CacheView;
  logger?: Logger;
}

/** Built-in index names. */
export const ByNamespace = 'namespace';
export const ByLabel = 'label';
export const ByOwner = 'owner';

const builtinIndexes: Record<string, IndexFunc<KubeObject>> = {
  [ByNamespace]: (o) => (o.metadata.namespace ? [o.metadata.namespace] : []),
  [ByLabel]: (o) => Object.entries(o.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`),
  [ByOwner]: (o) => (o.metadata.ownerReferences ?? []).map((r) => r.uid),
};

/** One informer's cache, as {@link Informer.describe} tells it. */
export interface InformerCache {
  /** group/version/plural (group empty for the core group). */
  resource: string;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  filtered: boolean;
  synced: boolean;
  resourceVersion: string;
  objects: number;
  digest: string;
}

/** The size and digest of a set of objects: SHA-256 of their sorted `namespace/name@resourceVersion` lines. */
export function cacheDigest(objects: KubeObject[]): { objects: number; digest: string } {
  const lines = objects.map((o) => `${objectKey(o.metadata)}@${o.metadata.resourceVersion ?? ''}`).sort();
  return { objects: lines.length, digest: createHash('sha256').update(lines.join('\n')).digest('hex') };
}

export class Informer<T extends KubeObject> {
  readonly type: ResourceType;
  private readonly client: KubeClient;
  private readonly watchClient: KubeClient;
  private readonly options: InformerOptions;
  private readonly store = new Map<string, T>();
  // Built-in indexes are built on first use: an index nobody reads costs a Set entry per object.
  private readonly indexFuncs = new Map<string, IndexFunc<T>>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  private readonly handlers: EventHandlers<T>[] = [];
  private resourceVersion = '';
  private synced = false;
  private readonly syncWaiters: (() => void)[] = [];
  private started = false;

  constructor(client: KubeClient, type: ResourceType, options: InformerOptions = {}) {
    this.client = options.metadataOnly ? client.withHeaders({ Accept: metadataListAccept }) : client;
    this.watchClient = options.metadataOnly ? client.withHeaders({ Accept: metadataWatchAccept }) : client;
    this.type = type;
    this.options = options;
  }

  /**
   * Adds a custom index. Indexes added after start are built from the current contents. Adding the same
   * function under a name again does nothing; another function under a known name throws (like
   * client-go's AddIndexers): two callers would each read the other's index as their own.
   */
  addIndex(name: string, fn: IndexFunc<T>): void {
    const known = this.indexFuncs.get(name) ?? builtinIndexes[name];
    if (known && known !== fn)
      throw new Error(`informer ${this.type.plural}: index ${name} already exists with another function`);
    if (this.indexFuncs.has(name)) return;
    this.indexFuncs.set(name, fn);
    this.indexes.set(name, new Map());
    for (const [key, object] of this.store) this.indexOne(name, fn, key, object, 'add');
  }

  /** Registers handlers; if the cache is already filled, the current objects are replayed as adds. */
  addHandlers(handlers: EventHandlers<T>): void {
    this.handlers.push(handlers);
    if (this.synced) for (const object of this.store.values()) handlers.onAdd?.(object);
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  /** The resourceVersion the cache is at (of its last list or event); what a list served from it is at. */
  lastResourceVersion(): string {
    return this.resourceVersion;
  }

  list(): T[] {
    return [...this.store.values()];
  }

  /** Objects whose index `name` yields `value`. */
  byIndex(name: string, value: string): T[] {
    const builtin = builtinIndexes[name];
    if (builtin && !this.indexFuncs.has(name)) this.addIndex(name, builtin);
    const keys = this.indexes.get(name)?.get(value);
    if (!keys) return [];
    return [...keys].map((k) => this.store.get(k)!).filter(Boolean);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /**
   * What the cache holds, for comparing with a fresh list: its size and the SHA-256 of its sorted
   * `namespace/name@resourceVersion` lines (see {@link cacheDigest}). `filtered` when a view leaves out
   * some of what a list returns (then only this process knows what the cache should hold).
   */
  describe(): InformerCache {
    const o = this.options;
    return {
      resource: `${this.type.group}/${this.type.version}/${this.type.plural}`,
      ...(o.namespace ? { namespace: o.namespace } : {}),
      ...(o.labelSelector ? { labelSelector: o.labelSelector } : {}),
      ...(o.fieldSelector ? { fieldSelector: o.fieldSelector } : {}),
      filtered: o.view?.keep !== undefined,
      synced: this.synced,
      resourceVersion: this.resourceVersion,
      ...cacheDigest([...this.store.values()]),
    };
  }

  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  /** Runs list+watch until the signal aborts. Transport errors are retried with capped backoff, from the shortest delay again once a list or watch worked. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.started) throw new Error(`informer for ${this.type.plural} already started`);
    this.started = true;
    const backoff = new RetryBackoff({ baseMs: 400, capMs: 30_000 });
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.relist();
          needList = false;
          backoff.reset();
        }
        await this.watchClient.watch<T>(
          this.type,
          {
            namespace: this.options.namespace,
            labelSelector: this.options.labelSelector,
            fieldSelector: this.options.fieldSelector,
            resourceVersion: this.resourceVersion,
            timeoutSeconds: 240 + Math.floor(Math.random() * 120),
            signal,
            onOpen: () => backoff.reset(),
          },
          (event) => this.apply(event),
        );
      } catch (err) {
        if (signal.aborted) break;
        if (isGone(err)) {
          // Our resourceVersion fell out of the server's window: start over from a fresh list.
          metrics.informerRelists.inc({ resource: this.type.plural });
          needList = true;
          continue;
        }
        const delay = backoff.next();
        this.options.logger?.warn(
          { resource: this.type.plural, err: String(err), retryInMs: delay },
          'watch failed',
        );
        await sleep(delay, undefined, { signal }).catch(() => {});
        // A failed list leaves needList set; a failed watch resumes from the last version we saw.
      }
    }
  }

  /**
   * Lists page by page, storing each page's objects as they come: the raw objects of a whole list are
   * never held at once (at 100,000 RoleBindings that would be a few hundred MiB at start-up).
   */
  private async relist(): Promise<void> {
    const options = {
      namespace: this.options.namespace,
      labelSelector: this.options.labelSelector,
      fieldSelector: this.options.fieldSelector,
      limit: 500,
    };
    const seen = new Set<string>();
    let next: string | undefined;
    let list: ObjectList<T>;
    do {
      list = await this.client.list<T>(this.type, { ...options, ...(next ? { continue: next } : {}) });
      // An empty PartialObjectMetadataList has `items: null`.
      for (const object of list.items ?? []) {
        const key = objectKey(object.metadata);
        seen.add(key);
        this.upsert(key, object);
      }
      next = list.metadata.continue;
    } while (next);
    for (const [key, object] of [...this.store]) {
      if (!seen.has(key)) this.remove(key, object);
    }
    this.resourceVersion = list.metadata.resourceVersion ?? '';
    if (!this.synced) {
      this.synced = true;
      for (const resolve of this.syncWaiters.splice(0)) resolve();
    }
  }

  private apply(event: WatchEvent<T>): void {
    const version = event.object.metadata?.resourceVersion;
    if (version) this.resourceVersion = version;
    if (event.type === 'BOOKMARK') return;
    const key = objectKey(event.object.metadata);
    if (event.type === 'DELETED') {
      const previous = this.store.get(key);
      if (previous) this.remove(key, event.object);
      return;
    }
    this.upsert(key, event.object);
  }

  private upsert(key: string, received: T): void {
    const previous = this.store.get(key);
    if (previous?.metadata.resourceVersion === received.metadata.resourceVersion) return;
    const view = this.options.view;
    if (view?.keep && !view.keep(received)) {
      if (previous) this.remove(key, previous);
      return;
    }
    const object = slim(view?.project ? (view.project(received) as T) : received);
    if (previous) this.reindex(key, previous, 'remove');
    this.store.set(key, object);
    if (!previous) this.counted();
    this.reindex(key, object, 'add');
    for (const h of this.handlers) {
      if (previous) h.onUpdate?.(previous, object);
      else h.onAdd?.(object);
    }
  }

  private remove(key: string, object: T): void {
    const previous = this.store.get(key);
    if (previous) this.reindex(key, previous, 'remove');
    this.store.delete(key);
    this.counted();
    for (const h of this.handlers) h.onDelete?.(object);
  }

  private counted(): void {
    const o = this.options;
    const selector = [o.namespace, o.labelSelector, o.fieldSelector, o.view && `view=${o.view.name}`]
      .filter(Boolean)
      .join(' ');
    metrics.informerObjects.set({ resource: this.type.plural, selector }, this.store.size);
  }

  private reindex(key: string, object: T, op: 'add' | 'remove'): void {
    for (const [name, fn] of this.indexFuncs) this.indexOne(name, fn, key, object, op);
  }

  private indexOne(name: string, fn: IndexFunc<T>, key: string, object: T, op: 'add' | 'remove'): void {
    const index = this.indexes.get(name)!;
    for (const value of fn(object)) {
      let keys = index.get(value);
      if (op === 'add') {
        if (!keys) {
          keys = new Set();
          index.set(value, keys);
        }
        keys.add(key);
      } else if (keys) {
        keys.delete(key);
        if (keys.size === 0) index.delete(value);
      }
    }
  }
}
