// Search waits for a database that is not accepting connections yet (the chart's bundled PostgreSQL starts
// beside it) instead of crash-looping, and fails at once on anything else.
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/ports.ts';
import { connect, type Database } from '../../src/search/db/postgres.ts';
import { type DatabaseProxy, proxyOn, startTestDatabase } from '../harness/postgres.ts';

let db: Database;
beforeAll(async () => {
  db = await startTestDatabase();
});
afterAll(() => db?.close());

/** The test database's URL with another port (where nothing listens, or a late proxy will). */
function urlOn(port: number): string {
  const url = new URL(db.url);
  url.port = String(port);
  return url.toString();
}

describe('waiting for the search database', () => {
  it('connects once a late database accepts connections, saying what it waits for', async () => {
    const port = await freePort();
    const lines: string[] = [];
    let proxy: DatabaseProxy | undefined;
    const late = setTimeout(async () => {
      proxy = await proxyOn(db.url, port);
    }, 1500);
    try {
      const started = Date.now();
      const waited = await connect(urlOn(port), { waitForDatabaseMs: 20_000, onWait: (l) => lines.push(l) });
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
      expect((await waited.pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      expect(lines[0]).toBe(`waiting for the database at 127.0.0.1:${port} (ECONNREFUSED)`);
      await waited.close();
    } finally {
      clearTimeout(late);
      void proxy?.cut();
    }
  });

  it('fails at once by default, and after the wait when the database never comes', async () => {
    const port = await freePort();
    let started = Date.now();
    await expect(connect(urlOn(port))).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(Date.now() - started).toBeLessThan(1000);
    started = Date.now();
    await expect(connect(urlOn(port), { waitForDatabaseMs: 1500 })).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
  });

  it('gives up on a connection attempt nobody answers and tries again, reaching the database once it does', async () => {
    // A listener that takes the connection and never speaks, like a ClusterIP kube-proxy has not
    // programmed yet (the SYN goes unanswered): without a connect timeout the attempt waited ~2 minutes.
    const connections: Socket[] = [];
    const silent = createServer((c) => connections.push(c));
    const port = await new Promise<number>((resolve) =>
      silent.listen(0, '127.0.0.1', () => resolve((silent.address() as { port: number }).port)),
    );
    const lines: string[] = [];
    let proxy: DatabaseProxy | undefined;
    const answering = setTimeout(() => {
      silent.close();
      for (const c of connections) c.destroy();
      void proxyOn(db.url, port).then((p) => {
        proxy = p;
      });
    }, 1500);
    try {
      const started = Date.now();
      const waited = await connect(urlOn(port), {
        waitForDatabaseMs: 20_000,
        connectTimeoutMs: 500,
        onWait: (l) => lines.push(l),
      });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect((await waited.pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      expect(lines[0]).toBe(`waiting for the database at 127.0.0.1:${port} (connect timeout)`);
      await waited.close();
    } finally {
      clearTimeout(answering);
      silent.close();
      void proxy?.cut();
    }
  });

  it('does not wait on a wrong password: that will not fix itself', async () => {
    const url = new URL(db.url);
    url.password = 'wrong';
    const started = Date.now();
    await expect(connect(url.toString(), { waitForDatabaseMs: 20_000 })).rejects.toThrow(
      /password authentication failed/,
    );
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
