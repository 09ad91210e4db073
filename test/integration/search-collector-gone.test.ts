// The collector's 410 Gone path, on a control plane of its own that forgets old versions within
// seconds: kube-apiserver without its watch cache (watches go straight to etcd) and compacting etcd
// every second. The collector reaches the API server through a TCP proxy the test can cut, like a
// network partition: while it is cut the cluster changes and etcd compacts past the collector's
// resourceVersion, so when the link returns every resumed watch gets 410 Gone; the collector must
// relist, and the resync must leave the index exactly like the cluster.
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane } from '../../devenv/controlplane/launch.ts';
import { isGone, KubeClient } from '../../src/kube/client.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { Resources } from '../../src/kube/resources.ts';
import { BatchQueue } from '../../src/search/collector/batch-queue.ts';
import { Collector } from '../../src/search/collector/collector.ts';
import { collectorMetrics } from '../../src/search/collector/metrics.ts';
import { TypeWatcher } from '../../src/search/collector/type-watcher.ts';
import type { Database } from '../../src/search/db/postgres.ts';
import { Indexer } from '../../src/search/indexer/indexer.ts';
import { HubCluster } from '../../src/search/model.ts';
import { eventually } from '../harness/cluster.ts';
import { startTestDatabase } from '../harness/postgres.ts';

/** A TCP proxy to 127.0.0.1:`port` whose link can be cut (open connections dropped, new ones refused). */
async function cuttableProxy(port: number) {
  const sockets = new Set<Socket>();
  let cut = false;
  const server: Server = createServer((client) => {
    if (cut) return client.destroy();
    const upstream = connect(port, '127.0.0.1');
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', end);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('search collector after 410 Gone', () => {
  let dir = '';
  let controlPlane: ControlPlane | undefined;
  let proxy: Awaited<ReturnType<typeof cuttableProxy>> | undefined;
  let db: Database | undefined;
  const stop = new AbortController();
  let running: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tenantkit-gone-'));
    [controlPlane, db] = await Promise.all([
      startControlPlane({
        dir,
        unsafeNoFsync: true,
        apiserverFlags: ['--watch-cache=false', '--etcd-compaction-interval=1s'],
      }),
      startTestDatabase(),
    ]);
  });

  afterAll(async () => {
    stop.abort();
    await running;
    await proxy?.close();
    await controlPlane?.stop();
    await db?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('relists when resumed watches are too old, and the index matches the cluster again', async () => {
    const cp = controlPlane!;
    const admin = KubeClient.fromKubeconfig({ yaml: cp.adminKubeconfig });
    proxy = await cuttableProxy(Number(new URL(cp.server).port));
    const throughProxy = KubeClient.fromKubeconfig({
      yaml: cp.adminKubeconfig.replace(cp.server, `https://127.0.0.1:${proxy.port}`),
    });
    const ns = 'gone-test';
    await admin.create(Resources.namespaces, { metadata: { name: ns } });
    for (const name of ['kept', 'changed', 'deleted']) {
      await admin.create(Resources.configMaps, { metadata: { name, namespace: ns } });
    }

    const indexer = new Indexer({ pool: db!.pool, logger: silentLogger, hubCluster: HubCluster });
    const collector = new Collector({
      client: throughProxy,
      sink: indexer,
      cluster: 'edge-1',
      hub: false,
      logger: silentLogger,
      batchMaxDelayMs: 50,
    });
    running = collector.run(stop.signal);
    await collector.waitForInitialSync();
    const names = async () =>
      (
        await db!.pool.query<{ name: string; label: string | null }>(
          `SELECT data->>'name' AS name, data->'label'->>'v' AS label FROM search.resources
           WHERE cluster = 'edge-1' AND data->>'kind' = 'ConfigMap' AND data->>'namespace' = $1
             AND data->>'name' <> 'kube-root-ca.crt' ORDER BY 1`,
          [ns],
        )
      ).rows.map((r) => (r.label ? `${r.name}:${r.label}` : r.name));
    expect(await names()).toEqual(['changed', 'deleted', 'kept']);
    expect(collector.stats().lists.gone).toBe(0);

    // Cut the link, change the cluster, and wait until etcd no longer has the versions the collector saw.
    const seen = (await admin.list(Resources.configMaps, { namespace: ns })).metadata.resourceVersion!;
    proxy.cut();
    await admin.delete(Resources.configMaps, 'deleted', ns);
    await admin.patch(Resources.configMaps, 'changed', ns, { metadata: { labels: { v: '2' } } });
    await admin.create(Resources.configMaps, { metadata: { name: 'created', namespace: ns } });
    await eventually(
      async () => {
        try {
          await admin.watch(Resources.configMaps, { resourceVersion: seen, timeoutSeconds: 1 }, () => {});
          return false;
        } catch (err) {
          return isGone(err);
        }
      },
      { what: 'etcd compacted past the collector resourceVersion', timeoutMs: 15_000 },
    );
    expect(await names()).toEqual(['changed', 'deleted', 'kept']); // the collector saw nothing meanwhile

    proxy.restore();
    await eventually(
      async () => JSON.stringify(await names()) === JSON.stringify(['changed:2', 'created', 'kept']),
      { what: 'the index follows the cluster after the relist', timeoutMs: 20_000 },
    );
    // Every watch resumed into a compacted version: the index was repaired by relists, not by watch events.
    expect(collector.stats().lists.gone).toBeGreaterThan(0);
  });

  it('starts a list over when its continue token expires, and the resync keeps every object', async () => {
    // One type's watcher, paging 5 objects at a time into a queue that is full after one page and whose
    // index is held shut: the list waits between pages until etcd has compacted past its snapshot, so
    // its next page is answered 410. Before, that ended the list after its first page and the resync
    // deleted the other rows of the type.
    const cp = controlPlane!;
    const admin = KubeClient.fromKubeconfig({ yaml: cp.adminKubeconfig });
    const ns = 'expired-list';
    await admin.create(Resources.namespaces, { metadata: { name: ns } });
    for (let i = 0; i < 20; i++) {
      await admin.create(Resources.configMaps, { metadata: { name: `cm-${i}`, namespace: ns } });
    }
    const indexer = new Indexer({ pool: db!.pool, logger: silentLogger, hubCluster: HubCluster });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const cluster = 'edge-2';
    // The size of every resync of the type the index is sent: each must name all 21 config maps of the
    // namespace (its 20 and kube-root-ca.crt), which exist throughout.
    const resyncs: number[] = [];
    const queue = new BatchQueue({
      sink: {
        write: async (batch) => {
          await gate;
          for (const r of batch.resyncs ?? []) resyncs.push(r.uids.length);
          await indexer.write(batch);
        },
      },
      cluster,
      logger: silentLogger,
      maxObjects: 5,
      maxDelayMs: 10,
      maxPendingObjects: 4,
    });
    const type = { ...Resources.configMaps, namespaced: true };
    const watcher = new TypeWatcher(
      {
        cluster,
        logger: silentLogger,
        queue,
        resyncPeriodMs: 0,
        watchTimeoutSeconds: 5,
        listPageSize: 5,
        clientsFor: () => ({ list: admin, watch: admin }),
        transform: (o) => ({
          uid: `${cluster}/${o.metadata.uid}`,
          data: {
            kind: 'ConfigMap',
            kind_plural: 'configmaps',
            apiversion: 'v1',
            name: o.metadata.name!,
            ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
          },
          edges: [],
        }),
        listSlot: async () => () => {},
        changed: () => {},
        listed: () => {},
        missing: () => {},
        paused: () => {},
      },
      type,
    );
    const expiredBefore = await listsExpired(cluster);
    watcher.start();
    try {
      await eventually(() => queue.full(), { what: 'the list holds its first page, the queue full' });
      // A version at least as new as the list's snapshot.
      const snapshot = (await admin.list(Resources.configMaps, { limit: 1 })).metadata.resourceVersion!;
      // Newer writes, then wait until the version of the list's snapshot is compacted away.
      await eventually(
        async () => {
          await admin.patch(Resources.configMaps, 'cm-0', ns, {
            metadata: { labels: { t: `${Date.now()}` } },
          });
          try {
            await admin.watch(
              Resources.configMaps,
              { resourceVersion: snapshot, timeoutSeconds: 1 },
              () => {},
            );
            return false;
          } catch (err) {
            return isGone(err);
          }
        },
        { what: "etcd compacted past the list's snapshot", timeoutMs: 15_000 },
      );
      open();
      const indexed = async () =>
        (
          await db!.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM search.resources
             WHERE cluster = $1 AND data->>'namespace' = $2 AND data->>'name' LIKE 'cm-%'`,
            [cluster, ns],
          )
        ).rows[0]!.n;
      await eventually(async () => (await listsExpired(cluster)) > expiredBefore, {
        what: 'the continue token expired',
      });
      // Every object of the type is in the index once the list started over, and stays after its resync.
      await eventually(async () => (await indexed()) === 20, { what: 'all 20 indexed', timeoutMs: 20_000 });
      // The 20 can be indexed before the list's last page (kube-root-ca.crt sorts after them) and its
      // resync are queued: wait for the resync itself, then for the index to have applied it.
      await eventually(() => resyncs.length > 0, {
        what: 'the restarted list ended with a resync',
        timeoutMs: 20_000,
      });
      await queue.barrier();
      expect(await indexed()).toBe(20);
      // The index was never told that the type holds fewer objects than it does (rows wiped until a relist).
      expect(Math.min(...resyncs)).toBeGreaterThanOrEqual(21);
    } finally {
      await watcher.stop();
      await queue.close(1_000);
    }
  });
});

/** How often lists of `cluster` found their continue token expired (the collector's metric). */
async function listsExpired(cluster: string): Promise<number> {
  const metric = await collectorMetrics.lists.get();
  return metric.values
    .filter((v) => v.labels.cluster === cluster && v.labels.reason === 'expired')
    .reduce((n, v) => n + v.value, 0);
}
