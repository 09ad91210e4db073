// The index on a real PostgreSQL: the indexer's batches (unchanged rows skipped, edges in any arrival
// order, resync, cluster isolation, back-pressure) and the query engine (ACM's filter language, access
// predicate, related, searchComplete, searchSchema, watch, hostile input).
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/kube/log.ts';
import { migrate } from '../../src/search/db/migrations.ts';
import type { Database } from '../../src/search/db/postgres.ts';
import { Indexer } from '../../src/search/indexer/indexer.ts';
import {
  type AccessSet,
  BackPressureError,
  type EdgeRef,
  HubCluster,
  type IndexedResource,
  QueryError,
  type ResourceData,
  type SearchEvent,
} from '../../src/search/model.ts';
import { InvalidBatchError } from '../../src/search/policy/batch.ts';
import { PostgresSearch } from '../../src/search/query/engine.ts';
import { WatchHub } from '../../src/search/query/watch.ts';
import { allAccess } from '../harness/access-sets.ts';
import { eventually } from '../harness/cluster.ts';
import { startTestDatabase } from '../harness/postgres.ts';
import { webDeployment } from '../harness/search-objects.ts';

const all = allAccess;
const none: AccessSet = { ...all, all: false, digest: 'none' };
const selection = { items: true, count: true, related: false } as const;

let n = 0;
function object(
  kind: string,
  name: string,
  extra: Partial<ResourceData> & { plural?: string; group?: string } = {},
  edges: EdgeRef[] = [],
  cluster = HubCluster,
): IndexedResource {
  const { plural, group, ...props } = extra;
  const data: ResourceData = {
    kind,
    kind_plural: plural ?? `${kind.toLowerCase()}s`,
    apiversion: 'v1',
    name,
    created: '2024-01-01T00:00:00Z',
    ...(group ? { apigroup: group } : {}),
    ...(cluster === HubCluster ? { _hubClusterResource: true } : {}),
    ...props,
  };
  return { uid: `${cluster}/uid-${++n}`, data, edges };
}

describe('search index on PostgreSQL', () => {
  let db: Database;
  let indexer: Indexer;
  let engine: PostgresSearch;
  let hub: WatchHub;
  const stop = new AbortController();

  beforeAll(async () => {
    db = await startTestDatabase();
    indexer = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
    hub = new WatchHub({ pool: db.pool, hubCluster: HubCluster, logger: silentLogger, pollMs: 100 });
    void hub.run(stop.signal);
    engine = new PostgresSearch({
      pool: db.pool,
      hubCluster: HubCluster,
      logger: silentLogger,
      watchHub: hub,
    });
  });
  afterAll(async () => {
    stop.abort();
    await db?.close();
  });

  const uidsOf = async (
    access: AccessSet,
    filters: { property: string; values: string[] }[],
    keywords?: string[],
  ) =>
    ((await engine.search(access, { filters, ...(keywords ? { keywords } : {}) }, selection)).items ?? [])
      .map((i) => i.name)
      .sort();

  it('skips unchanged objects and resolves edges whichever end arrives first', async () => {
    const node = object('Node', 'node-a', {});
    const pod = object('Pod', 'shop-web-1', { namespace: 'shop', status: 'Running', label: { app: 'web' } }, [
      { type: 'runsOn', kind: 'Node', name: 'node-a' },
      { type: 'attachedTo', kind: 'ConfigMap', namespace: 'shop', name: 'settings' },
    ]);
    const service = object('Service', 'web', { namespace: 'shop' }, [
      { type: 'usedBy', kind: 'Pod', namespace: 'shop', selector: { app: 'web' } },
    ]);
    const owner = object('ReplicaSet', 'web-abc', { namespace: 'shop', group: 'apps' });
    pod.edges.push({ type: 'ownedBy', uid: owner.uid });
    // The pod arrives before its node, its config map and its owner; the service after it.
    await indexer.write({ cluster: HubCluster, upserts: [pod] });
    await indexer.write({ cluster: HubCluster, upserts: [node, owner, service] });
    const configMap = object('ConfigMap', 'settings', { namespace: 'shop' });
    await indexer.write({ cluster: HubCluster, upserts: [configMap] });
    const edges = await db.pool.query(
      'SELECT sourceid, destid, edgetype, sourcekind, destkind FROM search.edges ORDER BY edgetype',
    );
    expect(edges.rows).toEqual([
      {
        sourceid: pod.uid,
        destid: configMap.uid,
        edgetype: 'attachedTo',
        sourcekind: 'Pod',
        destkind: 'ConfigMap',
      },
      {
        sourceid: pod.uid,
        destid: owner.uid,
        edgetype: 'ownedBy',
        sourcekind: 'Pod',
        destkind: 'ReplicaSet',
      },
      { sourceid: pod.uid, destid: node.uid, edgetype: 'runsOn', sourcekind: 'Pod', destkind: 'Node' },
      { sourceid: service.uid, destid: pod.uid, edgetype: 'usedBy', sourcekind: 'Service', destkind: 'Pod' },
    ]);

    // The same objects again: nothing is written.
    const before = await db.pool.query(
      `SELECT n_tup_upd + n_tup_ins AS w FROM pg_stat_user_tables WHERE relname = 'resources'`,
    );
    await indexer.write({ cluster: HubCluster, upserts: [pod, node, owner, service, configMap] });
    await new Promise((r) => setTimeout(r, 700)); // statistics are flushed at most every 500 ms
    const after = await db.pool.query(
      `SELECT n_tup_upd + n_tup_ins AS w FROM pg_stat_user_tables WHERE relname = 'resources'`,
    );
    expect(after.rows[0].w).toBe(before.rows[0].w);

    // The pod's labels change: the service's selector no longer holds, so that edge goes.
    const relabelled = { ...pod, data: { ...pod.data, label: { app: 'other' } } };
    await indexer.write({ cluster: HubCluster, upserts: [relabelled] });
    const selectorEdges = await db.pool.query(`SELECT 1 FROM search.edges WHERE edgetype = 'usedBy'`);
    expect(selectorEdges.rowCount).toBe(0);

    // Deleting the node removes its edge; a resync of config maps that omits ours removes it too.
    await indexer.write({
      cluster: HubCluster,
      deletes: [node.uid],
      resyncs: [{ apigroup: '', kind_plural: 'configmaps', uids: [] }],
    });
    const left = await db.pool.query('SELECT edgetype FROM search.edges ORDER BY 1');
    expect(left.rows.map((r) => r.edgetype)).toEqual(['ownedBy']);
    // The node comes back: its edge is rebuilt from the pod's stored references.
    await indexer.write({ cluster: HubCluster, upserts: [node] });
    const back = await db.pool.query('SELECT edgetype FROM search.edges ORDER BY 1');
    expect(back.rows.map((r) => r.edgetype)).toEqual(['ownedBy', 'runsOn']);
  });

  it('keeps each cluster in its own rows', async () => {
    const hubPod = object('Pod', 'hub-pod', { namespace: 'shop' });
    await indexer.write({ cluster: HubCluster, upserts: [hubPod] });
    // A managed cluster's collector may not write, delete or claim anything outside its cluster.
    expect(() => indexer.write({ cluster: 'edge-1', upserts: [{ ...hubPod }] })).toThrow(InvalidBatchError);
    expect(() => indexer.write({ cluster: 'edge-1', deletes: [hubPod.uid] })).toThrow(/edge-1\//);
    const claim = object('Pod', 'x', { namespace: 'shop', _hubClusterResource: true }, [], 'edge-1');
    expect(() => indexer.write({ cluster: 'edge-1', upserts: [claim] })).toThrow(/reserved for the hub/);
    const crossEdge = object(
      'Pod',
      'y',
      { namespace: 'shop' },
      [{ type: 'ownedBy', uid: hubPod.uid }],
      'edge-1',
    );
    expect(() => indexer.write({ cluster: 'edge-1', upserts: [crossEdge] })).toThrow(/stay inside a cluster/);
    // A resync of the managed cluster's pods leaves the hub's pods alone.
    await indexer.write({ cluster: 'edge-1', resyncs: [{ apigroup: '', kind_plural: 'pods', uids: [] }] });
    expect(await uidsOf(all, [{ property: 'name', values: ['hub-pod'] }])).toEqual(['hub-pod']);
  });

  it('pushes back when a cluster queue is full, and loses nothing it accepted', async () => {
    const small = new Indexer({
      pool: db.pool,
      logger: silentLogger,
      hubCluster: HubCluster,
      maxQueuedBatches: 2,
    });
    const batches = Array.from({ length: 5 }, (_, i) => ({
      cluster: 'edge-2',
      upserts: [object('ConfigMap', `bp-${i}`, { namespace: 'bp' }, [], 'edge-2')],
    }));
    const results = await Promise.allSettled(batches.map((b) => small.write(b)));
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused.length).toBe(3);
    for (const r of refused) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(BackPressureError);
    const stored = await db.pool.query(
      `SELECT count(*)::int AS n FROM search.resources WHERE cluster = 'edge-2'`,
    );
    expect(stored.rows[0].n).toBe(2);
  });

  it('applies each batch of a collector stream once and in order, whichever replica gets it', async () => {
    // Two API replicas, each with its own indexer, on one database: a collector's batch that timed out
    // on one replica (its answer lost) is resent to the other, which applies it, then the next batch.
    const replicaA = indexer;
    const replicaB = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
    const cm = object('ConfigMap', 'fenced', { namespace: 'fence' }, [], 'edge-3');
    const stream = `${Date.now()}.0123456789abcdef`;
    const upsert = { cluster: 'edge-3', sequence: { stream, seq: 1 }, upserts: [cm] };
    const remove = { cluster: 'edge-3', sequence: { stream, seq: 2 }, deletes: [cm.uid] };
    await replicaB.write(upsert);
    await replicaB.write(remove);
    // The first replica gets to the timed-out copy only now: it must not bring the deleted object back.
    await replicaA.write(upsert);
    const rows = async () =>
      (await db.pool.query(`SELECT uid FROM search.resources WHERE cluster = 'edge-3'`)).rows;
    expect(await rows()).toEqual([]);

    // A restarted collector (a later stream) takes over; a batch of the stream it replaced is refused
    // with a reason and changes nothing.
    const later = `${Date.now() + 1_000}.fedcba9876543210`;
    const back = object('ConfigMap', 'fenced-again', { namespace: 'fence' }, [], 'edge-3');
    await replicaA.write({ cluster: 'edge-3', sequence: { stream: later, seq: 1 }, upserts: [back] });
    const old = object('ConfigMap', 'from-the-old-run', { namespace: 'fence' }, [], 'edge-3');
    await expect(
      replicaB.write({ cluster: 'edge-3', sequence: { stream, seq: 3 }, upserts: [old] }),
    ).rejects.toThrow(/a newer collector of the cluster runs/);
    expect(await rows()).toEqual([{ uid: back.uid }]);

    // A sequence the collector could not have made is refused before it touches the database.
    expect(() =>
      replicaA.write({ cluster: 'edge-3', sequence: { stream: 'x', seq: 0 }, upserts: [old] }),
    ).toThrow(/sequence.stream must be/);
  });

  it('keeps each cluster in partitions of its own, and removes a cluster by dropping them', async () => {
    const stream = `${Date.now()}.00000000000000aa`;
    const ownerA = object('Deployment', 'web', { namespace: 'shop', group: 'apps' }, [], 'edge-a');
    const podA = object(
      'Pod',
      'web-1',
      { namespace: 'shop' },
      [{ type: 'ownedBy', uid: ownerA.uid }],
      'edge-a',
    );
    const ownerB = object('Deployment', 'web', { namespace: 'shop', group: 'apps' }, [], 'edge-b');
    const podB = object(
      'Pod',
      'web-1',
      { namespace: 'shop' },
      [{ type: 'ownedBy', uid: ownerB.uid }],
      'edge-b',
    );
    await indexer.write({ cluster: 'edge-a', sequence: { stream, seq: 1 }, upserts: [ownerA, podA] });
    await indexer.write({ cluster: 'edge-b', upserts: [ownerB, podB] });
    const partitionsOf = async (table: string) =>
      (
        await db.pool.query<{ bound: string }>(
          `SELECT pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i
           JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1`,
          [table],
        )
      ).rows.map((r) => r.bound);
    for (const table of ['search.resources', 'search.edges', 'tenantkit_search.edge_refs']) {
      const bounds = await partitionsOf(table);
      expect(bounds).toContain("FOR VALUES IN ('edge-a')");
      expect(bounds).toContain("FOR VALUES IN ('edge-b')");
    }
    // A statement that names a cluster reads its partition and no other.
    const plan = (
      await db.pool.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT count(*) FROM search.resources WHERE cluster = 'edge-a' AND _kind = 'pod'`,
      )
    ).rows
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    expect(plan).toMatch(/resources_edge_a_/);
    expect(plan).not.toMatch(/resources_edge_b_|resources_local_cluster_/);
    // Related objects are found inside the partitions of the seeds' cluster.
    const related = await engine.search(
      all,
      {
        filters: [
          { property: 'cluster', values: ['edge-a'] },
          { property: 'kind', values: ['Pod'] },
        ],
      },
      { items: true, count: false, related: { items: true, count: false } },
    );
    expect(related.related?.map((r) => [r.kind, r.items?.map((i) => i.cluster)])).toEqual([
      ['Deployment', ['edge-a']],
    ]);

    // Removing edge-a drops its partitions: its objects, edges and references go, edge-b's stay.
    expect(await indexer.removeCluster('edge-a')).toBe(2);
    for (const table of ['search.resources', 'search.edges', 'tenantkit_search.edge_refs']) {
      expect(await partitionsOf(table)).not.toContain("FOR VALUES IN ('edge-a')");
    }
    const count = async (sql: string) => (await db.pool.query<{ n: number }>(sql)).rows[0]!.n;
    expect(await count(`SELECT count(*)::int AS n FROM search.resources WHERE cluster = 'edge-a'`)).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM search.resources WHERE cluster = 'edge-b'`)).toBe(2);
    expect(await count(`SELECT count(*)::int AS n FROM search.edges WHERE cluster = 'edge-b'`)).toBe(1);
    expect(
      await count(`SELECT count(*)::int AS n FROM tenantkit_search.properties WHERE cluster = 'edge-a'`),
    ).toBe(0);

    // The collector that was running when edge-a was removed cannot write part of it back...
    const late = object('ConfigMap', 'late', { namespace: 'shop' }, [], 'edge-a');
    await expect(
      indexer.write({ cluster: 'edge-a', sequence: { stream, seq: 2 }, upserts: [late] }),
    ).rejects.toThrow(/cluster edge-a was removed from the index at .*restart the collector/);
    expect(await count(`SELECT count(*)::int AS n FROM search.resources WHERE cluster = 'edge-a'`)).toBe(0);
    // ...and one started after the removal indexes it again, in new partitions.
    const restarted = `${Date.now() + 1}.00000000000000bb`;
    await indexer.write({
      cluster: 'edge-a',
      sequence: { stream: restarted, seq: 1 },
      upserts: [ownerA, podA],
    });
    expect(await count(`SELECT count(*)::int AS n FROM search.edges WHERE cluster = 'edge-a'`)).toBe(1);
    // Another replica that removed the cluster meanwhile: this one's partition cache is stale, and the
    // batch still lands (in partitions made again).
    const other = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
    expect(await other.removeCluster('edge-b')).toBe(2);
    await indexer.write({ cluster: 'edge-b', upserts: [ownerB] });
    expect(await count(`SELECT count(*)::int AS n FROM search.resources WHERE cluster = 'edge-b'`)).toBe(1);
  });

  it("analyzes a new cluster's partitions once its first list of a type is in, and again when it comes back", async () => {
    const analyzed = async () =>
      (
        await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM tenantkit_search.partition_states('edge-fresh') p
           JOIN pg_stat_user_tables s ON s.relid = format('%I.%I', p.schema_name, p.part)::regclass
           WHERE s.last_analyze IS NOT NULL`,
        )
      ).rows[0]!.n;
    const listed = async () => {
      const upserts = Array.from({ length: 30 }, (_, i) =>
        object('ConfigMap', `settings-${i}`, { namespace: 'apps', plural: 'configmaps' }, [], 'edge-fresh'),
      );
      await indexer.write({
        cluster: 'edge-fresh',
        upserts,
        resyncs: [{ apigroup: '', kind_plural: 'configmaps', uids: upserts.map((u) => u.uid) }],
      });
    };
    await listed();
    // Every partition of the cluster: resources, edges, edge_refs and counts.
    await eventually(async () => (await analyzed()) === 4, { what: "edge-fresh's partitions analyzed" });
    expect(await indexer.removeCluster('edge-fresh')).toBe(30);
    await listed();
    await eventually(async () => (await analyzed()) === 4, { what: "edge-fresh's new partitions analyzed" });
    expect(await indexer.removeCluster('edge-fresh')).toBe(30);
  });

  it('answers every query while clusters are removed and come back', async () => {
    // Dropping a cluster's partitions and a query over the tables take the same locks: in one order
    // both ways (the parent tables first), or the two deadlock and the query fails.
    const objects = (cluster: string) => {
      const owner = object('Deployment', 'web', { namespace: 'churn', group: 'apps' }, [], cluster);
      return [
        owner,
        object('Pod', 'web-1', { namespace: 'churn' }, [{ type: 'ownedBy', uid: owner.uid }], cluster),
      ];
    };
    const churned = ['churn-1', 'churn-2'];
    for (const c of churned) await indexer.write({ cluster: c, upserts: objects(c) });
    let running = true;
    const failures: unknown[] = [];
    let answered = 0;
    const ask = async () => {
      while (running) {
        await engine
          .search(
            all,
            {
              filters: [
                { property: 'namespace', values: ['churn'] },
                { property: 'kind', values: ['Pod'] },
              ],
            },
            { items: true, count: true, related: { items: true, count: true } },
          )
          .then(
            () => answered++,
            (err: unknown) => failures.push(err),
          );
      }
    };
    const askers = [ask(), ask(), ask()];
    for (let round = 0; round < 10; round++) {
      for (const c of churned) {
        await indexer.removeCluster(c);
        await indexer.write({ cluster: c, upserts: objects(c) });
      }
    }
    running = false;
    await Promise.all(askers);
    expect(failures.map(String)).toEqual([]);
    expect(answered).toBeGreaterThan(10);
    for (const c of churned) await indexer.removeCluster(c);
  });

  it("makes a new cluster's partitions while a long query holds the tables, and blocks no query", async () => {
    // A report over every cluster, still running: it holds the tables (ACCESS SHARE) until it ends.
    const report = await db.pool.connect();
    try {
      await report.query('BEGIN');
      await report.query('SELECT count(*) FROM search.resources');
      await report.query('SELECT count(*) FROM search.edges');
      // A cluster that joins meanwhile is indexed at once...
      const owner = object('Deployment', 'web', { namespace: 'shop', group: 'apps' }, [], 'edge-new');
      const written = indexer.write({ cluster: 'edge-new', upserts: [owner] });
      const late = new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 5_000).unref());
      expect(await Promise.race([written.then(() => 'written' as const), late])).toBe('written');
      // ...and queries that start after its partitions were made are not held up either.
      const started = Date.now();
      await db.pool.query("SELECT count(*) FROM search.resources WHERE _kind = 'pod'");
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      await report.query('COMMIT');
      report.release();
    }
    // The new partitions have the parents' indexes, adopted as theirs (none built twice).
    const indexes = await db.pool.query<{ parent: string; own: number; attached: number; of_parent: number }>(
      `SELECT p.relname AS parent,
         (SELECT count(*)::int FROM pg_index WHERE indrelid = c.oid) AS own,
         (SELECT count(*)::int FROM pg_index x JOIN pg_inherits i ON i.inhrelid = x.indexrelid
          WHERE x.indrelid = c.oid) AS attached,
         (SELECT count(*)::int FROM pg_index WHERE indrelid = p.oid) AS of_parent
       FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid JOIN pg_class p ON p.oid = h.inhparent
       WHERE c.relname LIKE '%edge_new%' AND c.relkind = 'r' ORDER BY 1`,
    );
    expect(indexes.rows.map((r) => r.parent)).toEqual(['counts', 'edge_refs', 'edges', 'resources']);
    for (const r of indexes.rows) {
      expect({ table: r.parent, own: r.own, attached: r.attached }).toEqual({
        table: r.parent,
        own: r.of_parent,
        attached: r.of_parent,
      });
    }
    // Its keyword and label indexes keep their pending lists short (migration 8).
    expect((await pendingListLimits(db.pool, 'edge_new')).map((r) => r.options)).toEqual([
      ['gin_pending_list_limit=128'],
      ['gin_pending_list_limit=128'],
    ]);
    const found = await engine.search(
      all,
      { filters: [{ property: 'cluster', values: ['edge-new'] }] },
      selection,
    );
    expect(found.items?.map((i) => i.name)).toEqual(['web']);
    await indexer.removeCluster('edge-new');
  });

  const statesOf = async (cluster: string) =>
    (
      await db.pool.query<{ table_name: string; state: string }>(
        'SELECT table_name, state FROM tenantkit_search.partition_states($1)',
        [cluster],
      )
    ).rows.map((r) => `${r.table_name}:${r.state}`);
  const fenceOf = async (cluster: string) =>
    (
      await db.pool.query<{ stream: string }>(
        'SELECT stream FROM tenantkit_search.batch_fences WHERE cluster = $1',
        [cluster],
      )
    ).rows[0]?.stream;
  const objectsOf = async (cluster: string) =>
    (
      await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM search.resources WHERE cluster = $1',
        [cluster],
      )
    ).rows[0]!.n;
  const twoObjects = (cluster: string, name = 'web') => {
    const owner = object('Deployment', name, { namespace: 'shop', group: 'apps' }, [], cluster);
    return [
      owner,
      object('Pod', `${name}-1`, { namespace: 'shop' }, [{ type: 'ownedBy', uid: owner.uid }], cluster),
    ];
  };

  it('removes a cluster while a long query holds the tables, and blocks no query', async () => {
    await indexer.write({ cluster: 'edge-gone', upserts: twoObjects('edge-gone') });
    await indexer.write({ cluster: 'edge-stays', upserts: twoObjects('edge-stays') });
    // A report over every cluster, still running: it holds the tables (ACCESS SHARE) until it ends.
    const report = await db.pool.connect();
    let removal: Promise<number> | undefined;
    try {
      await report.query('BEGIN');
      await report.query('SELECT count(*) FROM search.resources');
      await report.query('SELECT count(*) FROM search.edges');
      removal = indexer.removeCluster('edge-gone');
      // The cluster's objects are gone for every query that starts from now on, while the report runs,
      // and none of those queries waits.
      const gone = Date.now();
      let slowest = 0;
      for (;;) {
        const started = Date.now();
        const n = await objectsOf('edge-gone');
        slowest = Math.max(slowest, Date.now() - started);
        if (n === 0) break;
        expect(Date.now() - gone, 'the removed cluster still found after 5 s').toBeLessThan(5_000);
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(slowest).toBeLessThan(1_000);
      // Other clusters' batches land meanwhile, and a new cluster joins.
      const late = new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 5_000).unref());
      const batches = Promise.all([
        indexer.write({ cluster: 'edge-stays', upserts: twoObjects('edge-stays', 'api') }),
        indexer.write({ cluster: 'edge-joins', upserts: twoObjects('edge-joins') }),
      ]);
      expect(await Promise.race([batches.then(() => 'written' as const), late])).toBe('written');
      const found = await engine.search(
        all,
        { filters: [{ property: 'namespace', values: ['shop'] }] },
        selection,
      );
      expect(found.items?.filter((i) => i.cluster === 'edge-gone')).toEqual([]);
      expect(found.items?.filter((i) => i.cluster === 'edge-stays').length).toBe(4);
    } finally {
      await report.query('COMMIT');
      report.release();
    }
    // The removal ends once the report has: every table dropped, nothing of the cluster left.
    expect(await removal).toBe(2);
    expect(await statesOf('edge-gone')).toEqual([
      'edges:missing',
      'resources:missing',
      'edge_refs:missing',
      'counts:missing',
    ]);
    expect(await fenceOf('edge-gone')).toMatch(/^\d+\.removed$/);
    const leftover = await db.pool.query(`SELECT relname FROM pg_class WHERE relname LIKE '%edge_gone%'`);
    expect(leftover.rows).toEqual([]);
    await indexer.removeCluster('edge-stays');
    await indexer.removeCluster('edge-joins');
  });

  it('finishes a removal cut short, from whichever step it stopped at', async () => {
    // Cut short after its tombstone: the partitions are still attached; the next indexer to start
    // finishes it.
    await indexer.write({ cluster: 'edge-cut', upserts: twoObjects('edge-cut') });
    await db.pool.query('SELECT tenantkit_search.mark_removed($1, $2)', ['edge-cut', Date.now()]);
    expect(await fenceOf('edge-cut')).toMatch(/\.removing$/);
    const restarted = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
    await restarted.resumeRemovals();
    expect(await objectsOf('edge-cut')).toBe(0);
    expect(new Set(await statesOf('edge-cut'))).toEqual(
      new Set(['edges:missing', 'resources:missing', 'edge_refs:missing', 'counts:missing']),
    );
    expect(await fenceOf('edge-cut')).toMatch(/\.removed$/);

    // Cut short inside the detaches: one partition left detaching (its concurrent detach killed while it
    // waited for a query), one detached but not dropped.
    await indexer.write({ cluster: 'edge-cut2', upserts: twoObjects('edge-cut2') });
    const name = async (table: string) =>
      (
        await db.pool.query<{ n: string }>("SELECT tenantkit_search.partition_name($1, 'edge-cut2') AS n", [
          table,
        ])
      ).rows[0]!.n;
    await db.pool.query(`ALTER TABLE search.edges DETACH PARTITION search.${await name('edges')}`);
    const report = await db.pool.connect();
    const detacher = await db.pool.connect();
    try {
      await report.query('BEGIN');
      await report.query('SELECT count(*) FROM search.resources');
      const pid = (await detacher.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const detach = detacher
        .query(`ALTER TABLE search.resources DETACH PARTITION search.${await name('resources')} CONCURRENTLY`)
        .catch((err: Error) => err);
      await eventually(async () => (await statesOf('edge-cut2')).includes('resources:detaching'));
      await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
      expect(String(await detach)).toMatch(/terminat/);
    } finally {
      await report.query('COMMIT');
      report.release();
      detacher.release(true);
    }
    expect(await statesOf('edge-cut2')).toEqual([
      'edges:detached',
      'resources:detaching',
      'edge_refs:attached',
      'counts:attached',
    ]);
    // A collector started since then indexes the cluster again: what was left goes first, and only the
    // new batch's objects are found.
    const fresh = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
    await fresh.write({
      cluster: 'edge-cut2',
      sequence: { stream: `${Date.now()}.00000000000000cc`, seq: 1 },
      upserts: twoObjects('edge-cut2', 'api'),
    });
    const found = await engine.search(
      all,
      { filters: [{ property: 'cluster', values: ['edge-cut2'] }] },
      selection,
    );
    expect(found.items?.map((i) => i.name).sort()).toEqual(['api', 'api-1']);
    expect(await statesOf('edge-cut2')).toEqual([
      'edges:attached',
      'resources:attached',
      'edge_refs:attached',
      'counts:attached',
    ]);
    expect(await fresh.removeCluster('edge-cut2')).toBe(2);
  });

  describe('queries', () => {
    beforeAll(async () => {
      await indexer.write({
        cluster: HubCluster,
        upserts: [
          object('Deployment', 'api-server', { namespace: 'prod', group: 'apps', desired: 3, ready: 3 }),
          object('Deployment', 'worker', { namespace: 'prod', group: 'apps', desired: 5, ready: 2 }),
          object('Pod', 'api-server-1', {
            namespace: 'prod',
            status: 'Running',
            restarts: 0,
            container: ['api', 'sidecar'],
            label: { app: 'api', tier: 'backend' },
            created: new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z'),
          }),
          object('Pod', 'worker-1', {
            namespace: 'prod',
            status: 'CrashLoopBackOff',
            restarts: 12,
            label: { app: 'worker' },
          }),
          object('Pod', 'web-1', { namespace: 'dev', status: 'Running', restarts: 1, label: { app: 'web' } }),
          object('Secret', 'db-password', { namespace: 'prod', type: 'Opaque' }),
          object('Namespace', 'prod', { plural: 'namespaces' }),
        ],
      });
    });

    it('filters as ACM does', async () => {
      expect(
        await uidsOf(all, [
          { property: 'kind', values: ['pod'] },
          { property: 'namespace', values: ['prod'] },
        ]),
      ).toEqual(['api-server-1', 'worker-1']);
      expect(
        await uidsOf(all, [
          { property: 'kind', values: ['Deployment'] },
          { property: 'name', values: ['api*'] },
        ]),
      ).toEqual(['api-server']);
      expect(await uidsOf(all, [{ property: 'restarts', values: ['>5'] }])).toEqual(['worker-1']);
      expect(
        await uidsOf(all, [
          { property: 'restarts', values: ['<=1'] },
          { property: 'kind', values: ['Pod'] },
        ]),
      ).toEqual(['api-server-1', 'web-1']);
      expect(
        await uidsOf(all, [
          { property: 'status', values: ['Running', 'Pending'] },
          { property: 'namespace', values: ['prod', 'dev'] },
        ]),
      ).toEqual(['api-server-1', 'web-1']);
      expect(
        await uidsOf(all, [
          { property: 'namespace', values: ['!=prod', '!=shop'] },
          { property: 'kind', values: ['pod'] },
        ]),
      ).toEqual(['web-1']);
      expect(await uidsOf(all, [{ property: 'label', values: ['app=api'] }])).toEqual(['api-server-1']);
      expect(await uidsOf(all, [{ property: 'label', values: ['app=w*'] }])).toEqual(['web-1', 'worker-1']);
      expect(await uidsOf(all, [{ property: 'container', values: ['sidecar'] }])).toEqual(['api-server-1']);
      expect(await uidsOf(all, [{ property: 'created', values: ['hour'] }])).toEqual(['api-server-1']);
      expect(await uidsOf(all, [{ property: 'kind', values: ['pod'] }], ['CRASHLOOP'])).toEqual(['worker-1']);
      expect(await uidsOf(all, [], ['api', 'backend'])).toEqual(['api-server-1']);
      // Wildcards are case-sensitive; `_` and `%` are literal characters, not patterns.
      expect(await uidsOf(all, [{ property: 'name', values: ['API*'] }])).toEqual([]);
      expect(await uidsOf(all, [{ property: 'name', values: ['api_server'] }])).toEqual([]);
      expect(await uidsOf(all, [{ property: 'name', values: ['%'] }])).toEqual([]);
    });

    it('returns items in ACM shape, ordered, paged and counted', async () => {
      const result = await engine.search(
        all,
        {
          filters: [
            { property: 'kind', values: ['pod'] },
            { property: 'namespace', values: ['prod', 'dev'] },
          ],
          orderBy: 'restarts desc',
          limit: 2,
          offset: 0,
        },
        selection,
      );
      expect(result.count).toBe(3);
      expect(result.items?.map((i) => i.name)).toEqual(['worker-1', 'web-1']);
      const item = (
        await engine.search(all, { filters: [{ property: 'name', values: ['api-server-1'] }] }, selection)
      ).items?.[0];
      expect(item).toMatchObject({
        kind: 'Pod',
        name: 'api-server-1',
        restarts: '0',
        container: 'api; sidecar',
        label: 'app=api; tier=backend',
        cluster: HubCluster,
        _hubClusterResource: 'true',
      });
      expect(String(item?._uid)).toMatch(/^local-cluster\//);
      const page2 = await engine.search(
        all,
        {
          filters: [
            { property: 'kind', values: ['pod'] },
            { property: 'namespace', values: ['prod', 'dev'] },
          ],
          orderBy: 'name asc',
          limit: 2,
          offset: 2,
        },
        selection,
      );
      expect(page2.items?.map((i) => i.name)).toEqual(['worker-1']);
    });

    it('applies the access set in SQL: namespaces, types, names, managed clusters', async () => {
      expect(await uidsOf(none, [])).toEqual([]);
      const podsInDev: AccessSet = {
        ...none,
        namespaced: [{ namespaces: ['dev'], grants: [{ apiGroups: [''], resources: ['pods'] }] }],
      };
      expect(await uidsOf(podsInDev, [])).toEqual(['web-1']);
      const named: AccessSet = {
        ...none,
        namespaced: [
          {
            namespaces: ['prod'],
            grants: [{ apiGroups: ['apps'], resources: ['deployments'], names: ['worker'] }],
          },
        ],
      };
      expect(await uidsOf(named, [])).toEqual(['worker']);
      const anyGroupDeployments: AccessSet = {
        ...none,
        clusterWide: [{ apiGroups: ['*'], resources: ['deployments'] }],
      };
      expect(await uidsOf(anyGroupDeployments, [])).toEqual(['api-server', 'worker']);
      const namespacesOnly: AccessSet = {
        ...none,
        clusterWide: [{ apiGroups: [''], resources: ['namespaces'] }],
      };
      expect(await uidsOf(namespacesOnly, [{ property: 'kind', values: ['Namespace'] }])).toEqual(['prod']);
      // Namespaced grants never reach cluster-scoped objects.
      const nsWildcard: AccessSet = {
        ...none,
        namespaced: [{ namespaces: ['prod'], grants: [{ apiGroups: ['*'], resources: ['*'] }] }],
      };
      expect(await uidsOf(nsWildcard, [{ property: 'kind', values: ['Namespace'] }])).toEqual([]);
      expect(await uidsOf(nsWildcard, [{ property: 'kind', values: ['Pod'] }])).toEqual([
        'api-server-1',
        'worker-1',
      ]);
      // Counts and complete see the same set.
      expect(
        (await engine.search(podsInDev, { filters: [{ property: 'kind', values: ['pod'] }] }, selection))
          .count,
      ).toBe(1);
      expect(await engine.complete(podsInDev, 'name', undefined)).toEqual(['web-1']);
      expect(await engine.complete(podsInDev, 'namespace', undefined)).toEqual(['dev']);
    });

    it('shows managed clusters to their viewers, without Secrets', async () => {
      await indexer.write({
        cluster: 'edge-9',
        upserts: [
          object('Pod', 'edge-pod', { namespace: 'apps' }, [], 'edge-9'),
          object('Secret', 'edge-secret', { namespace: 'apps' }, [], 'edge-9'),
        ],
      });
      const viewer: AccessSet = { ...none, managedClusters: ['edge-9'] };
      expect(await uidsOf(viewer, [])).toEqual(['edge-pod']);
    });

    it("reads a user's hub grants and whole managed clusters apart: items, pages, counts and values as one predicate gives", async () => {
      await indexer.write({
        cluster: 'edge-10',
        upserts: [
          object('Pod', 'edge-pod', { namespace: 'apps', restarts: 7 }, [], 'edge-10'),
          object('Pod', 'api-edge', { namespace: 'apps', restarts: 2 }, [], 'edge-10'),
          object('Secret', 'edge-secret', { namespace: 'apps' }, [], 'edge-10'),
        ],
      });
      // Pods in the hub's prod, and the whole of edge-10; a ManagedCluster named like the hub gives nothing
      // more (the hub's objects are RBAC's), and nothing twice.
      const both: AccessSet = {
        ...none,
        namespaced: [{ namespaces: ['prod'], grants: [{ apiGroups: [''], resources: ['pods'] }] }],
        managedClusters: ['edge-10', HubCluster],
      };
      const pods = [{ property: 'kind', values: ['pod'] }];
      expect(await uidsOf(both, [])).toEqual(['api-edge', 'api-server-1', 'edge-pod', 'worker-1']);
      const page = async (offset: number) =>
        (
          await engine.search(both, { filters: pods, orderBy: 'restarts desc', limit: 2, offset }, selection)
        ).items?.map((i) => i.name);
      expect(await page(0)).toEqual(['worker-1', 'edge-pod']);
      expect(await page(2)).toEqual(['api-edge', 'api-server-1']);
      const count = async (filters: { property: string; values: string[] }[]) =>
        (await engine.search(both, { filters }, { items: false, count: true, related: false })).count;
      // From tenantkit_search.counts (kind only), and from the objects (a name).
      expect(await count(pods)).toBe(4);
      expect(await count([{ property: 'kind', values: ['secret'] }])).toBe(0);
      expect(await count([{ property: 'name', values: ['api*'] }])).toBe(2);
      // searchComplete with a filter (a DISTINCT over both halves) and without (the walks).
      expect(await engine.complete(both, 'name', { filters: pods })).toEqual([
        'api-edge',
        'api-server-1',
        'edge-pod',
        'worker-1',
      ]);
      expect(await engine.complete(both, 'namespace', undefined)).toEqual(['apps', 'prod']);
      expect(await engine.complete(both, 'cluster', { filters: pods })).toEqual(
        ['edge-10', HubCluster].sort(),
      );
    });

    it('finds related objects the user may see, and only those', async () => {
      const dep = object('Deployment', 'shop-api', { namespace: 'shop2', group: 'apps' });
      const rs = object('ReplicaSet', 'shop-api-1', { namespace: 'shop2', group: 'apps' }, [
        { type: 'ownedBy', uid: dep.uid },
      ]);
      const pod = object('Pod', 'shop-api-1-x', { namespace: 'shop2' }, [
        { type: 'ownedBy', uid: rs.uid },
        { type: 'attachedTo', kind: 'Secret', namespace: 'shop2', name: 'shop-token' },
      ]);
      const secret = object('Secret', 'shop-token', { namespace: 'shop2' });
      await indexer.write({ cluster: HubCluster, upserts: [dep, rs, pod, secret] });
      const related = await engine.search(
        all,
        {
          filters: [
            { property: 'kind', values: ['replicaset'] },
            { property: 'namespace', values: ['shop2'] },
          ],
        },
        { items: false, count: false, related: { items: true, count: true } },
      );
      expect(related.related?.map((r) => [r.kind, r.count])).toEqual([
        ['Deployment', 1],
        ['Pod', 1],
      ]);
      const noSecrets: AccessSet = {
        ...none,
        namespaced: [
          {
            namespaces: ['shop2'],
            grants: [{ apiGroups: ['', 'apps'], resources: ['pods', 'replicasets', 'deployments'] }],
          },
        ],
      };
      const fromPod = await engine.search(
        noSecrets,
        {
          filters: [
            { property: 'kind', values: ['pod'] },
            { property: 'namespace', values: ['shop2'] },
          ],
        },
        { items: false, count: false, related: { items: true, count: true } },
      );
      expect(fromPod.related?.map((r) => r.kind)).toEqual(['ReplicaSet']);
      const withSecrets = await engine.search(
        all,
        {
          filters: [
            { property: 'kind', values: ['pod'] },
            { property: 'namespace', values: ['shop2'] },
          ],
          relatedKinds: ['secret'],
        },
        { items: false, count: false, related: { items: true, count: true } },
      );
      expect(withSecrets.related?.map((r) => [r.kind, r.items?.[0]?.name])).toEqual([
        ['Secret', 'shop-token'],
      ]);
    });

    it('completes values and lists properties within the access set', async () => {
      expect(
        await engine.complete(all, 'status', { filters: [{ property: 'kind', values: ['pod'] }] }),
      ).toEqual(['CrashLoopBackOff', 'Running']);
      expect(
        await engine.complete(all, 'label', { filters: [{ property: 'namespace', values: ['prod'] }] }),
      ).toEqual(['app=api', 'app=worker', 'tier=backend']);
      expect(await engine.complete(all, 'container', undefined)).toEqual(['api', 'sidecar']);
      const names = await engine.complete(all, 'name', undefined, 3);
      expect(names).toHaveLength(3);
      expect([...names].sort()).toEqual(names);
      const podsInDev: AccessSet = {
        ...none,
        namespaced: [{ namespaces: ['dev'], grants: [{ apiGroups: [''], resources: ['pods'] }] }],
      };
      const props = await engine.schema(podsInDev, undefined);
      expect(props).toContain('restarts');
      expect(props).not.toContain('desired'); // a Deployment property: this user sees no Deployment
      expect(props).not.toContain('_hubClusterResource');
      expect(await engine.schema(none, undefined)).toEqual([]);
    });

    it('treats hostile input as data and refuses what it cannot use', async () => {
      const evil = `name'; DROP TABLE search.resources; --`;
      expect(await uidsOf(all, [{ property: evil, values: [evil] }])).toEqual([]);
      expect(await uidsOf(all, [{ property: 'name', values: [evil] }], [evil])).toEqual([]);
      await expect(
        engine.search(all, { orderBy: 'name; DROP TABLE search.resources' }, selection),
      ).rejects.toThrow(QueryError);
      await expect(engine.search(all, { orderBy: 'name sideways' }, selection)).rejects.toThrow(/asc.*desc/);
      const sorted = await engine.search(all, { orderBy: `"data"->>'x' desc` }, selection);
      expect(sorted.items?.length).toBeGreaterThan(0);
      await expect(engine.search(all, { limit: 10_001 }, selection)).rejects.toThrow(/at most 10000/);
      await expect(engine.search(all, { limit: -5 }, selection)).rejects.toThrow(QueryError);
      await expect(
        engine.search(all, { filters: [{ property: 'restarts', values: ['>abc'] }] }, selection),
      ).resolves.toBeTruthy();
      await expect(
        engine.search(
          all,
          { filters: Array.from({ length: 31 }, () => ({ property: 'kind', values: ['Pod'] })) },
          selection,
        ),
      ).rejects.toThrow(/at most 30 filters/);
      await expect(
        engine.search(all, { filters: [{ property: 'kind', values: [] }] }, selection),
      ).rejects.toThrow(/no values/);
      const count = await db.pool.query('SELECT count(*)::int AS n FROM search.resources');
      expect(count.rows[0].n).toBeGreaterThan(0);
    });

    it('watches changes through the access set', async () => {
      const stopWatch = new AbortController();
      const podsInDev: AccessSet = {
        ...none,
        namespaced: [{ namespaces: ['dev'], grants: [{ apiGroups: [''], resources: ['pods'] }] }],
      };
      const events: SearchEvent[] = [];
      const iterator = engine
        .watch(() => podsInDev, { filters: [{ property: 'kind', values: ['pod'] }] }, stopWatch.signal)
        [Symbol.asyncIterator]();
      const first = iterator.next();
      await new Promise((r) => setTimeout(r, 300)); // the subscription registers as a watcher
      const hidden = object('Pod', 'prod-new', { namespace: 'prod' });
      const visible = object('Pod', 'dev-new', { namespace: 'dev' });
      await indexer.write({ cluster: HubCluster, upserts: [hidden, visible] });
      await indexer.write({ cluster: HubCluster, deletes: [visible.uid] });
      events.push((await first).value as SearchEvent);
      events.push((await iterator.next()).value as SearchEvent);
      stopWatch.abort();
      expect(events.map((e) => [e.operation, e.newData?.name ?? e.oldData?.name])).toEqual([
        ['INSERT', 'dev-new'],
        ['DELETE', 'dev-new'],
      ]);
    });
  });
});

describe('search index upgrade to partitions by cluster', () => {
  it('moves the rows of an index made before partitions into one partition per cluster', async () => {
    const db = await startTestDatabase(2);
    try {
      // The layout of migrations 1 and 2, written as their indexer wrote it.
      await db.pool.query(`
        INSERT INTO search.resources (uid, cluster, data) VALUES
          ('local-cluster/d1', 'local-cluster', '{"kind":"Deployment","kind_plural":"deployments","apigroup":"apps","name":"web","namespace":"shop"}'),
          ('local-cluster/p1', 'local-cluster', '{"kind":"Pod","kind_plural":"pods","name":"web-1","namespace":"shop"}'),
          ('edge-1/p2', 'edge-1', '{"kind":"Pod","kind_plural":"pods","name":"api-1","namespace":"shop"}');
        INSERT INTO search.edges VALUES ('local-cluster/p1', 'Pod', 'local-cluster/d1', 'Deployment', 'ownedBy', 'local-cluster');
        INSERT INTO tenantkit_search.sources VALUES ('local-cluster/p1', 'h1'), ('local-cluster/d1', 'h0'), ('edge-1/p2', 'h0');
        INSERT INTO tenantkit_search.edge_refs (sourceid, cluster, edgetype, destuid)
          VALUES ('local-cluster/p1', 'local-cluster', 'ownedBy', 'local-cluster/d1');
        INSERT INTO tenantkit_search.batch_fences VALUES ('edge-1', '1.00000000000000aa', 1, 7);`);
      expect(await migrate(db.pool, 3)).toEqual([3]);
      const rows = async (sql: string) => (await db.pool.query(sql)).rows;
      expect(await rows('SELECT uid, cluster, _kind, _ns FROM search.resources ORDER BY uid')).toEqual([
        { uid: 'edge-1/p2', cluster: 'edge-1', _kind: 'pod', _ns: 'shop' },
        { uid: 'local-cluster/d1', cluster: 'local-cluster', _kind: 'deployment', _ns: 'shop' },
        { uid: 'local-cluster/p1', cluster: 'local-cluster', _kind: 'pod', _ns: 'shop' },
      ]);
      expect(await rows('SELECT sourceid, destid, cluster FROM search.edges')).toEqual([
        { sourceid: 'local-cluster/p1', destid: 'local-cluster/d1', cluster: 'local-cluster' },
      ]);
      expect(await rows('SELECT uid, cluster, refs_hash FROM tenantkit_search.sources ORDER BY uid')).toEqual(
        [
          { uid: 'edge-1/p2', cluster: 'edge-1', refs_hash: 'h0' },
          { uid: 'local-cluster/d1', cluster: 'local-cluster', refs_hash: 'h0' },
          { uid: 'local-cluster/p1', cluster: 'local-cluster', refs_hash: 'h1' },
        ],
      );
      expect(
        await rows(
          `SELECT tableoid::regclass::text AS partition FROM search.resources WHERE uid = 'edge-1/p2'`,
        ),
      ).toEqual([{ partition: expect.stringMatching(/^search\.resources_edge_1_[0-9a-f]{8}$/) }]);
      // The indexer goes on from there (with the later migrations): the fence row survived, and new
      // batches land in the partitions.
      expect(await migrate(db.pool)).toEqual([4, 5, 6, 7, 8]);
      // The partitions made before migration 8 have short pending lists too.
      for (const part of ['edge_1', 'local_cluster']) {
        expect((await pendingListLimits(db.pool, part)).map((r) => r.options)).toEqual([
          ['gin_pending_list_limit=128'],
          ['gin_pending_list_limit=128'],
        ]);
      }
      const indexer = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
      await indexer.write({
        cluster: 'edge-1',
        sequence: { stream: '1.00000000000000aa', seq: 7 },
        deletes: ['edge-1/p2'],
      });
      expect(await rows(`SELECT uid FROM search.resources WHERE cluster = 'edge-1'`)).toHaveLength(1);
      await indexer.write({
        cluster: 'edge-1',
        sequence: { stream: '1.00000000000000aa', seq: 8 },
        deletes: ['edge-1/p2'],
      });
      expect(await rows(`SELECT uid FROM search.resources WHERE cluster = 'edge-1'`)).toHaveLength(0);
    } finally {
      await db.close();
    }
  });
});

describe('search index upgrade to references digests in the rows', () => {
  it("carries each object's references digest from tenantkit_search.sources into its row, so an unchanged object stays unchanged", async () => {
    const db = await startTestDatabase(3);
    try {
      const edges: EdgeRef[] = [{ type: 'ownedBy', uid: 'edge-1/d1' }];
      // The digest migration 3's indexer wrote: SHA-256 of the references' JSON, base64url.
      const oldDigest = createHash('sha256').update(JSON.stringify(edges)).digest('base64url');
      const pod: IndexedResource = {
        uid: 'edge-1/p1',
        data: { kind: 'Pod', kind_plural: 'pods', apiversion: 'v1', name: 'web-1', namespace: 'shop' },
        edges,
      };
      const deployment = webDeployment('edge-1', 'd1');
      const emptyDigest = createHash('sha256').update('[]').digest('base64url');
      await db.pool.query("SELECT tenantkit_search.ensure_cluster('edge-1')");
      await db.pool.query(
        `INSERT INTO search.resources (uid, cluster, data)
         VALUES ($1, 'edge-1', $2), ($3, 'edge-1', $4), ('edge-1/x', 'edge-1', '{"kind":"Pod"}')`,
        [pod.uid, pod.data, deployment.uid, deployment.data],
      );
      await db.pool.query(
        `INSERT INTO tenantkit_search.sources VALUES ($1, 'edge-1', $2), ($3, 'edge-1', $4), ('edge-1/x', 'edge-1', 'h0')`,
        [pod.uid, oldDigest, deployment.uid, emptyDigest],
      );
      await db.pool.query(
        `INSERT INTO tenantkit_search.edge_refs (sourceid, cluster, edgetype, destuid) VALUES ($1, 'edge-1', 'ownedBy', $2)`,
        [pod.uid, deployment.uid],
      );
      await db.pool.query(
        `INSERT INTO search.edges VALUES ($1, 'Pod', $2, 'Deployment', 'ownedBy', 'edge-1')`,
        [pod.uid, deployment.uid],
      );
      expect(await migrate(db.pool)).toEqual([4, 5, 6, 7, 8]);
      const rows = async (sql: string) => (await db.pool.query(sql)).rows;
      expect(await rows(`SELECT to_regclass('tenantkit_search.sources') AS sources`)).toEqual([
        { sources: null },
      ]);
      const sixteen = (digest: string) => Buffer.from(digest, 'base64url').subarray(0, 16).toString('hex');
      expect(
        await rows(`SELECT uid, encode(_refs, 'hex') AS refs FROM search.resources ORDER BY uid`),
      ).toEqual([
        { uid: 'edge-1/d1', refs: sixteen(emptyDigest) },
        { uid: 'edge-1/p1', refs: sixteen(oldDigest) },
        // A digest of another shape is not carried over: that object's references are stored again.
        { uid: 'edge-1/x', refs: null },
      ]);
      // New clusters get partitions of the three tables left.
      await db.pool.query("SELECT tenantkit_search.ensure_cluster('edge-2')");
      expect(
        await rows(`SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE '%edge_2%' AND relkind = 'r'`),
      ).toEqual([{ n: 4 }]);
      // The objects there were are counted (migration 5).
      expect(
        await rows(`SELECT cluster, _kind, _ns, n::int FROM tenantkit_search.counts ORDER BY _kind, _ns`),
      ).toEqual([
        { cluster: 'edge-1', _kind: 'deployment', _ns: 'shop', n: 1 },
        { cluster: 'edge-1', _kind: 'pod', _ns: 'shop', n: 1 },
        { cluster: 'edge-1', _kind: 'pod', _ns: null, n: 1 },
      ]);

      // The same objects again: nothing is rewritten (the references row keeps its place).
      const indexer = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
      const refsAt = async () =>
        rows(`SELECT ctid::text, destuid FROM tenantkit_search.edge_refs WHERE sourceid = 'edge-1/p1'`);
      const before = await refsAt();
      await indexer.write({ cluster: 'edge-1', upserts: [deployment, pod] });
      expect(await refsAt()).toEqual(before);
      expect(await rows('SELECT sourceid, destid FROM search.edges')).toEqual([
        { sourceid: 'edge-1/p1', destid: 'edge-1/d1' },
      ]);
      // New references replace the old, and the edge follows them.
      await indexer.write({ cluster: 'edge-1', upserts: [{ ...pod, edges: [] }] });
      expect(await refsAt()).toEqual([]);
      expect(await rows('SELECT sourceid, destid FROM search.edges')).toEqual([]);
      await indexer.write({ cluster: 'edge-1', upserts: [pod] });
      expect(await rows('SELECT sourceid, destid FROM search.edges')).toEqual([
        { sourceid: 'edge-1/p1', destid: 'edge-1/d1' },
      ]);
    } finally {
      await db.close();
    }
  });
});

/** The storage parameters of the GIN indexes of the resources partitions whose name holds `part`. */
async function pendingListLimits(pool: pg.Pool, part: string) {
  return (
    await pool.query<{ index: string; options: string[] | null }>(
      `SELECT c.relname AS index, c.reloptions AS options FROM pg_class c JOIN pg_am a ON a.oid = c.relam
       JOIN pg_index x ON x.indexrelid = c.oid JOIN pg_class t ON t.oid = x.indrelid
       WHERE a.amname = 'gin' AND t.relname LIKE 'resources_' || $1 || '%' ORDER BY 1`,
      [part],
    )
  ).rows;
}

/** Runs `fn` on a new database with an Indexer and a PostgresSearch on it, then closes the database. */
async function withIndex(
  fn: (index: {
    db: Awaited<ReturnType<typeof startTestDatabase>>;
    indexer: Indexer;
    engine: PostgresSearch;
  }) => Promise<void>,
): Promise<void> {
  const db = await startTestDatabase();
  try {
    const indexer = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
    const engine = new PostgresSearch({ pool: db.pool, hubCluster: HubCluster, logger: silentLogger });
    await fn({ db, indexer, engine });
  } finally {
    await db.close();
  }
}

describe('searchComplete over many rows of few values', () => {
  it('lists the first values in order, walking past runs of rows with the same value', () =>
    withIndex(async ({ indexer, engine }) => {
      // 150 objects in namespace a, one in each of b, c and d, in two clusters.
      const inNamespace = (ns: string, i: number, cluster: string) =>
        object('ConfigMap', `${ns}-${i}`, { namespace: ns }, [], cluster);
      await indexer.write({
        cluster: HubCluster,
        upserts: Array.from({ length: 150 }, (_, i) => inNamespace('a', i, HubCluster)),
      });
      await indexer.write({
        cluster: 'edge-1',
        upserts: ['b', 'c', 'd'].map((ns) => inNamespace(ns, 0, 'edge-1')),
      });
      // The walk reads 64 rows a step (one cluster in the access set): the first two steps see only a,
      // the next starts after it.
      expect(await engine.complete(allAccess, 'namespace', undefined, 2)).toEqual(['a', 'b']);
      expect(await engine.complete(allAccess, 'namespace', undefined, 3)).toEqual(['a', 'b', 'c']);
      expect(await engine.complete(allAccess, 'namespace', undefined)).toEqual(['a', 'b', 'c', 'd']);
      expect(await engine.complete(allAccess, 'cluster', undefined, 1)).toEqual(['edge-1']);
      expect(await engine.complete(allAccess, 'cluster', undefined)).toEqual(['edge-1', HubCluster]);
      const names = await engine.complete(allAccess, 'name', undefined);
      expect(names).toHaveLength(153);
      expect(names).toEqual([...names].sort());
      // A user who sees only edge-1's objects gets only its namespaces, through the walk as well.
      const edgeOnly: AccessSet = { ...none, managedClusters: ['edge-1'] };
      expect(await engine.complete(edgeOnly, 'namespace', undefined, 2)).toEqual(['b', 'c']);
    }));

  it("merges, in order, a user's walk of whole managed clusters with the walk of what they may see in the hub", () =>
    withIndex(async ({ indexer, engine }) => {
      // Hub: config maps in a and z, a Secret in a. edge-1: config maps in b, c, d and a Secret in b.
      // edge-2: a config map the user may not see.
      const configMap = (ns: string, i: number, cluster: string) =>
        object('ConfigMap', `${ns}-${i}`, { namespace: ns }, [], cluster);
      const secret = (ns: string, cluster: string) =>
        object('Secret', `${ns}-secret`, { namespace: ns, plural: 'secrets' }, [], cluster);
      await indexer.write({
        cluster: HubCluster,
        upserts: [
          ...Array.from({ length: 20 }, (_, i) => configMap('a', i, HubCluster)),
          configMap('z', 0, HubCluster),
          secret('a', HubCluster),
        ],
      });
      await indexer.write({
        cluster: 'edge-1',
        upserts: [...['b', 'c', 'd'].map((ns) => configMap(ns, 0, 'edge-1')), secret('b', 'edge-1')],
      });
      await indexer.write({ cluster: 'edge-2', upserts: [configMap('e', 0, 'edge-2')] });
      // Config maps in hub namespace a, and the whole of edge-1 but its Secrets (ACM's rule).
      const user: AccessSet = {
        ...none,
        managedClusters: ['edge-1'],
        namespaced: [{ namespaces: ['a'], grants: [{ apiGroups: [''], resources: ['configmaps'] }] }],
      };
      const hubNames = Array.from({ length: 20 }, (_, i) => `a-${i}`);
      expect(await engine.complete(user, 'name', undefined)).toEqual(
        [...hubNames, 'b-0', 'c-0', 'd-0'].sort(),
      );
      expect(await engine.complete(user, 'name', undefined, 3)).toEqual([...hubNames].sort().slice(0, 3));
      expect(await engine.complete(user, 'namespace', undefined)).toEqual(['a', 'b', 'c', 'd']);
      expect(await engine.complete(user, 'namespace', undefined, 2)).toEqual(['a', 'b']);
      expect(await engine.complete(user, 'cluster', undefined)).toEqual(['edge-1', HubCluster]);
      // The same values as the plain DISTINCT that a filtered completion takes (the filter keeps every row).
      const viaDistinct = await engine.complete(user, 'name', {
        filters: [{ property: 'namespace', values: ['a', 'b', 'c', 'd', 'z'] }],
      });
      expect(await engine.complete(user, 'name', undefined)).toEqual(viaDistinct);
      // With z in the hub too: once the managed walk has `limit` values, the hub's walk stops past the
      // largest of them, and the merge is the same as without that bound.
      const wider: AccessSet = {
        ...user,
        namespaced: [{ namespaces: ['a', 'z'], grants: [{ apiGroups: [''], resources: ['configmaps'] }] }],
      };
      const every = [...hubNames, 'b-0', 'c-0', 'd-0', 'z-0'].sort();
      expect(await engine.complete(wider, 'name', undefined)).toEqual(every);
      for (const limit of [1, 2, 3, 4, 22, 24])
        expect(await engine.complete(wider, 'name', undefined, limit), `limit ${limit}`).toEqual(
          every.slice(0, limit),
        );
      expect(await engine.complete(wider, 'namespace', undefined, 3)).toEqual(['a', 'b', 'c']);
      expect(await engine.complete(wider, 'namespace', undefined)).toEqual(['a', 'b', 'c', 'd', 'z']);
    }));
});

describe('counts kept per cluster, type, kind and namespace', () => {
  it('stay exactly the objects indexed through upserts, moves, deletes, resyncs and removals, and answer counts', () =>
    withIndex(async ({ db, indexer, engine }) => {
      const groups = async (table: 'counted' | 'indexed') =>
        (
          await db.pool.query(
            table === 'counted'
              ? 'SELECT cluster, _gr, _kind, _ns, n::int FROM tenantkit_search.counts ORDER BY 1, 2, 3, 4'
              : 'SELECT cluster, _gr, _kind, _ns, count(*)::int AS n FROM search.resources GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4',
          )
        ).rows;
      // A deterministic mix: pods and config maps in three namespaces of two clusters, some moved between
      // namespaces (an update that changes the group), some deleted, one type resynced away.
      let seed = 7;
      const random = (n: number) => {
        seed = (seed * 48271) % 2147483647;
        return seed % n;
      };
      const uidsOf = new Map<string, Set<string>>([
        [HubCluster, new Set()],
        ['edge-1', new Set()],
      ]);
      for (let round = 0; round < 12; round++) {
        for (const cluster of [HubCluster, 'edge-1']) {
          const uids = uidsOf.get(cluster)!;
          const upserts = Array.from({ length: 20 }, () => {
            const i = random(40);
            const kind = i % 2 ? 'Pod' : 'ConfigMap';
            return {
              uid: `${cluster}/obj-${i}`,
              data: {
                kind,
                kind_plural: `${kind.toLowerCase()}s`,
                apiversion: 'v1',
                name: `obj-${i}`,
                namespace: `ns-${random(3)}`,
                ...(cluster === HubCluster ? { _hubClusterResource: true } : {}),
              },
              edges: [],
            };
          });
          for (const u of upserts) uids.add(u.uid);
          const deletes = [...uids].filter(() => random(6) === 0);
          for (const d of deletes) uids.delete(d);
          await indexer.write({ cluster, upserts, deletes });
        }
        expect(await groups('counted')).toEqual(await groups('indexed'));
      }
      // Every config map of edge-1 goes in a resync that lists none.
      await indexer.write({
        cluster: 'edge-1',
        resyncs: [{ apigroup: '', kind_plural: 'configmaps', uids: [] }],
      });
      expect(await groups('counted')).toEqual(await groups('indexed'));
      // Counts from the table equal counts of the objects (a name filter makes the engine count those).
      const onlyNs1: AccessSet = {
        ...none,
        namespaced: [{ namespaces: ['ns-1'], grants: [{ apiGroups: [''], resources: ['pods'] }] }],
        managedClusters: ['edge-1'],
      };
      for (const access of [allAccess, onlyNs1]) {
        for (const filters of [
          [{ property: 'kind', values: ['Pod'] }],
          [{ property: 'namespace', values: ['ns-0', 'ns-2'] }],
          [
            { property: 'kind', values: ['ConfigMap'] },
            { property: 'cluster', values: [HubCluster] },
          ],
          [{ property: 'namespace', values: ['!ns-1'] }],
        ]) {
          const fromTable = await engine.search(
            access,
            { filters },
            { items: false, count: true, related: false },
          );
          const fromObjects = await engine.search(
            access,
            { filters: [...filters, { property: 'name', values: ['obj-*'] }] },
            { items: false, count: true, related: false },
          );
          expect({ filters, count: fromTable.count }).toEqual({ filters, count: fromObjects.count });
        }
      }
      // A removed cluster's counts go with its partitions.
      await indexer.removeCluster('edge-1');
      expect(await groups('counted')).toEqual(await groups('indexed'));
      expect((await groups('counted')).every((g) => g.cluster === HubCluster)).toBe(true);
    }));
});
