// A controller in the controller-runtime shape: declare what it is For, what it Owns and what else it
// Watches (with a mapper to keys of the primary resource); write one `reconcile(key)` function.
// Keys are `namespace/name` (or `name`) of the primary object. Reconcile is called with a key, never
// with an event, so it must read the world from the caches and converge: level-triggered.
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { KubeClient } from './client.ts';
import type { EventRecorder } from './events.ts';
import type { Informer } from './informer.ts';
import { metrics } from './metrics.ts';
import { WorkQueue } from './queue.ts';
import { type KubeObject, objectKey, type ResourceType } from './resources.ts';

export interface ReconcileResult {
  /** Reconcile this key again after the delay even if nothing changes (e.g. to poll an external system). */
  requeueAfterMs?: number;
}

export interface ReconcileContext {
  client: KubeClient;
  logger: Logger;
  events: EventRecorder;
  signal: AbortSignal;
  /** The informer of any resource, shared with other controllers of the same manager. */
  informer<T extends KubeObject>(type: ResourceType): Informer<T>;
}

export type Reconciler = (key: string, ctx: ReconcileContext) => Promise<ReconcileResult | undefined>;

/**
 * The shape of a named reconciler (controller-runtime's `reconcile.Reconciler`): what it reads (its caches,
 * wired by its register function) is given once; `reconcile` reads one view of the object from them and
 * calls short, named steps. `complete(reconciler)` runs it.
 */
export abstract class ReconcilerOf<Sources> {
  protected readonly from: Sources;

  constructor(sources: Sources) {
    this.from = sources;
  }

  abstract reconcile(key: string, ctx: ReconcileContext): Promise<ReconcileResult | undefined>;
}

/**
 * A reconciler of one primary object with a finalizer: the opening every such controller shares (get it
 * from its cache, gone means done, read one view, deleting means finalize) is here once, and a subclass
 * writes the steps: `read`, `finalize` and `converge`.
 */
export abstract class ObjectReconciler<Sources, T extends KubeObject, Seen> extends ReconcilerOf<Sources> {
  /** The primary objects' cache (a key not in it is gone: nothing to do). */
  private readonly primary: { get(key: string): T | undefined };

  constructor(sources: Sources, primary: { get(key: string): T | undefined }) {
    super(sources);
    this.primary = primary;
  }

  /** One view of the object and of what it depends on, from the caches. */
  protected abstract read(object: T, ctx: ReconcileContext): Seen;
  /** Deletion was requested: release what the object holds, then its finalizer. */
  protected abstract finalize(seen: Seen): Promise<ReconcileResult | undefined>;
  /** The object is live: converge the world on it. */
  protected abstract converge(seen: Seen): Promise<ReconcileResult | undefined>;

  override async reconcile(key: string, ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const object = this.primary.get(key);
    if (!object) return undefined;
    const seen = this.read(object, ctx);
    return object.metadata.deletionTimestamp ? this.finalize(seen) : this.converge(seen);
  }
}

/** Maps an object of a watched resource to the keys of primary objects to reconcile. */
export type MapFunc = (object: KubeObject) => string[];

export interface Watch {
  type: ResourceType;
  map: MapFunc;
  /** Every object of the primary type is concerned by any change (`map` is not used). */
  all?: boolean;
  /** Ignore updates that change only status and metadata we do not care about (default: any change). */
  predicate?: (previous: KubeObject | undefined, current: KubeObject) => boolean;
  /** Events of this watch reconcile a primary at most once per this many ms (bursts coalesce). */
  atMostEveryMs?: number;
}

export interface WatchOptions {
  predicate?: Watch['predicate'];
  atMostEveryMs?: number;
}

export interface ControllerSpec {
  name: string;
  forType: ResourceType;
  watches: Watch[];
  concurrency: number;
  reconcile: Reconciler;
}

/** Builds a mapper that enqueues the owner (of kind `owner`) named in an object's ownerReferences. */
export function ownerMapper(owner: ResourceType): MapFunc {
  const apiVersion = owner.group ? `${owner.group}/${owner.version}` : owner.version;
  const group = owner.group;
  return (object) =>
    (object.metadata.ownerReferences ?? [])
      .filter(
        (ref) =>
          ref.kind === owner.kind &&
          (ref.apiVersion === apiVersion || ref.apiVersion.split('/')[0] === group),
      )
      .map((ref) => (owner.namespaced ? `${object.metadata.namespace}/${ref.name}` : ref.name));
}

/** A generation-changed predicate: skips status-only updates of objects that have a generation. */
export function generationChanged(previous: KubeObject | undefined, current: KubeObject): boolean {
  if (!previous || current.metadata.generation === undefined) return true;
  return (
    previous.metadata.generation !== current.metadata.generation ||
    previous.metadata.deletionTimestamp !== current.metadata.deletionTimestamp ||
    !isDeepStrictEqual(previous.metadata.labels, current.metadata.labels) ||
    !isDeepStrictEqual(previous.metadata.annotations, current.metadata.annotations)
  );
}

export class ControllerBuilder {
  private forType?: ResourceType;
  private forPredicate?: Watch['predicate'];
  private readonly watchList: Watch[] = [];
  private workers = 1;
  private readonly register: (spec: ControllerSpec) => void;
  readonly name: string;

  constructor(name: string, register: (spec: ControllerSpec) => void) {
    this.name = name;
    this.register = register;
  }

  /** The primary resource; its own changes enqueue its key. */
  for(type: ResourceType, predicate?: Watch['predicate']): this {
    this.forType = type;
    this.forPredicate = predicate;
    return this;
  }

  /** A resource this controller creates; a change to one enqueues its owner of the primary type. */
  owns(type: ResourceType): this {
    if (!this.forType) throw new Error(`${this.name}: call for() before owns()`);
    this.watchList.push({ type, map: ownerMapper(this.forType) });
    return this;
  }

  /**
   * Any other resource, mapped to primary keys by `map`. `atMostEveryMs` coalesces the events that reach
   * one primary (a burst of new namespaces for one organization, say) into one reconcile per interval.
   */
  watches(type: ResourceType, map: MapFunc, { predicate, atMostEveryMs }: WatchOptions = {}): this {
    this.watchList.push({
      type,
      map,
      ...(predicate ? { predicate } : {}),
      ...(atMostEveryMs ? { atMostEveryMs } : {}),
    });
    return this;
  }

  /** A resource whose change concerns every primary object (a policy, say): each is reconciled again. */
  watchesAll(type: ResourceType, predicate?: Watch['predicate']): this {
    this.watchList.push({ type, map: () => [], all: true, ...(predicate ? { predicate } : {}) });
    return this;
  }

  concurrency(n: number): this {
    this.workers = Math.max(1, n);
    return this;
  }

  /** Starts the controller with a reconcile function or a named reconciler. */
  complete(reconciler: Reconciler | ReconcilerOf<unknown>): void {
    if (!this.forType) throw new Error(`${this.name}: a controller needs for()`);
    const reconcile: Reconciler =
      typeof reconciler === 'function' ? reconciler : (key, ctx) => reconciler.reconcile(key, ctx);
    const forType = this.forType;
    const self: Watch = { type: forType, map: (o) => [objectKey(o.metadata)] };
    if (this.forPredicate) self.predicate = this.forPredicate;
    this.register({
      name: this.name,
      forType,
      watches: [self, ...this.watchList],
      concurrency: this.workers,
      reconcile,
    });
  }
}

/** Runs one controller: wires informer events into its queue and drives workers until stopped. */
export class ControllerRunner {
  readonly spec: ControllerSpec;
  readonly queue: WorkQueue;
  private readonly logger: Logger;

  constructor(spec: ControllerSpec, logger: Logger) {
    this.spec = spec;
    this.logger = logger.child({ controller: spec.name });
    this.queue = new WorkQueue({
      onDepthChange: (d) => metrics.queueDepth.set({ controller: spec.name }, d),
    });
  }

  /** Queues every primary object again (a periodic resync catches anything an event could not). */
  resync(primary: Informer<KubeObject>): void {
    for (const object of primary.list()) this.queue.add(objectKey(object.metadata));
  }

  /** Resolves once the queue is empty and no key is being processed (for benchmarks and tests). */
  async idle(pollMs = 20): Promise<void> {
    while (!this.queue.isIdle()) await new Promise((r) => setTimeout(r, pollMs));
  }

  /** Connects watch events to the queue. Call before the informers sync so no event is missed. */
  wire(informer: (type: ResourceType) => Informer<KubeObject>): void {
    for (const watch of this.spec.watches) {
      const primaries = informer(this.spec.forType);
      const keysOf: MapFunc = watch.all
        ? () => primaries.list().map((o) => objectKey(o.metadata))
        : watch.map;
      const every = watch.atMostEveryMs;
      const enqueue = every
        ? (object: KubeObject) => {
            for (const key of keysOf(object)) this.queue.addThrottled(key, every);
          }
        : (object: KubeObject) => {
            for (const key of keysOf(object)) this.queue.add(key);
          };
      informer(watch.type).addHandlers({
        onAdd: enqueue,
        onUpdate: (previous, current) => {
          if (!watch.predicate || watch.predicate(previous, current)) {
            enqueue(current);
            // A changed mapping (e.g. a label moved the object) must also revisit the old primaries.
            enqueue(previous);
          }
        },
        onDelete: enqueue,
      });
    }
  }

  /** Runs workers until the signal aborts; resolves when all in-flight reconciles finished. */
  async run(ctx: Omit<ReconcileContext, 'logger'>): Promise<void> {
    const { signal } = ctx;
    const stop = () => this.queue.shutdown();
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
    const worker = async () => {
      for (;;) {
        const key = await this.queue.get();
        if (key === undefined || signal.aborted) return;
        await this.reconcileOne(key, ctx);
        this.queue.done(key);
      }
    };
    await Promise.all(Array.from({ length: this.spec.concurrency }, worker));
  }

  private async reconcileOne(key: string, ctx: Omit<ReconcileContext, 'logger'>): Promise<void> {
    const name = this.spec.name;
    const logger = this.logger.child({ key });
    const end = metrics.reconcileDuration.startTimer({ controller: name });
    try {
      const result = await this.spec.reconcile(key, { ...ctx, logger });
      this.queue.forget(key);
      if (result?.requeueAfterMs) {
        this.queue.addAfter(key, result.requeueAfterMs);
        metrics.reconcileTotal.inc({ controller: name, result: 'requeue' });
      } else {
        metrics.reconcileTotal.inc({ controller: name, result: 'success' });
      }
    } catch (err) {
      if (ctx.signal.aborted) return;
      const delay = this.queue.addRateLimited(key);
      metrics.reconcileTotal.inc({ controller: name, result: 'error' });
      metrics.queueRetries.inc({ controller: name });
      logger.warn(
        { err: err instanceof Error ? err.message : String(err), retryInMs: delay },
        'reconcile failed',
      );
    } finally {
      end();
    }
  }
}
