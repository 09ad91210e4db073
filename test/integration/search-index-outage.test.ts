// The index after its database was gone for a while (a killed or restarting database Pod, a full disk):
// the collector's batches keep failing meanwhile, and the changes they carry must be in the index within
// seconds once the database is back, however long it was gone. A real PostgreSQL reached through a
// proxy that goes and comes back, the real indexer and the collector's real batch queue.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/kube/log.ts';
import { freePort } from '../../src/ports.ts';
import { BatchQueue } from '../../src/search/collector/batch-queue.ts';
import { connect, type Database } from '../../src/search/db/postgres.ts';
import { Indexer } from '../../src/search/indexer/indexer.ts';
import { HubCluster, type IndexedResource } from '../../src/search/model.ts';
import { type DatabaseProxy, proxyOn, startTestDatabase } from '../harness/postgres.ts';

const cluster = 'outage-1';
const row = (name: string): IndexedResource => ({
  uid: `${cluster}/${name}`,
  data: { kind: 'ConfigMap', kind_plural: 'configmaps', apiversion: 'v1', name, namespace: 'team-a' },
  edges: [],
});

describe('search index after its database was gone', () => {
  let db: Database | undefined;
  let through: Database | undefined;
  let proxy: DatabaseProxy | undefined;
  let queue: BatchQueue | undefined;

  afterAll(async () => {
    await queue?.close(1_000).catch(() => {});
    await through?.close();
    await proxy?.cut();
    await db?.close();
  });

  it('holds the changes made meanwhile within 7 s of the database being back', async () => {
    db = await startTestDatabase();
    const port = await freePort();
    proxy = await proxyOn(db.url, port);
    through = await connect(proxy.url);
    queue = new BatchQueue({
      sink: new Indexer({ pool: through.pool, logger: silentLogger, hubCluster: HubCluster }),
      cluster,
      logger: silentLogger,
      maxObjects: 100,
      maxDelayMs: 10,
      maxPendingObjects: 1_000,
    });
    const names = async () =>
      (
        await db!.pool.query<{ name: string }>(
          `SELECT data->>'name' AS name FROM search.resources WHERE cluster = $1 ORDER BY 1`,
          [cluster],
        )
      ).rows.map((r) => r.name);

    queue.upsert(row('before'));
    await queue.barrier();
    expect(await names()).toEqual(['before']);

    // Gone for 16 s, the change waits: each resend fails and waits longer than the one before. Before
    // the resends' wait was capped at 5 s, the 8th waited about 12.8 s and the 9th 25.6 s, so the change
    // came about 9 s (up to 14 s) after the database; now at most 6 s after.
    await proxy.cut();
    queue.upsert(row('meanwhile'));
    await sleep(16_000);
    expect(queue.deliveryFailure()?.error).toMatch(/ECONNREFUSED|connect/);
    expect(await names()).toEqual(['before']);

    proxy = await proxyOn(db.url, port);
    const back = performance.now();
    await queue.barrier();
    const took = performance.now() - back;
    expect(await names()).toEqual(['before', 'meanwhile']);
    expect(queue.deliveryFailure()).toBeUndefined();
    expect(took).toBeLessThan(7_000);
  }, 60_000);
});
