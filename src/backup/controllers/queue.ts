// Velero's queue as tenants see it: `status.queueInfo.estimatedQueuePosition` of a NAB (NAR) is the number
// of Velero Backups (Restores) in Velero's namespace, anyone's, that were created before its own and are
// not finished; 0 once its own runs or has finished. Velero runs them in creation order, one at a time
// by default.
//
// Kept incrementally from informer events on all Backups (Restores): per namespace, an array of the
// unfinished ones sorted by (creationTimestamp, tenantkit's millisecond creation time, name). An object's
// position is its index
// (binary search), and an event that inserts or removes an entry at index i changes exactly the positions
// of the entries from i on: only their tenant objects are reported for a reconcile, never all of them.
// Same-second creations are ordered by the millisecond time tenantkit writes on its own objects, then by
// name: an order that is the same after a restart, so a restart rewrites no position.
import type { EventHandlers } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { mergePatch } from '../../kube/merge-patch.ts';
import type { KubeObject, ResourceType } from '../../kube/resources.ts';
import { CreatedAtAnnotation, isManaged } from '../model.ts';

/**
 * The status patch from `previous` to `next`: a queue move sends `queueInfo` alone, not the whole status
 * with the Velero spec in it, and a field Velero dropped deep inside the mirrored status is removed.
 */
export const changedFields = mergePatch;

/** Phases in which a Velero operation is ahead of later ones: waiting, about to run or running. */
export const backupQueuePhases: readonly string[] = ['', 'New', 'Queued', 'ReadyToStart', 'InProgress'];
/** Restores have no queue of their own in Velero: New ones wait for the one InProgress. */
export const restoreQueuePhases: readonly string[] = ['', 'New', 'InProgress'];
/** A Velero object's phase as Velero wrote it, or '' (its status is not to be trusted blindly). */
export const phaseOf = (o: KubeObject & { status?: unknown }): string => {
  const phase = (o.status as { phase?: unknown } | undefined)?.phase;
  return typeof phase === 'string' ? phase : '';
};

/** Of those, the phases in which Velero works on the object (see stall.ts). */
export const backupRunningPhases: readonly string[] = ['ReadyToStart', 'InProgress'];
export const restoreRunningPhases: readonly string[] = ['InProgress'];
/** Phases in which the object itself still waits (a position above 0 is possible). */
const waitingPhases: readonly string[] = ['', 'New', 'Queued'];

interface Entry {
  key: string;
  created: string;
  /** {@link CreatedAtAnnotation}, or '' for objects created by others. */
  createdAt: string;
  seq: number;
  waiting: boolean;
  /** The tenant object this Velero object was made for (`namespace/name`), if any. */
  origin?: string;
}

type Obj = KubeObject & { status?: { phase?: unknown } };

const compare = (a: Entry, b: Entry) =>
  a.created !== b.created
    ? a.created < b.created
      ? -1
      : 1
    : a.createdAt !== b.createdAt
      ? a.createdAt < b.createdAt
        ? -1
        : 1
      : a.key < b.key
        ? -1
        : a.key > b.key
          ? 1
          : 0;

export interface QueueTrackerOptions {
  /** Phases that keep an object in the queue (ahead of later ones). */
  queuePhases: readonly string[];
  /** The tenant object a Velero object was made for, as a reconcile key. */
  originOf: (object: KubeObject) => string | undefined;
}

export class QueueTracker {
  private readonly queues = new Map<string, Entry[]>();
  /** Every object seen (queued or not), with the sequence number that breaks creation-time ties. */
  private readonly seen = new Map<string, number>();
  private readonly entries = new Map<string, Entry>();
  private nextSeq = 0;
  private readonly options: QueueTrackerOptions;
  /** Tenant object keys whose position may have changed since the last drain. */
  private changed = new Set<string>();

  constructor(options: QueueTrackerOptions) {
    this.options = options;
  }

  /** Informer handlers that keep the tracker current; register them before the controller's own. */
  handlers(): EventHandlers<KubeObject> {
    return {
      onAdd: (o) => this.upsert(o),
      onUpdate: (_p, o) => this.upsert(o),
      onDelete: (o) => this.remove(o),
    };
  }

  /** True once the object was seen by the tracker's informer (its position is known). */
  has(namespace: string, name: string): boolean {
    return this.seen.has(`${namespace}/${name}`);
  }

  /** The object's estimated queue position: unfinished objects created before it, 0 once it runs. */
  position(namespace: string, name: string): number {
    const entry = this.entries.get(`${namespace}/${name}`);
    if (!entry?.waiting) return 0;
    return this.indexOf(this.queues.get(namespace)!, entry);
  }

  /** Number of unfinished objects in a namespace. */
  length(namespace: string): number {
    return this.queues.get(namespace)?.length ?? 0;
  }

  /** The tenant objects of every unfinished object in `namespace` (running or waiting). */
  origins(namespace: string): string[] {
    return (this.queues.get(namespace) ?? []).flatMap((e) => (e.origin ? [e.origin] : []));
  }

  /** The tenant object of the unfinished object `namespace/name`, if it has one. */
  origin(namespace: string, name: string): string | undefined {
    return this.entries.get(`${namespace}/${name}`)?.origin;
  }

  /** The tenant objects whose position may have changed since the last call, once each. */
  drain(): string[] {
    if (this.changed.size === 0) return [];
    const keys = [...this.changed];
    this.changed = new Set();
    return keys;
  }

  upsert(object: Obj): void {
    const ns = object.metadata.namespace ?? '';
    const key = `${ns}/${object.metadata.name}`;
    const phase = phaseOf(object);
    const queued = this.options.queuePhases.includes(phase) && !object.metadata.deletionTimestamp;
    let seq = this.seen.get(key);
    if (seq === undefined) {
      seq = this.nextSeq++;
      this.seen.set(key, seq);
    }
    const origin = this.options.originOf(object);
    if (origin) this.changed.add(origin);
    const existing = this.entries.get(key);
    if (existing) {
      if (queued) {
        existing.waiting = waitingPhases.includes(phase);
        existing.origin = origin;
        return;
      }
      this.removeEntry(ns, existing);
      return;
    }
    if (!queued) return;
    const entry: Entry = {
      key,
      created: object.metadata.creationTimestamp ?? '',
      createdAt: object.metadata.annotations?.[CreatedAtAnnotation] ?? '',
      seq,
      waiting: waitingPhases.includes(phase),
      ...(origin ? { origin } : {}),
    };
    let queue = this.queues.get(ns);
    if (!queue) {
      queue = [];
      this.queues.set(ns, queue);
    }
    const at = this.insertionPoint(queue, entry);
    queue.splice(at, 0, entry);
    this.entries.set(key, entry);
    this.markFrom(queue, at + 1);
  }

  remove(object: Obj): void {
    const ns = object.metadata.namespace ?? '';
    const key = `${ns}/${object.metadata.name}`;
    this.seen.delete(key);
    const origin = this.options.originOf(object);
    if (origin) this.changed.add(origin);
    const existing = this.entries.get(key);
    if (existing) this.removeEntry(ns, existing);
  }

  private removeEntry(ns: string, entry: Entry): void {
    const queue = this.queues.get(ns)!;
    const at = this.indexOf(queue, entry);
    queue.splice(at, 1);
    this.entries.delete(entry.key);
    if (queue.length === 0) this.queues.delete(ns);
    else this.markFrom(queue, at);
  }

  /** Everything from `from` on moved by one: their tenant objects need a new position. */
  private markFrom(queue: Entry[], from: number): void {
    for (let i = from; i < queue.length; i++) {
      const e = queue[i]!;
      if (e.origin && e.waiting) this.changed.add(e.origin);
    }
  }

  private insertionPoint(queue: Entry[], entry: Entry): number {
    let lo = 0;
    let hi = queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(queue[mid]!, entry) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private indexOf(queue: Entry[], entry: Entry): number {
    return this.insertionPoint(queue, entry);
  }
}

/**
 * Velero's queue of `type` (Backups or Restores), anyone's, so read from the unfiltered informer; `origin`
 * names the tenant object of one tenantkit made. Its handlers are registered before the controller's, so
 * a watch that drains it maps each event to the tenant objects whose position changed, and to nothing else.
 */
export function trackQueue(
  manager: Manager,
  type: ResourceType,
  queuePhases: readonly string[],
  origin: (o: KubeObject) => string[],
): QueueTracker {
  const queue = new QueueTracker({ queuePhases, originOf: (o) => (isManaged(o) ? origin(o)[0] : undefined) });
  manager.informer(type).addHandlers(queue.handlers());
  return queue;
}
