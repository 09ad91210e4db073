// Each cluster's rows live in partitions of their own (migration 3). The indexer makes sure a cluster's
// partitions exist before its first batch, and removes a cluster by detaching and dropping them. Neither
// blocks queries or other clusters' batches: making them attaches new tables (migration 6), and removing
// them detaches each with DETACH PARTITION ... CONCURRENTLY (migration 7); both lock the partitioned
// tables only against other catalog changes. Attaching runs under a short lock timeout, below
// PostgreSQL's deadlock_timeout (1 s by default), and is retried: it gives way to a removal that holds a
// parent instead of waiting long. A removal takes the parents one at a time in the order attaching locks
// them all, so the two never deadlock.
//
// A removal is three steps that cannot share a transaction (a concurrent detach runs outside one): the
// tombstone (the cluster's fence says '<time>.removing'), each partition detached then dropped, and the
// tombstone marked done ('<time>.removed'). Every step can be run again: a removal cut short (a crash, a
// statement timeout) is finished by the next removal of the cluster, by the next batch of it, or when an
// indexer starts (resumeRemovals).
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

const lockTimeout = '200ms';
const attempts = 50;
/** A removal waits for the queries that still read the partitions it detaches; at most this long. */
const removalTimeoutMs = 120_000;

/** SQLSTATE of a row for which no partition exists (the cluster was removed meanwhile, elsewhere). */
export const noPartitionCode = '23514';
const lockNotAvailable = '55P03';

/** The advisory lock that lets one process at a time make or remove a cluster's partitions. */
const clusterLock = "hashtext('tenantkit_search.partitions:' || $1)";

interface PartitionState {
  schema_name: string;
  table_name: string;
  part: string;
  state: 'attached' | 'detaching' | 'detached' | 'missing';
}

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
    // What a removal cut short left (a tombstone in progress, tables detached or detaching) goes first:
    // a detached table holds the partition's name, and its rows are the removed cluster's.
    if (await this.removalUnfinished(cluster)) await this.clear(cluster);
    await catalogChange(this.pool, 'SELECT tenantkit_search.ensure_cluster($1)::text AS v', [cluster]);
    this.known.add(cluster);
  }

  /** Forgets what this process knew of the cluster (another replica may have removed it). */
  forget(cluster: string): void {
    this.known.delete(cluster);
  }

  /**
   * Removes the cluster's partitions (see the top of this file); returns how many objects they held.
   * Batches of collector streams started before now are refused from the first step on.
   */
  async drop(cluster: string): Promise<number> {
    this.known.delete(cluster);
    await catalogChange(this.pool, 'SELECT tenantkit_search.mark_removed($1, $2)::text AS v', [
      cluster,
      Date.now(),
    ]);
    return this.clear(cluster);
  }

  /**
   * ANALYZEs those of the cluster's partitions that were never analyzed (a cluster that joined, or came
   * back from empty), so the planner has their statistics before autovacuum's next round (up to a minute
   * away): without them it walked a new cluster's names by the wrong index and sorted thousands of rows
   * at every step (a completion of 1,000 names 5 -> 60 ms, bench/search-wide.ts --fresh-cluster).
   * Returns the partitions analyzed.
   */
  async analyzeNew(cluster: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ part: string }>(
      `SELECT format('%I.%I', p.schema_name, p.part) AS part FROM tenantkit_search.partition_states($1) p
       JOIN pg_stat_user_tables s ON s.relid = format('%I.%I', p.schema_name, p.part)::regclass
       WHERE p.state = 'attached' AND s.last_analyze IS NULL AND s.last_autoanalyze IS NULL`,
      [cluster],
    );
    // Names as the database quoted them (format %I), never the cluster's text.
    for (const { part } of rows) await this.pool.query(`ANALYZE ${part}`);
    return rows.map((r) => r.part);
  }

  /** Finishes every removal that was cut short; returns the clusters it finished. */
  async resumeRemovals(): Promise<string[]> {
    const { rows } = await this.pool.query<{ cluster: string }>(
      'SELECT c AS cluster FROM tenantkit_search.unfinished_removals() c',
    );
    for (const { cluster } of rows) await this.clear(cluster);
    return rows.map((r) => r.cluster);
  }

  /** Whether a removal of the cluster began and did not finish. */
  private async removalUnfinished(cluster: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ unfinished: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM tenantkit_search.unfinished_removals() c WHERE c = $1)
           OR EXISTS (SELECT 1 FROM tenantkit_search.partition_states($1) WHERE state IN ('detaching', 'detached'))
         AS unfinished`,
      [cluster],
    );
    return rows[0]!.unfinished;
  }

  /**
   * Detaches and drops whatever of the cluster's partitions there is, and marks its tombstone done,
   * holding the cluster's lock for the session. The partitions are detached at once, each on its own
   * connection: a detach waits for the queries that read its table, and one table held by a long query
   * must not keep the others' rows visible. The connections are the removal's own, not the pool's, so
   * a removal that waits never takes connections from queries and batches; they are closed after, and
   * with them the lock. Returns the objects dropped.
   */
  private async clear(cluster: string): Promise<number> {
    const session = await this.connection();
    try {
      await session.query(`SELECT pg_advisory_lock(${clusterLock})`, [cluster]);
      const { rows } = await session.query<PartitionState>(
        'SELECT schema_name, table_name, part, state FROM tenantkit_search.partition_states($1)',
        [cluster],
      );
      const removed = await Promise.all(rows.filter((t) => t.state !== 'missing').map((t) => this.remove(t)));
      await session.query(
        `UPDATE tenantkit_search.batch_fences SET stream = started || '.removed'
         WHERE cluster = $1 AND stream LIKE '%.removing'`,
        [cluster],
      );
      return removed.reduce((a, b) => a + b, 0);
    } finally {
      await session.end().catch(() => {});
    }
  }

  /** Detaches one partition (or finishes its detach), then drops it. */
  private async remove(t: PartitionState): Promise<number> {
    const client = await this.connection();
    try {
      const parent = `${client.escapeIdentifier(t.schema_name)}.${client.escapeIdentifier(t.table_name)}`;
      const part = `${client.escapeIdentifier(t.schema_name)}.${client.escapeIdentifier(t.part)}`;
      if (t.state === 'attached')
        await client.query(`ALTER TABLE ${parent} DETACH PARTITION ${part} CONCURRENTLY`);
      if (t.state === 'detaching')
        await client.query(`ALTER TABLE ${parent} DETACH PARTITION ${part} FINALIZE`);
      return await dropDetached(client, t.table_name, part);
    } finally {
      await client.end().catch(() => {});
    }
  }

  /** A connection of the removal's own, to the pool's database. */
  private async connection(): Promise<pg.Client> {
    const client = new pg.Client({
      ...this.pool.options,
      statement_timeout: removalTimeoutMs,
      application_name: 'tenantkit-search-removal',
    });
    client.on('error', () => {});
    await client.connect();
    return client;
  }
}

/**
 * Drops a detached partition. The objects of a resources partition are counted first and, when watches
 * are served, recorded as deleted for them (a DROP fires no trigger), in the drop's transaction.
 */
async function dropDetached(client: pg.Client, table: string, part: string): Promise<number> {
  if (table !== 'resources') {
    await client.query(`DROP TABLE ${part}`);
    return 0;
  }
  await client.query('BEGIN');
  try {
    const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${part}`);
    const n = rows[0]!.n;
    if (n > 0) {
      await client.query(
        `INSERT INTO tenantkit_search.events (operation, uid, cluster, old_data)
         SELECT 'DELETE', uid, cluster, data FROM ${part} WHERE tenantkit_search.watched()`,
      );
      await client.query(`SELECT pg_notify('tenantkit_search_events', '') WHERE tenantkit_search.watched()`);
    }
    await client.query(`DROP TABLE ${part}`);
    await client.query('COMMIT');
    return n;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}
