// Each cluster's rows live in partitions of their own (migration 3). The indexer makes sure a cluster's
// partitions exist before its first batch, and removes a cluster by dropping them. Making them attaches
// new tables (migration 6), which locks the partitioned tables only against other catalog changes: reads
// and writes go on. Dropping them locks the partitioned tables exclusively, which waits for running
// statements on them and holds up new ones while it waits. The lock timeout is short, and below
// PostgreSQL's deadlock_timeout (1 s by default): should the change deadlock with an index batch, it
// gives way before the deadlock detector would pick a victim, so neither a query nor a batch ever fails
// for it, and none waits longer than the timeout. Retried.
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';

const lockTimeout = '200ms';
const attempts = 50;

/** SQLSTATE of a row for which no partition exists (the cluster was removed meanwhile, elsewhere). */
export const noPartitionCode = '23514';
const lockNotAvailable = '55P03';

/** Runs one catalog change in its own transaction, under the lock timeout, retried when it times out. */
async function catalogChange<T>(pool: pg.Pool, sql: string, params: unknown[]): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL lock_timeout = '${lockTimeout}'`);
      const { rows } = await client.query<{ v: T }>(sql, params);
      await client.query('COMMIT');
      return rows[0]!.v;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      if ((err as { code?: string }).code !== lockNotAvailable || attempt === attempts) throw err;
    } finally {
      client.release();
    }
    await sleep(Math.min(50 * attempt, 500) * (0.5 + Math.random()));
  }
}

/** The clusters whose partitions this process knows to exist. */
export class ClusterPartitions {
  private readonly known = new Set<string>();
  private readonly pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  /** Creates the cluster's partitions unless this process has seen them. */
  async ensure(cluster: string): Promise<void> {
    if (this.known.has(cluster)) return;
    await catalogChange(this.pool, 'SELECT tenantkit_search.ensure_cluster($1)::text AS v', [cluster]);
    this.known.add(cluster);
  }

  /** Forgets what this process knew of the cluster (another replica may have removed it). */
  forget(cluster: string): void {
    this.known.delete(cluster);
  }

  /** Drops the cluster's partitions; returns how many objects it held. */
  async drop(cluster: string): Promise<number> {
    this.known.delete(cluster);
    const n = await catalogChange<string>(this.pool, 'SELECT tenantkit_search.drop_cluster($1, $2) AS v', [
      cluster,
      Date.now(),
    ]);
    return Number(n);
  }
}
