// Opens the search index: the database (a URL, or the embedded server in a directory), its schema, and
// the parts that use it (indexer, query engine, watch hub). Every search process starts here.
import type { Logger } from 'pino';
import { migrate } from '../db/migrations.ts';
import { connect, createPool, type Database, startEmbedded } from '../db/postgres.ts';
import { ReadRouter } from '../db/replicas.ts';
import { Indexer } from '../indexer/indexer.ts';
import { HubCluster } from '../model.ts';
import { PostgresSearch, type QueryLimits } from '../query/engine.ts';
import { WatchHub } from '../query/watch.ts';

export interface IndexStoreOptions {
  /** A PostgreSQL URL (production); without one, the embedded server runs in `embeddedDir`. */
  databaseUrl?: string;
  embeddedDir?: string;
  logger: Logger;
  hubCluster?: string;
  limits?: Partial<QueryLimits>;
  /** Pool size (default 10). */
  connections?: number;
  /** How long to wait for a database that does not accept connections yet (default: fail at once). */
  waitForDatabaseMs?: number;
  /** URLs of read replicas of `databaseUrl` (streaming replication): queries read them while fresh. */
  replicaUrls?: string[];
  /** The most staleness a read from a replica may see, in ms (default 1,000). */
  maxReplicaLagMs?: number;
}

export interface IndexStore {
  db: Database;
  indexer: Indexer;
  engine: PostgresSearch;
  watchHub: WatchHub;
  hubCluster: string;
  /** Where reads go, with replicas; undefined without them. */
  reads: ReadRouter | undefined;
  /** Runs the watch hub (and the replicas' lag polls) until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export async function openIndexStore(options: IndexStoreOptions): Promise<IndexStore> {
  const pool = { max: options.connections ?? 10, applicationName: 'tenantkit-search' };
  let db: Database;
  if (options.databaseUrl) {
    db = await connect(options.databaseUrl, {
      ...pool,
      waitForDatabaseMs: options.waitForDatabaseMs ?? 0,
      onWait: (line) => options.logger.warn(line),
    });
  } else if (options.embeddedDir) {
    db = await startEmbedded({ dir: options.embeddedDir, ...pool });
  } else {
    throw new Error('the search index needs --database-url, or a directory for the embedded PostgreSQL');
  }
  try {
    const applied = await migrate(db.pool);
    if (applied.length > 0) options.logger.info({ migrations: applied }, 'search index schema migrated');
  } catch (err) {
    await db.close();
    throw err;
  }
  const hubCluster = options.hubCluster ?? HubCluster;
  const { logger } = options;
  const watchHub = new WatchHub({ pool: db.pool, hubCluster, logger });
  // A replica that is down at start is not waited for: it takes reads once a lag poll reaches it.
  const replicaPools = (options.replicaUrls ?? []).map((url) => ({
    name: new URL(url).host,
    pool: createPool(url, { ...pool, applicationName: 'tenantkit-search-reads' }),
  }));
  const reads =
    replicaPools.length > 0
      ? new ReadRouter({
          primary: db.pool,
          replicas: replicaPools,
          ...(options.maxReplicaLagMs !== undefined ? { maxLagMs: options.maxReplicaLagMs } : {}),
          logger,
        })
      : undefined;
  return {
    db,
    hubCluster,
    reads,
    indexer: new Indexer({ pool: db.pool, logger, hubCluster }),
    engine: new PostgresSearch({
      pool: db.pool,
      hubCluster,
      logger,
      watchHub,
      ...(reads ? { reads } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
    }),
    watchHub,
    run: async (signal) => {
      await Promise.all([watchHub.run(signal), reads?.run(signal)]);
    },
    close: async () => {
      await Promise.all(replicaPools.map((r) => r.pool.end().catch(() => {})));
      await db.close();
    },
  };
}
