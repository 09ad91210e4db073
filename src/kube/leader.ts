// Lease-based leader election (coordination.k8s.io/v1), with client-go's timing semantics:
// - a lease is expired when we have not seen its record change for leaseDuration, measured on our own
//   clock (so clock skew between replicas does not matter);
// - the leader renews every retryPeriod and steps down when it could not renew within renewDeadline,
//   which is shorter than leaseDuration, so it stops before anyone else may start;
// - writes carry the resourceVersion we read, so two candidates can never both win.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { isAlreadyExists, isConflict, type KubeClient } from './client.ts';
import { metrics } from './metrics.ts';
import { type KubeObject, Resources } from './resources.ts';
import { microTime } from './time.ts';

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Give the lease up on a clean stop so a successor need not wait for it to expire. */
  releaseOnStop?: boolean;
  logger: Logger;
}

export class LeaderElector {
  private readonly client: KubeClient;
  private readonly o: Required<Omit<LeaderElectionOptions, 'logger'>> & { logger: Logger };
  private observed?: { record: string; at: number };
  private leading = false;

  constructor(client: KubeClient, options: LeaderElectionOptions) {
    this.client = client;
    this.o = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      releaseOnStop: true,
      ...options,
    };
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until elected, then calls `lead` with a signal that aborts when leadership is lost or
   * `signal` aborts. Resolves after leading ended (or immediately if stopped before winning).
   */
  async run(signal: AbortSignal, lead: (leading: AbortSignal) => Promise<void>): Promise<void> {
    const log = this.o.logger.child({
      lease: `${this.o.namespace}/${this.o.name}`,
      identity: this.o.identity,
    });
    while (!signal.aborted && !(await this.tryAcquireOrRenew().catch(() => false))) {
      await sleep(this.o.retryPeriodMs, undefined, { signal }).catch(() => {});
    }
    if (signal.aborted) return;
    log.info('became leader');
    this.leading = true;
    metrics.leader.set({ lease: this.o.name }, 1);
    const leadership = new AbortController();
    const onStop = () => leadership.abort();
    signal.addEventListener('abort', onStop, { once: true });
    const renewing = this.renewLoop(leadership.signal, log).finally(() => leadership.abort());
    await lead(leadership.signal).finally(() => leadership.abort());
    await renewing;
    signal.removeEventListener('abort', onStop);
    this.leading = false;
    metrics.leader.set({ lease: this.o.name }, 0);
    if (signal.aborted && this.o.releaseOnStop) await this.release().catch(() => {});
    log.info('stopped leading');
  }

  private async renewLoop(leading: AbortSignal, log: Logger): Promise<void> {
    let lastRenew = Date.now();
    while (!leading.aborted) {
      await sleep(this.o.retryPeriodMs, undefined, { signal: leading }).catch(() => {});
      if (leading.aborted) return;
      const ok = await this.tryAcquireOrRenew().catch(() => false);
      if (ok) lastRenew = Date.now();
      else if (Date.now() - lastRenew > this.o.renewDeadlineMs) {
        log.warn('could not renew the lease within the renew deadline; stepping down');
        return;
      }
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.o;
    const now = new Date();
    const durationSeconds = Math.ceil(this.o.leaseDurationMs / 1000);
    const current = await this.client.get<Lease>(Resources.leases, name, namespace);
    if (!current) {
      try {
        await this.client.create<Lease>(Resources.leases, {
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        });
        return true;
      } catch (err) {
        if (isAlreadyExists(err)) return false;
        throw err;
      }
    }
    const spec = current.spec ?? {};
    const record = JSON.stringify(spec);
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
    const holder = spec.holderIdentity ?? '';
    const duration = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder && holder !== identity && this.observed.at + duration > Date.now()) return false;

    const next: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: microTime(now),
      acquireTime: holder === identity ? spec.acquireTime : microTime(now),
      leaseTransitions: (spec.leaseTransitions ?? 0) + (holder === identity ? 0 : 1),
    };
    try {
      const updated = await this.client.replace<Lease>(Resources.leases, { ...current, spec: next });
      this.observed = { record: JSON.stringify(updated.spec ?? {}), at: Date.now() };
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  private async release(): Promise<void> {
    const current = await this.client.get<Lease>(Resources.leases, this.o.name, this.o.namespace);
    if (!current || current.spec?.holderIdentity !== this.o.identity) return;
    await this.client.replace<Lease>(Resources.leases, {
      ...current,
      spec: { ...current.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime() },
    });
  }
}
