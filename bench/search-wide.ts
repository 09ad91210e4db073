// Query latency over many partitions, straight on the engine (no control plane, no HTTPS): the hub's
// objects in `--hub-namespaces` namespaces and `--clusters` managed clusters of `--per-cluster` objects
// (bench/search-data.ts) indexed into a real PostgreSQL (embedded, fsync off), then the query mix for a
// cluster admin, a user with `view` in every hub namespace and every managed cluster (the access set that
// costs most to plan) and one with `view` in 10 hub namespaces and one cluster. With --explain each query's plan is printed once instead.
//   node bench/search-wide.ts [--clusters 20] [--per-cluster 10000] [--hub-namespaces 1000] [--runs 10]
//                             [--explain]
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mapLimit } from '../src/kube/access.ts';
import { silentLogger } from '../src/kube/log.ts';
import { migrate } from '../src/search/db/migrations.ts';
import { startEmbedded } from '../src/search/db/postgres.ts';
import { Indexer } from '../src/search/indexer/indexer.ts';
import { type AccessSet, HubCluster, type IndexedResource } from '../src/search/model.ts';
import { PostgresSearch } from '../src/search/query/engine.ts';
import { benchArgs } from './args.ts';
import { fmt, percentile } from './search-api-process.ts';
import { syntheticNamespace } from './search-data.ts';

const { values } = benchArgs('bench:search-wide', {
  clusters: { type: 'string', default: '20' },
  'per-cluster': { type: 'string', default: '10000' },
  'hub-namespaces': { type: 'string', default: '1000' },
  runs: { type: 'string', default: '10' },
  explain: { type: 'boolean', default: false },
  // The first managed cluster removed and indexed again after the ANALYZE, as a cluster that comes back
  // from empty: its new partitions have no statistics until the indexer or autovacuum analyzes them.
  'fresh-cluster': { type: 'boolean', default: false },
});
const clusters = Array.from(
  { length: Number(values.clusters) },
  (_, c) => `fleet-${String(c).padStart(3, '0')}`,
);
const perCluster = Number(values['per-cluster']);
const hubNamespaces = Array.from(
  { length: Number(values['hub-namespaces']) },
  (_, i) => `ns-${String(i).padStart(4, '0')}`,
);
const runs = Number(values.runs);

const dir = await mkdtemp(join(tmpdir(), 'tenantkit-bench-wide-'));
await chmod(dir, 0o755);
const db = await startEmbedded({
  dir: join(dir, 'pg'),
  unsafeNoFsync: true,
  // VACUUM ANALYZE of every partition takes longer than a query may.
  statementTimeoutMs: 600_000,
  settings: { shared_buffers: '256MB' },
});
try {
  await migrate(db.pool);
  const indexer = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
  const write = async (cluster: string, objects: IndexedResource[]) => {
    for (let b = 0; b < objects.length; b += 500)
      await indexer.write({ cluster, upserts: objects.slice(b, b + 500) });
  };
  const started = performance.now();
  for (const [i, ns] of hubNamespaces.entries()) await write(HubCluster, syntheticNamespace(ns, i, 20));
  // Every managed cluster holds the same 50 namespaces of the same names, as a fleet's clusters do.
  await mapLimit(clusters, 2, async (c) => {
    for (let n = 0; n < 50; n++)
      await write(
        c,
        syntheticNamespace(`app-${String(n).padStart(3, '0')}`, n, Math.floor(perCluster / 50), c),
      );
  });
  await db.pool.query('VACUUM ANALYZE');
  if (values['fresh-cluster']) {
    await indexer.removeCluster(clusters[0]!);
    for (let n = 0; n < 50; n++)
      await write(
        clusters[0]!,
        syntheticNamespace(`app-${String(n).padStart(3, '0')}`, n, Math.floor(perCluster / 50), clusters[0]!),
      );
    // A collector's list ends with a resync of each type (here one of a type it has none of: nothing
    // pruned), after which the indexer analyzes the new partitions.
    await indexer.write({
      cluster: clusters[0]!,
      resyncs: [{ apigroup: '', kind_plural: 'nodes', uids: [] }],
    });
    await new Promise((r) => setTimeout(r, 2000));
    console.log(
      `${clusters[0]} removed and indexed again after the ANALYZE, as a cluster that comes back from empty`,
    );
  }
  const objects = (await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM search.resources')).rows[0]!
    .n;
  console.log(
    `${objects} objects: the hub's in ${hubNamespaces.length} namespaces, and ${clusters.length} managed clusters; indexed in ${((performance.now() - started) / 1000).toFixed(0)} s (fsync off)`,
  );

  // `view` as its aggregated ClusterRole grants it, in every hub namespace; and every managed cluster.
  const view = [
    {
      apiGroups: [''],
      resources: ['pods', 'configmaps', 'services', 'serviceaccounts', 'persistentvolumeclaims', 'endpoints'],
    },
    { apiGroups: ['apps'], resources: ['deployments', 'replicasets', 'statefulsets', 'daemonsets'] },
    { apiGroups: ['networking.k8s.io'], resources: ['ingresses', 'networkpolicies'] },
    { apiGroups: ['batch'], resources: ['jobs', 'cronjobs'] },
  ];
  const users: [string, AccessSet][] = [
    [
      'admin',
      {
        all: true,
        clusterWide: [],
        namespaced: [],
        managedClusters: clusters,
        canSearch: true,
        digest: 'admin',
      },
    ],
    [
      'wide',
      {
        all: false,
        clusterWide: [],
        namespaced: [{ namespaces: hubNamespaces, grants: view }],
        managedClusters: clusters,
        canSearch: true,
        digest: 'wide',
      },
    ],
    [
      'narrow',
      {
        all: false,
        clusterWide: [],
        namespaced: [{ namespaces: hubNamespaces.slice(0, 10), grants: view }],
        managedClusters: clusters.slice(0, 1),
        canSearch: true,
        digest: 'narrow',
      },
    ],
  ];
  const engine = new PostgresSearch({ pool: db.pool, hubCluster: HubCluster, logger: silentLogger });
  const items = { items: true, count: false, related: false } as const;
  const counted = { items: false, count: true, related: false } as const;
  const mix: [string, (a: AccessSet) => Promise<unknown>][] = [
    [
      'filter namespace:<hub ns>',
      (a) => engine.search(a, { filters: [{ property: 'namespace', values: ['ns-0037'] }] }, items),
    ],
    [
      'count kind:Pod',
      (a) => engine.search(a, { filters: [{ property: 'kind', values: ['Pod'] }] }, counted),
    ],
    ['keyword apiserver', (a) => engine.search(a, { keywords: ['apiserver'] }, items)],
    ['searchComplete name', (a) => engine.complete(a, 'name', undefined)],
  ];
  if (values.explain) {
    // Each statement the engine sends, explained with its own parameters before it runs.
    const query = db.pool.query.bind(db.pool) as (q: {
      text: string;
      values: unknown[];
    }) => Promise<{ rows: { 'QUERY PLAN': string }[] }>;
    Object.assign(db.pool, {
      query: async (q: { text: string; values: unknown[] }) => {
        const plan = await query({ text: `EXPLAIN (ANALYZE, BUFFERS) ${q.text}`, values: q.values });
        console.log(plan.rows.map((r) => r['QUERY PLAN']).join('\n'));
        return query(q);
      },
    });
  }
  console.log(`\n${'p50 / p95 ms'.padEnd(28)} ${users.map(([u]) => u.padStart(15)).join(' ')}`);
  for (const [name, run] of mix) {
    const cells: string[] = [];
    for (const [, access] of users) {
      const samples: number[] = [];
      for (let r = 0; r <= (values.explain ? 0 : runs); r++) {
        const t = performance.now();
        await run(access);
        if (r > 0 || values.explain) samples.push(performance.now() - t);
      }
      samples.sort((a, b) => a - b);
      cells.push(`${fmt(percentile(samples, 50))} / ${fmt(percentile(samples, 95))}`.padStart(15));
    }
    console.log(`${name.padEnd(28)} ${cells.join(' ')}`);
  }
} finally {
  await db.close();
  await rm(dir, { recursive: true, force: true });
}
