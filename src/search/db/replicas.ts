// Reads from read replicas (PostgreSQL streaming replication), writes to the primary. Every `pollMs` the
// router reads the primary's WAL position, then each replica's replayed position: a replica that has
// replayed what the primary had written at time t holds everything committed by t. Its staleness at any
// later moment is at most (now - t), and a read goes to a replica only while that bound is within
// `maxLagMs`; otherwise to another fresh replica, or to the primary. A replica that cannot be reached is
// left out until a poll reaches it again.
import type pg from 'pg';
import type { Logger } from 'pino';
import { searchMetrics } from '../metrics.ts';

export interface Replica {
  /** Names it in metrics and logs (e.g. its host). */
  name: string;
  pool: pg.Pool;
}

export interface ReadRouterOptions {
  primary: pg.Pool;
  replicas: Replica[];
  /** The most staleness a read may see (default 1 s). */
  maxLagMs?: number;
  /** How often positions are read (default 100 ms). */
  pollMs?: number;
  logger: Logger;
}

interface ReplicaState extends Replica {
  /** The primary's time whose writes the replica holds, as of the last poll (undefined: unreachable). */
  freshAsOf: number | undefined;
  /** The lag the last poll found, in ms (Infinity while unreachable). */
  lagMs: number;
}

const lsnQuery = (fn: string) => `SELECT pg_wal_lsn_diff(${fn}, '0/0')::text AS lsn`;

export class ReadRouter {
  private readonly options: ReadRouterOptions;
  private readonly replicas: ReplicaState[];
  /** Recent positions of the primary: [time, lsn], oldest first. */
  private samples: [number, bigint][] = [];
  private next = 0;

  constructor(options: ReadRouterOptions) {
    this.options = options;
    this.replicas = options.replicas.map((r) => ({
      ...r,
      freshAsOf: undefined,
      lagMs: Number.POSITIVE_INFINITY,
    }));
  }

  get maxLagMs(): number {
    return this.options.maxLagMs ?? 1_000;
  }

  /** Polls until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const pollMs = this.options.pollMs ?? 100;
    while (!signal.aborted) {
      await this.poll();
      await new Promise((resolve) => setTimeout(resolve, pollMs).unref());
    }
  }

  /** One round: the primary's position, then each replica's. */
  async poll(): Promise<void> {
    const at = Date.now();
    try {
      const { rows } = await this.options.primary.query<{ lsn: string }>(lsnQuery('pg_current_wal_lsn()'));
      this.samples.push([at, BigInt(rows[0]!.lsn)]);
      // A minute of history is plenty: a replica further behind is out either way.
      while (this.samples.length > 2 && this.samples[0]![0] < at - 60_000) this.samples.shift();
    } catch {
      // Without the primary's position no replica can be judged fresh: reads go to the primary (which
      // answers 503 itself if it is gone too).
      for (const r of this.replicas) this.mark(r, undefined);
      return;
    }
    await Promise.all(this.replicas.map((r) => this.pollReplica(r)));
  }

  private async pollReplica(r: ReplicaState): Promise<void> {
    try {
      const { rows } = await r.pool.query<{ lsn: string | null }>(lsnQuery('pg_last_wal_replay_lsn()'));
      if (rows[0]!.lsn === null) throw new Error(`${r.name} is not a standby`);
      const replayed = BigInt(rows[0]!.lsn);
      // The newest sample the replica has replayed past: it holds every write of that moment.
      let fresh: number | undefined;
      for (let i = this.samples.length - 1; i >= 0; i--) {
        if (this.samples[i]![1] <= replayed) {
          fresh = this.samples[i]![0];
          break;
        }
      }
      this.mark(r, fresh ?? this.samples[0]![0] - 60_000);
    } catch (err) {
      if (r.freshAsOf !== undefined) {
        this.options.logger.warn({ replica: r.name, err: String(err) }, 'search read replica unreachable');
      }
      this.mark(r, undefined);
    }
  }

  private mark(r: ReplicaState, freshAsOf: number | undefined): void {
    r.freshAsOf = freshAsOf;
    const latest = this.samples.at(-1)?.[0];
    r.lagMs = freshAsOf === undefined || latest === undefined ? Number.POSITIVE_INFINITY : latest - freshAsOf;
    searchMetrics.replicaLag.set({ replica: r.name }, Number.isFinite(r.lagMs) ? r.lagMs / 1000 : -1);
  }

  /** The pool for a read: a replica whose staleness is within the bound now, else the primary. */
  pool(): { pool: pg.Pool; name: string } {
    const now = Date.now();
    const n = this.replicas.length;
    for (let k = 0; k < n; k++) {
      const r = this.replicas[(this.next + k) % n]!;
      if (r.freshAsOf !== undefined && now - r.freshAsOf <= this.maxLagMs) {
        this.next = (this.next + k + 1) % n;
        searchMetrics.reads.inc({ target: r.name });
        return r;
      }
    }
    searchMetrics.reads.inc({ target: 'primary' });
    return { pool: this.options.primary, name: 'primary' };
  }

  /** A read on `pool` found it unreachable: leave it out until a poll reaches it again. */
  failed(pool: pg.Pool): void {
    const r = this.replicas.find((x) => x.pool === pool);
    if (r) this.mark(r, undefined);
  }

  /** Each replica's lag as the last poll found it, in ms (Infinity: unreachable). */
  lags(): Record<string, number> {
    return Object.fromEntries(this.replicas.map((r) => [r.name, r.lagMs]));
  }
}
