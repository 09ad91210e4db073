// The manager owns what controllers share: one client, one informer per resource type, an event
// recorder, and leader election. Informers run on every replica (a standby has a warm cache and takes
// over fast); controllers run only on the leader.
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { KubeClient } from './client.ts';
import { ControllerBuilder, ControllerRunner, type ControllerSpec } from './controller.ts';
import { createEventRecorder, type EventRecorder } from './events.ts';
import { Informer, type InformerCache } from './informer.ts';
import { LeaderElector } from './leader.ts';
import type { KubeObject, ResourceType } from './resources.ts';

export interface ManagerOptions {
  client: KubeClient;
  logger: Logger;
  /** Names the reporting controller in Events, e.g. "tenantkit.io/controllers". */
  component: string;
  /** This replica's identity; defaults to hostname + pid. */
  identity?: string;
  /** Lease to campaign for before running controllers; omit to run them unconditionally. */
  leaderElection?: {
    namespace: string;
    name: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
  /** Re-queue every primary object this often (default 10 h, as controller-runtime); 0 disables. */
  resyncPeriodMs?: number;
}

/** Runs while the manager runs; `leader` ones only on the elected replica. */
export interface Runnable {
  name: string;
  leader: boolean;
  run(signal: AbortSignal): Promise<void>;
}

export class LeadershipLostError extends Error {
  constructor() {
    super('leadership lost: stopping so that a fresh process campaigns again');
  }
}

export class Manager {
  readonly client: KubeClient;
  readonly logger: Logger;
  readonly events: EventRecorder;
  readonly identity: string;
  private readonly options: ManagerOptions;
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private readonly informerRuns: Promise<void>[] = [];
  private readonly controllers: ControllerRunner[] = [];
  private readonly runnables: Runnable[] = [];
  private informerSignal?: AbortSignal;
  private elector?: LeaderElector;
  private synced = false;

  constructor(options: ManagerOptions) {
    this.options = options;
    this.client = options.client;
    this.logger = options.logger;
    this.identity = options.identity ?? `${hostname()}_${process.pid}`;
    this.events = createEventRecorder(options.client, options.component, this.identity, options.logger);
  }

  /** The shared informer for a resource type (created on first use; started with the manager). */
  informer<T extends KubeObject>(type: ResourceType): Informer<T> {
    const key = `${type.group}/${type.version}/${type.plural}?${type.labelSelector ?? ''}&${type.fieldSelector ?? ''}@${type.watchNamespace ?? ''}${type.metadataOnly ? '#metadata' : ''}${type.view ? `~${type.view.name}` : ''}`;
    let informer = this.informers.get(key);
    if (!informer) {
      informer = new Informer<KubeObject>(this.client, type, {
        logger: this.logger,
        ...(type.labelSelector ? { labelSelector: type.labelSelector } : {}),
        ...(type.fieldSelector ? { fieldSelector: type.fieldSelector } : {}),
        ...(type.watchNamespace ? { namespace: type.watchNamespace } : {}),
        ...(type.metadataOnly ? { metadataOnly: true } : {}),
        ...(type.view ? { view: type.view } : {}),
      });
      this.informers.set(key, informer);
      if (this.informerSignal) this.informerRuns.push(informer.run(this.informerSignal));
    }
    return informer as unknown as Informer<T>;
  }

  controller(name: string): ControllerBuilder {
    return new ControllerBuilder(name, (spec: ControllerSpec) => {
      const runner = new ControllerRunner(spec, this.logger);
      runner.wire((type) => this.informer(type));
      this.controllers.push(runner);
    });
  }

  add(runnable: Runnable): void {
    this.runnables.push(runnable);
  }

  /** Every informer's cache, described for comparison with fresh lists (`/debug/caches`). */
  caches(): InformerCache[] {
    return [...this.informers.values()].map((i) => i.describe());
  }

  /** True once every informer filled its cache (readiness). */
  hasSynced(): boolean {
    return this.synced;
  }

  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : true;
  }

  /**
   * Runs until `signal` aborts (resolves after in-flight reconciles finished and the lease is released),
   * or until leadership is lost (rejects with {@link LeadershipLostError}).
   */
  async start(signal: AbortSignal): Promise<void> {
    const informerStop = new AbortController();
    this.informerSignal = informerStop.signal;
    for (const informer of this.informers.values()) this.informerRuns.push(informer.run(informerStop.signal));
    const always = this.runnables.filter((r) => !r.leader).map((r) => r.run(signal));
    try {
      await Promise.race([
        Promise.all([...this.informers.values()].map((i) => i.waitForSync())),
        new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true })),
      ]);
      this.synced = !signal.aborted;
      this.logger.info({ informers: this.informers.size }, 'caches synced');
      const le = this.options.leaderElection;
      if (!le) {
        await this.runLeaderWork(signal);
      } else {
        this.elector = new LeaderElector(this.client, {
          ...le,
          identity: this.identity,
          logger: this.logger,
        });
        await this.elector.run(signal, (leading) => this.runLeaderWork(leading));
        if (!signal.aborted) throw new LeadershipLostError();
      }
      await Promise.all(always);
    } finally {
      informerStop.abort();
      await Promise.allSettled(this.informerRuns);
      await this.events.flush();
    }
  }

  /** Re-queues every primary object of every controller now. */
  resync(): void {
    for (const c of this.controllers) c.resync(this.informer(c.spec.forType));
  }

  /** Resolves when every controller's queue is drained (nothing queued, in flight or scheduled). */
  async idle(): Promise<void> {
    for (const c of this.controllers) await c.idle();
  }

  private async runLeaderWork(signal: AbortSignal): Promise<void> {
    const period = this.options.resyncPeriodMs ?? 10 * 60 * 60 * 1000;
    const timer = period > 0 ? setInterval(() => this.resync(), period) : undefined;
    timer?.unref();
    signal.addEventListener('abort', () => clearInterval(timer), { once: true });
    const ctx = {
      client: this.client,
      events: this.events,
      signal,
      informer: <T extends KubeObject>(type: ResourceType) => this.informer<T>(type),
    };
    await Promise.all([
      ...this.controllers.map((c) => c.run(ctx)),
      ...this.runnables.filter((r) => r.leader).map((r) => r.run(signal)),
      // Leading lasts until the signal says otherwise, even with nothing to run.
      new Promise((resolve) =>
        signal.aborted ? resolve(undefined) : signal.addEventListener('abort', resolve, { once: true }),
      ),
    ]);
  }
}
