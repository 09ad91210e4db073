// Whether Velero's backup queue still moves. Velero runs one backup at a time, so when that one stops
// without finishing, every later backup, anyone's, waits behind it, and no Velero object says why:
// Velero v1.18.3 panics in `collectNamespaces` when its namespace List fails and leaves the Backup
// InProgress until Velero restarts; a node-agent restarted after it accepted a PodVolumeBackup leaves it
// Accepted until its 30-minute prepare timeout; a Velero that does not run starts nothing at all.
//
// No single object tells a stuck backup from a long one, but a queue that does not move at all does:
// per Velero namespace, the time of the queue's last move: a status change of a running Backup (Velero
// writes its item counts as it goes), a Backup that starts, finishes or is removed while running, any
// change of a PodVolumeBackup or DataUpload (the node-agent writes its byte counts as it goes). Backups
// that are added or wait (their queue position rewritten) are not moves: tenants create backups all the
// time, and a busy cluster would otherwise never show a stuck one. A namespace with unfinished Backups
// whose queue has not moved for the admin's `stalledQueueWarningAfter` is stalled: the NonAdminBackups in
// it say so (their Queued condition), and `tenantkit_velero_backup_queue_stalled_seconds` shows the admin
// how long it has been still. Velero's Restores wait for each other the same way (a PodVolumeRestore
// whose node-agent died, say), and their queue is tracked alike for NonAdminRestores
// (`tenantkit_velero_restore_queue_stalled_seconds`). Nothing here acts on Velero: restarting it is the
// admin's call (resume/ ends the one stall tenantkit can tell for sure: an Accepted volume operation).
//
// Velero v1.18 can run several backups at once (`--concurrent-backups`): a stuck one then holds one worker
// while the others go on, and the queue moves. Each running Backup (Restore) therefore has a clock of its
// own too: its status changes and those of its volume operations (Velero labels each with its name). One
// that has not moved for the warning time says so in its tenant object although the queue moves
// (`Velero<Kind>Stuck`), and `tenantkit_velero_<kind>_running_still_seconds` shows the admin the longest
// such time per namespace. A running object this process found already running takes the queue's
// recorded clock as its own (never earlier than its true last move: it is not called stuck too soon).
//
// A controller that restarts did not see the moves before it: the clock of each queue is then taken from
// what Velero's objects record (recordedLastMove), before the first answer about that queue, so a queue
// stalled before the restart stays stalled after it, and one that moved a moment ago is not called
// stalled. What the informers deliver while they first list is not a move: it is what was already there.
import { Gauge } from 'prom-client';
import type { NonAdminBackupConfig } from '../../crds/backup.ts';
import { VeleroResources } from '../../crds/velero.ts';
import type { KubeClient } from '../../kube/client.ts';
import { type Condition, findCondition } from '../../kube/conditions.ts';
import type { ReconcileResult } from '../../kube/controller.ts';
import { ByNamespace, type EventHandlers, type Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { jsonEqual } from '../../kube/merge-patch.ts';
import { registry } from '../../kube/metrics.ts';
import type { KubeObject, ResourceType } from '../../kube/resources.ts';
import type { StatusEvent } from '../../kube/status.ts';
import { configType, currentPolicy } from '../policy/config.ts';
import { formatDuration } from '../policy/cron.ts';
import type { ProgressSource } from './progress.ts';
import { phaseOf, type QueueTracker } from './queue.ts';

type WithStatus = KubeObject & { status?: unknown };

/** What the tracker needs of Velero's queue: how many Backups are unfinished, and whose they are. */
export type QueueView = Pick<QueueTracker, 'length' | 'origins' | 'origin'>;

export interface StallTrackerOptions {
  /** What Velero queues: Backups or Restores (each has a queue of its own). */
  kind: Kind;
  queue: QueueView;
  /** The admin's `stalledQueueWarningAfter` in milliseconds, read when needed (it applies live); 0 is off. */
  warnAfterMs: () => number;
  /**
   * When the queue of a namespace last moved before this process watched it, as Velero's objects tell
   * (ms since the epoch; undefined when they tell nothing). Without it, or when it fails, a queue's
   * clock starts with the process.
   */
  recorded?: (namespace: string) => Promise<number | undefined>;
  /**
   * The kinds of the volume operations in `namespace` that Velero's node-agent took but has not started
   * (phase Accepted), e.g. ['PodVolumeRestore']: a stalled queue with one names the likely cause.
   */
  acceptedOperations?: (namespace: string) => string[];
  /** The name of the Backup (Restore) a volume operation belongs to, if it tells. */
  ownerOf?: (operation: KubeObject) => string | undefined;
  now?: () => number;
}

/** Whether a queue, or one running object in it, is stalled; else when to look again. */
export type StallState = { stalledAfterMs: number; alone?: true } | { checkInMs: number };

export class StallTracker {
  private readonly lastMove = new Map<string, number>();
  private readonly started: number;
  private readonly options: StallTrackerOptions;
  private readonly now: () => number;
  readonly kind: Kind;
  /** Tenant objects of queues that moved again after being stalled: their condition must change back. */
  private changed = new Set<string>();
  /** Namespaces whose clock has taken in (or is taking in) what Velero's objects recorded. */
  private readonly recalled = new Map<string, Promise<void>>();
  /** Namespaces whose queue this process saw move. */
  private readonly movedHere = new Set<string>();
  /**
   * Running objects (`namespace/name`) and when each last moved itself; undefined for one found running
   * before this process watched, until its queue's recorded clock is known.
   */
  private readonly running = new Map<string, number | undefined>();

  constructor(options: StallTrackerOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.kind = options.kind;
    // After a restart nothing is known of the time before: a queue counts as still from the start only.
    this.started = this.now();
    trackers[this.kind].add(this);
  }

  /**
   * Resolves once the clock of the queue of `namespace` has taken in when Velero's objects say it last
   * moved (read once per namespace; again after a failed read). A move this process saw is later than
   * anything recorded before it and is kept.
   */
  recall(namespace: string): Promise<void> {
    let done = this.recalled.get(namespace);
    if (!done) {
      done = this.readRecorded(namespace);
      this.recalled.set(namespace, done);
    }
    return done;
  }

  private async readRecorded(namespace: string): Promise<void> {
    let at: number | undefined;
    try {
      at = await this.options.recorded?.(namespace);
    } catch {
      // The clock stays as it was (from the process's start); the next answer reads again.
      this.recalled.delete(namespace);
      return;
    }
    if (at !== undefined && !this.movedHere.has(namespace))
      this.lastMove.set(namespace, Math.min(at, this.now()));
    // Objects found running: the queue's clock, which is no earlier than any of their own moves.
    const clock = this.lastMove.get(namespace) ?? this.started;
    for (const [key, since] of this.running)
      if (since === undefined && key.startsWith(`${namespace}/`)) this.running.set(key, clock);
  }

  /** Kinds of volume operations of `namespace` taken by the node-agent and not started (see options). */
  acceptedOperations(namespace: string): string[] {
    return this.options.acceptedOperations?.(namespace) ?? [];
  }

  /** How long the queue of `namespace` has held unfinished Backups without moving, in ms; 0 if empty. */
  stillFor(namespace: string): number {
    if (this.options.queue.length(namespace) === 0) return 0;
    return Math.max(0, this.now() - (this.lastMove.get(namespace) ?? this.started));
  }

  /** How long the running object `namespace/name` has gone without moving, in ms; undefined if not running. */
  runningStillFor(namespace: string, name: string): number | undefined {
    const key = `${namespace}/${name}`;
    if (!this.running.has(key)) return undefined;
    const since = this.running.get(key) ?? this.lastMove.get(namespace) ?? this.started;
    return Math.max(0, this.now() - since);
  }

  /**
   * Whether the queue of `namespace` is stalled now, or (given `name`) that running object alone, else in
   * how many ms one would be if nothing moves (undefined when the warning is off or the queue is empty:
   * nothing to wait for).
   */
  state(namespace: string, name?: string): StallState | undefined {
    const warnAfter = this.options.warnAfterMs();
    if (warnAfter <= 0 || this.options.queue.length(namespace) === 0) return undefined;
    const still = this.stillFor(namespace);
    if (still >= warnAfter) return { stalledAfterMs: warnAfter };
    const own = name === undefined ? undefined : this.runningStillFor(namespace, name);
    if (own === undefined) return { checkInMs: warnAfter - still };
    if (own >= warnAfter) return { stalledAfterMs: warnAfter, alone: true };
    return { checkInMs: warnAfter - Math.max(still, own) };
  }

  /** The tenant objects whose stalled queue moved since the last call, once each. */
  drain(): string[] {
    if (this.changed.size === 0) return [];
    const keys = [...this.changed];
    this.changed = new Set();
    return keys;
  }

  /** A Backup entered the queue: if the queue was empty, its clock starts now. */
  private entered(namespace: string): void {
    if (this.options.queue.length(namespace) === 1) this.lastMove.set(namespace, this.now());
  }

  /** The running object `namespace/name` moved (and with it its queue). */
  private movedItself(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    if (!this.running.has(key)) return;
    const warnAfter = this.options.warnAfterMs();
    const own = this.runningStillFor(namespace, name) ?? 0;
    if (warnAfter > 0 && own >= warnAfter) {
      const origin = this.options.queue.origin(namespace, name);
      if (origin) this.changed.add(origin);
    }
    this.running.set(key, this.now());
  }

  /** Something in the queue of `namespace` moved. */
  moved(namespace: string): void {
    const warnAfter = this.options.warnAfterMs();
    if (warnAfter > 0 && this.stillFor(namespace) >= warnAfter) {
      for (const origin of this.options.queue.origins(namespace)) this.changed.add(origin);
    }
    this.lastMove.set(namespace, this.now());
    this.movedHere.add(namespace);
  }

  /**
   * Handlers for Velero's Backups or Restores (every one, not tenantkit's only), registered after the
   * queue's own (its length is current). `phases`: those that hold a place in the queue, and of those
   * the ones Velero is working on. `live`: false while the informer first lists (what it delivers then
   * was there before: see {@link recall}).
   */
  queueHandlers(phases: QueuePhases, live: () => boolean = () => true): EventHandlers<WithStatus> {
    const queued = (o: WithStatus) => phases.queued.includes(phaseOf(o));
    const running = (o: WithStatus) => phases.running.includes(phaseOf(o)) && !o.metadata.deletionTimestamp;
    const key = (o: WithStatus) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    return {
      onAdd: (o) => {
        const isLive = live();
        if (isLive && queued(o)) this.entered(o.metadata.namespace ?? '');
        if (running(o)) this.running.set(key(o), isLive ? this.now() : undefined);
      },
      onUpdate: (p, o) => {
        const ns = o.metadata.namespace ?? '';
        // Started, progressed, or finished (left the queue from any phase but a waiting one's).
        if (running(p) || running(o)) {
          if (!jsonEqual(p.status as never, o.status as never)) {
            this.moved(ns);
            if (running(p) && running(o)) this.movedItself(ns, o.metadata.name ?? '');
          }
        } else if (queued(o) && !queued(p)) this.entered(ns);
        if (!running(o)) this.running.delete(key(o));
        else if (!running(p)) this.running.set(key(o), this.now());
      },
      onDelete: (o) => {
        if (running(o)) this.moved(o.metadata.namespace ?? '');
        this.running.delete(key(o));
      },
    };
  }

  /** Handlers for the volume operations (PodVolumeBackups and DataUploads, or their restore kinds). */
  operationHandlers(live: () => boolean = () => true): EventHandlers<WithStatus> {
    return {
      onAdd: (o) => {
        if (live()) this.operationMoved(o);
      },
      onUpdate: (p, o) => {
        if (!jsonEqual(p.status as never, o.status as never)) this.operationMoved(o);
      },
      onDelete: (o) => this.operationMoved(o),
    };
  }

  /** A volume operation changed: its queue moved, and so did the running object it belongs to. */
  private operationMoved(o: WithStatus): void {
    const ns = o.metadata.namespace ?? '';
    this.moved(ns);
    const owner = this.options.ownerOf?.(o);
    if (owner) this.movedItself(ns, owner);
  }

  /** Every namespace seen, with how long its queue has been still (for the gauge). */
  stillness(): [string, number][] {
    return [...this.lastMove.keys()].map((ns) => [ns, this.stillFor(ns) / 1000]);
  }

  /** Every namespace with running objects, with the longest any of them has gone without moving (s). */
  runningStillness(): [string, number][] {
    const longest = new Map<string, number>();
    for (const key of this.running.keys()) {
      const at = key.indexOf('/');
      const ns = key.slice(0, at);
      const still = this.runningStillFor(ns, key.slice(at + 1)) ?? 0;
      longest.set(ns, Math.max(longest.get(ns) ?? 0, still));
    }
    return [...longest].map(([ns, ms]) => [ns, ms / 1000]);
  }

  close(): void {
    trackers[this.kind].delete(this);
  }
}

type Kind = 'Backup' | 'Restore';

/** Phases that hold a place in Velero's queue, and of those the ones Velero is working on. */
export interface QueuePhases {
  queued: readonly string[];
  running: readonly string[];
}
const trackers: Record<Kind, Set<StallTracker>> = { Backup: new Set(), Restore: new Set() };

for (const kind of ['Backup', 'Restore'] as const) {
  const word = kind.toLowerCase();
  new Gauge({
    name: `tenantkit_velero_${word}_queue_stalled_seconds`,
    help: `How long Velero's ${word} queue in a namespace has held unfinished ${kind}s without any of them, or of their volume operations, changing; 0 when the queue is empty. Velero runs ${word}s one at a time: a value that keeps growing is a stuck Velero.`,
    labelNames: ['namespace'],
    registers: [registry],
    collect() {
      this.reset();
      for (const tracker of trackers[kind])
        for (const [namespace, seconds] of tracker.stillness()) this.set({ namespace }, seconds);
    },
  });
  new Gauge({
    name: `tenantkit_velero_${word}_running_still_seconds`,
    help: `The longest time any running ${kind} in a namespace has gone without its status or its volume operations changing. With Velero's --concurrent-backups above 1 a stuck ${word} holds one worker while the queue still moves: this shows it.`,
    labelNames: ['namespace'],
    registers: [registry],
    collect() {
      this.reset();
      for (const tracker of trackers[kind])
        for (const [namespace, seconds] of tracker.runningStillness()) this.set({ namespace }, seconds);
    },
  });
}

export const StalledReason = 'VeleroQueueStalled';
/** The reason of a running Velero Backup (Restore) that alone does not move while its queue does. */
export const stuckReason = (kind: Kind): string => `Velero${kind}Stuck`;

/** A tenant object's Velero Backup or Restore, as its Queued condition tells it. */
export interface QueuedObject {
  name: string;
  phase: string;
  /** Whether the phase still holds a place in Velero's queue. */
  unfinished: boolean;
  position: number;
  veleroNamespace: string;
  /** The tenant object's conditions as read (an Event only when the stall begins or its diagnosis changes). */
  conditions: Condition[] | undefined;
}

export interface StallOutcome {
  /** The Queued condition's reason and message while the queue is stalled. */
  stalled?: { reason: string; message: string };
  /** A Warning Event, when the object first says its queue is stalled and when the diagnosis changes. */
  event?: StatusEvent;
  /** When to look again: when the queue would be stalled, or while it is. */
  requeue?: ReconcileResult;
}

/** What the tenant object of `o` says about a stalled queue, if anything. */
export async function stallOutcome(stalls: StallTracker, o: QueuedObject): Promise<StallOutcome> {
  if (o.unfinished) await stalls.recall(o.veleroNamespace);
  const state = o.unfinished ? stalls.state(o.veleroNamespace, o.name) : undefined;
  if (state === undefined) return {};
  if ('checkInMs' in state) return { requeue: { requeueAfterMs: state.checkInMs + 100 } };
  const accepted = stalls.acceptedOperations(o.veleroNamespace);
  const message = state.alone
    ? stuckMessage(stalls.kind, o, state.stalledAfterMs, accepted)
    : stalledMessage(stalls.kind, o, state.stalledAfterMs, accepted);
  const reason = state.alone ? stuckReason(stalls.kind) : StalledReason;
  // A Warning Event when the stall begins and each time its diagnosis changes (the queue stalled / this
  // one alone stuck), so that the tenant's Events say what holds now. The change cannot flap: from stuck
  // back to stalled takes the whole queue standing still for the warning time again, so an object gets
  // at most two such Events per warning time.
  const previous = findCondition(o.conditions, 'Queued')?.reason;
  const event =
    previous === reason
      ? undefined
      : ({ type: 'Warning', reason, action: stalls.kind, message } as StatusEvent);
  return {
    stalled: { reason, message },
    ...(event ? { event } : {}),
    requeue: { requeueAfterMs: Math.min(state.stalledAfterMs, 60_000) },
  };
}

/**
 * Where the object stands, that nothing moves, and who can act on it. `accepted`: kinds of volume
 * operations the node-agent took and has not started, in the queue's namespace. They are not named: one
 * may be another tenant's, and its name carries that tenant's namespace.
 */
export function stalledMessage(
  kind: Kind,
  o: QueuedObject,
  afterMs: number,
  accepted: string[] = [],
): string {
  const word = kind.toLowerCase();
  const ns = o.veleroNamespace;
  const where = o.position > 0 ? `, ${o.position} ahead of it in Velero's queue` : '';
  const base = `Velero ${kind} ${o.name} is ${o.phase}${where}, but nothing in Velero's ${word} queue has moved for over ${formatDuration(afterMs)} (no ${word} started, progressed or finished, no volume moved): Velero runs one ${word} at a time, so a stuck one holds every later one. Ask an admin to check Velero (kubectl -n ${ns} logs deploy/velero, and the node-agent's logs); when Velero restarts it fails a ${word} it finds InProgress, and this NonAdmin${kind} then shows Velero's reason`;
  return base + acceptedHint(kind, ns, accepted);
}

/**
 * A running object that has not moved while Velero went on with others (`--concurrent-backups` above
 * 1): it holds one of Velero's workers, not the whole queue.
 */
export function stuckMessage(kind: Kind, o: QueuedObject, afterMs: number, accepted: string[] = []): string {
  const word = kind.toLowerCase();
  const ns = o.veleroNamespace;
  const base = `Velero ${kind} ${o.name} is ${o.phase}, but neither it nor any of its volume operations has changed for over ${formatDuration(afterMs)} while Velero went on with other ${word}s: it is likely stuck, holding one of the ${word}s Velero runs at once. Ask an admin to check Velero (kubectl -n ${ns} logs deploy/velero | grep ${o.name}, and the node-agent's logs); when Velero restarts it fails a ${word} it finds InProgress, and this NonAdmin${kind} then shows Velero's reason`;
  return base + acceptedHint(kind, ns, accepted);
}

/** What an admin does for a volume operation the node-agent took and never started ('' when none). */
function acceptedHint(kind: Kind, ns: string, accepted: string[]): string {
  const word = kind.toLowerCase();
  if (accepted.length === 0) return '';
  // Velero v1.18's node-agent starts an Accepted operation when its data mover Pod (named as the
  // operation) turns Running. A node-agent restarted in between either never sees that change (any later
  // change of the Pod starts it) or never made the Pod; either way the operation waits for the prepare
  // timeout. Both seen in bench:faults.
  const kinds = [...new Set(accepted)].sort();
  const list = kinds.map((k) => `${k.toLowerCase()}s`).join(',');
  return `. A ${kinds.join(' or ')} in ${ns} is Accepted but not started: Velero's node-agent starts one once its data mover Pod (of the same name) runs, and a node-agent restarted in between misses that or never makes the Pod, leaving it until its prepare timeout (--data-mover-prepare-timeout, 30 minutes by default). An admin finds it with kubectl -n ${ns} get ${list} | grep Accepted; if its Pod runs, kubectl -n ${ns} annotate pod <its name> tenantkit.io/resume=1 --overwrite starts it; if there is no such Pod, restarting the Velero server (kubectl -n ${ns} rollout restart deploy/velero) fails the stuck ${word} with Velero's reason`;
}

/** The kinds of the volume operations in `namespace` with phase Accepted, from the informers' caches. */
function acceptedIn(operations: Watched[], namespace: string): string[] {
  const kinds: string[] = [];
  for (const { type, informer } of operations) {
    const accepted = informer
      .byIndex(ByNamespace, namespace)
      .some((o) => (o.status as { phase?: string } | undefined)?.phase === 'Accepted');
    if (accepted) kinds.push(type.kind);
  }
  return kinds;
}

/**
 * A tracker of Velero's queue of `kind` (`queue`, holding the objects in `phases`), fed by every Backup
 * (Restore) and by their volume operations (the informers of `progress`, which hold every one); the
 * warning time is the admin's, read from the NonAdminBackupConfig at each use.
 */
export function trackStalls(
  manager: Manager,
  kind: Kind,
  queue: QueueTracker,
  phases: QueuePhases,
  progress: Pick<ProgressSource, 'podVolumes' | 'dataMovers' | 'ownerName'>,
): StallTracker {
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  const type = kind === 'Backup' ? VeleroResources.backups : VeleroResources.restores;
  const objects = manager.informer<WithStatus>(type);
  const operations = [progress.podVolumes, progress.dataMovers].map((t) => ({
    type: t,
    informer: manager.informer<WithStatus>(t),
  }));
  const tracker = new StallTracker({
    kind,
    queue,
    warnAfterMs: () => currentPolicy(configs).stalledQueueWarningAfterMs,
    recorded: (namespace) =>
      recordedLastMove(manager.client, namespace, { type, informer: objects, phases }, operations),
    acceptedOperations: (namespace) => acceptedIn(operations, namespace),
    ownerOf: progress.ownerName,
  });
  // Objects an informer hands over while it first lists, or when handlers join a synced one, were there
  // before: not moves.
  let joining = true;
  objects.addHandlers(tracker.queueHandlers(phases, () => !joining && objects.hasSynced()));
  for (const { informer } of operations)
    informer.addHandlers(tracker.operationHandlers(() => !joining && informer.hasSynced()));
  joining = false;
  // The gauge reads live trackers only: a stopped manager's is dropped.
  manager.add({
    name: `velero-${kind.toLowerCase()}-queue-stalls`,
    leader: false,
    run: (signal) =>
      new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => resolve(tracker.close()), { once: true }),
      ),
  });
  return tracker;
}

interface Watched {
  type: ResourceType;
  informer: Informer<WithStatus>;
}

/**
 * When Velero's queue in `namespace` last moved, as far as Velero's objects still tell it: the latest of
 * the creation of the oldest unfinished object (the queue has held one since), the finish of each
 * finished one, the last status write of each running one, and the last change of each volume
 * operation. Creation, start and finish times are in the informers' caches; the time of the last write
 * is what the API server keeps in managedFields, which caches drop, so the few running objects and
 * unfinished volume operations are read again (GET). The API server's times are whole seconds: a second
 * is added, so the clock never starts before the move it stands for. A move whose object is gone
 * (deleted since) is not told: the clock can then be earlier than it should, never later.
 */
async function recordedLastMove(
  client: KubeClient,
  namespace: string,
  queue: Watched & { phases: QueuePhases },
  operations: Watched[],
): Promise<number | undefined> {
  const times: number[] = [];
  const written = async (w: Watched, o: WithStatus, statusOnly: boolean) => {
    const fresh = await client.get<KubeObject>(w.type, o.metadata.name!, namespace);
    const meta = fresh?.metadata as { managedFields?: { time?: string; fieldsV1?: object }[] } | undefined;
    for (const entry of meta?.managedFields ?? []) {
      if (statusOnly && !('f:status' in (entry.fieldsV1 ?? {}))) continue;
      times.push(instant(entry.time));
    }
  };
  let oldestUnfinished = Number.POSITIVE_INFINITY;
  for (const o of queue.informer.list()) {
    if (o.metadata.namespace !== namespace || o.metadata.deletionTimestamp) continue;
    const phase = phaseOf(o);
    const status = (o.status ?? {}) as { startTimestamp?: string; completionTimestamp?: string };
    if (queue.phases.queued.includes(phase)) {
      oldestUnfinished = Math.min(oldestUnfinished, instant(o.metadata.creationTimestamp));
      if (queue.phases.running.includes(phase)) {
        times.push(instant(status.startTimestamp));
        await written(queue, o, true);
      }
    } else times.push(instant(status.completionTimestamp));
  }
  if (oldestUnfinished !== Number.POSITIVE_INFINITY) times.push(oldestUnfinished);
  for (const w of operations) {
    for (const o of w.informer.list()) {
      if (o.metadata.namespace !== namespace) continue;
      const status = (o.status ?? {}) as { completionTimestamp?: string };
      times.push(instant(o.metadata.creationTimestamp), instant(status.completionTimestamp));
      if (!status.completionTimestamp) await written(w, o, false);
    }
  }
  const latest = Math.max(...times.filter((t) => !Number.isNaN(t)));
  return Number.isFinite(latest) ? latest + 1_000 : undefined;
}

/** A time the API server wrote (RFC 3339), in ms; NaN when there is none. */
const instant = (time: string | undefined | null): number => (time ? Date.parse(time) : Number.NaN);
