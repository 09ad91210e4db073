// Benchmark of search at scale: N synthetic objects (default 1,000,000) over 1,000 namespaces with ~1.6
// relationships each, indexed into a real PostgreSQL (embedded) through the indexer, queried through the
// engine with access sets that the RBAC provider computes from a real control plane, for three users:
// a cluster admin, `view` in all 1,000 namespaces, `view` in 10. Prints ingest rate, first-call and
// p50/p95 latency of ACM's query mix per user, new-user cost, revocation latency, database size, memory.
//   node bench/search.ts [--objects 1000000] [--namespaces 1000] [--runs 40] [--api-node-options FLAGS]
//                        [--api-from dist|src]
// With --clusters N it measures a fleet instead (bench/search-fleet.ts).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { startControlPlane } from '../devenv/controlplane/launch.ts';
import { mapLimit } from '../src/kube/access.ts';
import { KubeClient } from '../src/kube/client.ts';
import { silentLogger } from '../src/kube/log.ts';
import { metrics } from '../src/kube/metrics.ts';
import { Resources } from '../src/kube/resources.ts';
import { RbacAccessProvider } from '../src/search/access/index.ts';
import { migrate } from '../src/search/db/migrations.ts';
import { startEmbedded } from '../src/search/db/postgres.ts';
import { searchUserClusterRoles } from '../src/search/index.ts';
import { Indexer } from '../src/search/indexer/indexer.ts';
import { HubCluster, type IndexedResource, type SearchInput, type SearchUser } from '../src/search/model.ts';
import { PostgresSearch } from '../src/search/query/engine.ts';
import { benchArgs } from './args.ts';
import {
  benchTokenUsers,
  fmt,
  graphqlOf,
  percentile,
  type QueryKind,
  startSearchApiProcess,
} from './search-api-process.ts';
import { syntheticNamespace } from './search-data.ts';

if (process.argv.includes('--clusters')) {
  // A fleet: bench/search-fleet.ts reads the same command line.
  await import('./search-fleet.ts');
  process.exit(process.exitCode ?? 0);
}
const { values } = benchArgs('bench:search', {
  objects: { type: 'string', default: '1000000' },
  namespaces: { type: 'string', default: '1000' },
  runs: { type: 'string', default: '40' },
  // Node.js flags for the search API process (e.g. --max-semi-space-size=4), as NODE_OPTIONS in its Pod.
  'api-node-options': { type: 'string', default: '' },
  // dist: the JavaScript `npm run build` compiles, which the image runs; src: the .ts sources.
  'api-from': { type: 'string', default: 'dist' },
});
const namespaces = Number(values.namespaces);
const perNamespace = Math.floor(Number(values.objects) / namespaces);
const runs = Number(values.runs);
const ns = (i: number) => `ns-${String(i).padStart(4, '0')}`;

const dir = await mkdtemp(join(tmpdir(), 'tenantkit-bench-search-'));
const { chmod } = await import('node:fs/promises');
await chmod(dir, 0o755);
const cp = await startControlPlane({
  dir: join(dir, 'cp'),
  unsafeNoFsync: true,
  // Bearer tokens for the same three users, to query through the HTTPS API as clients do.
  tokenUsers: benchTokenUsers,
  progress: (l) => console.error(l),
});
const db = await startEmbedded({ dir: join(dir, 'pg'), statementTimeoutMs: 60_000, max: 8 });
const stop = new AbortController();

async function time<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const v = await fn();
  return [performance.now() - t, v];
}
const apiRequests = async () => {
  const m = await metrics.kubeRequests.get();
  return m.values.reduce((n, v) => n + v.value, 0);
};

let apiMemory = '';
try {
  await migrate(db.pool);
  const admin = KubeClient.fromKubeconfig({ yaml: cp.adminKubeconfig });

  // Using search is part of `view` (aggregated), as in an installation.
  for (const role of searchUserClusterRoles()) {
    await admin.apply(Resources.clusterRoles, role, { fieldManager: 'bench', force: true });
  }
  // RBAC: `view` for the wide user in every namespace, for the narrow user in the first ten.
  let t = performance.now();
  await mapLimit([...Array(namespaces).keys()], 16, async (i) => {
    await admin.create(Resources.namespaces, { metadata: { name: ns(i) } });
    const bind = (user: string) =>
      admin.create(Resources.roleBindings, {
        metadata: { name: `view-${user}`, namespace: ns(i) },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      } as never);
    await bind('wide');
    if (i < 10) await bind('narrow');
  });
  console.log(
    `RBAC set-up: ${namespaces} namespaces, ${namespaces + 10} RoleBindings in ${fmt(performance.now() - t)} ms`,
  );

  const provider = new RbacAccessProvider({ client: admin, logger: silentLogger });
  void provider.start(stop.signal);
  await provider.waitForSync();

  // Ingest.
  const indexer = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
  t = performance.now();
  let sent = 0;
  let edges = 0;
  const nodes: IndexedResource[] = Array.from({ length: 100 }, (_, i) => ({
    uid: `${HubCluster}/node-${i}`,
    data: {
      kind: 'Node',
      kind_plural: 'nodes',
      apiversion: 'v1',
      name: `node-${i}`,
      _hubClusterResource: true,
    },
    edges: [],
  }));
  await indexer.write({ cluster: HubCluster, upserts: nodes });
  for (let i = 0; i < namespaces; i++) {
    const objects = syntheticNamespace(ns(i), i, perNamespace);
    for (let j = 0; j < objects.length; j += 1000) {
      const batch = objects.slice(j, j + 1000);
      await indexer.write({ cluster: HubCluster, upserts: batch });
      sent += batch.length;
      edges += batch.reduce((n, o) => n + o.edges.length, 0);
    }
    if ((i + 1) % 100 === 0) {
      const s = (performance.now() - t) / 1000;
      console.error(`  ingested ${sent} objects in ${s.toFixed(0)} s (${Math.round(sent / s)}/s)`);
    }
  }
  const ingestS = (performance.now() - t) / 1000;
  const stored = await db.pool.query<{ r: number; e: number }>(
    'SELECT (SELECT count(*) FROM search.resources)::int AS r, (SELECT count(*) FROM search.edges)::int AS e',
  );
  console.log(
    `ingest: ${sent} objects with ${edges} references in ${ingestS.toFixed(1)} s = ${Math.round(sent / ingestS)} objects/s; stored ${stored.rows[0]!.r} rows, ${stored.rows[0]!.e} edges`,
  );
  const [vacuumMs] = await time(() => db.pool.query('VACUUM ANALYZE'));
  console.log(`VACUUM ANALYZE (autovacuum's job in production): ${fmt(vacuumMs)} ms`);

  const engine = new PostgresSearch({ pool: db.pool, hubCluster: HubCluster, logger: silentLogger });
  const users: [string, SearchUser][] = [
    ['admin', { username: 'root', groups: ['system:masters'] }],
    ['wide (view in all)', { username: 'wide', groups: [] }],
    ['narrow (view in 10)', { username: 'narrow', groups: [] }],
  ];
  const nsFor = (user: string, r: number) => ns(user === 'narrow' ? r % 10 : (r * 37) % namespaces);
  const queries: [string, (user: string, r: number) => SearchInput, QueryKind][] = [
    ['keyword apiserver', () => ({ keywords: ['apiserver'] }), 'items'],
    [
      'filter namespace:<ns>',
      (u, r) => ({ filters: [{ property: 'namespace', values: [nsFor(u, r)] }] }),
      'items',
    ],
    ['count kind:Pod', () => ({ filters: [{ property: 'kind', values: ['Pod'] }] }), 'count'],
    [
      'count kind:Pod,Deployment',
      () => ({ filters: [{ property: 'kind', values: ['Pod', 'Deployment'] }] }),
      'count',
    ],
    ['searchComplete name', () => ({}), 'complete'],
    [
      'related count',
      (u, r) => ({
        filters: [
          { property: 'kind', values: ['Deployment'] },
          { property: 'namespace', values: [nsFor(u, r)] },
        ],
      }),
      'relcount',
    ],
    [
      'related items',
      (u, r) => ({
        filters: [
          { property: 'kind', values: ['Deployment'] },
          { property: 'namespace', values: [nsFor(u, r)] },
        ],
      }),
      'relitems',
    ],
  ];
  console.log('\nquery latency in ms (first call, then p50 / p95 over', runs, 'runs; results in brackets)');
  for (const [label, user] of users) {
    const before = await apiRequests();
    const [setMs, access] = await time(async () => provider.forUser(user));
    const calls = (await apiRequests()) - before;
    console.log(`\n${label}: access set built in ${fmt(setMs)} ms with ${calls} API calls`);
    for (const [name, input, kind] of queries) {
      const run = async (r: number) => {
        const a = provider.forUser(user);
        const i = input(user.username, r);
        switch (kind) {
          case 'items':
            return (
              (await engine.search(a, i, { items: true, count: false, related: false })).items?.length ?? 0
            );
          case 'count':
            return (await engine.search(a, i, { items: false, count: true, related: false })).count ?? 0;
          case 'complete':
            return (await engine.complete(a, 'name', undefined)).length;
          case 'relcount':
            return (
              (
                await engine.search(a, i, {
                  items: false,
                  count: false,
                  related: { items: false, count: true },
                })
              ).related?.reduce((n, x) => n + (x.count ?? 0), 0) ?? 0
            );
          case 'relitems':
            return (
              (
                await engine.search(a, i, {
                  items: false,
                  count: false,
                  related: { items: true, count: false },
                })
              ).related?.reduce((n, x) => n + (x.items?.length ?? 0), 0) ?? 0
            );
        }
      };
      const [first, size] = await time(() => run(0));
      const samples: number[] = [];
      for (let r = 1; r <= runs; r++) samples.push((await time(() => run(r)))[0]);
      samples.sort((a, b) => a - b);
      console.log(
        `  ${name.padEnd(28)} first ${fmt(first).padStart(7)}  p50 ${fmt(percentile(samples, 50)).padStart(7)}  p95 ${fmt(percentile(samples, 95)).padStart(7)}  [${size}]`,
      );
    }
    void access;
  }

  // The same mix through the API as clients send it: HTTPS, GraphQL, bearer tokens (TokenReview, cached),
  // served by `tenantkit search api` as its own process (as in its Pod), whose memory is sampled throughout.
  {
    const api = await startSearchApiProcess({
      dir,
      kubeconfigPath: cp.adminKubeconfigPath,
      databaseUrl: db.url,
      args: ['--no-collector', '--no-indexer'],
      nodeOptions: values['api-node-options'],
      from: values['api-from'] === 'dist' ? 'dist' : 'src',
    });
    const rssOf = api.rss;
    const idleRss = await rssOf('VmRSS');
    let sampling = true;
    let peakRss = idleRss;
    const sampler = (async () => {
      while (sampling) {
        peakRss = Math.max(peakRss, await rssOf('VmRSS').catch(() => 0));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const tokenOf = async (user: string) => {
      const config = parseYaml(await readFile(cp.tokenKubeconfigPath(user), 'utf8')) as {
        users: { user: { token: string } }[];
      };
      return config.users[0]!.user.token;
    };
    console.log('\nthrough the HTTPS GraphQL API, in ms (first call, then p50 / p95 over', runs, 'runs)');
    for (const [label, user] of users) {
      const token = await tokenOf(user.username);
      console.log(`\n${label}`);
      for (const [name, input, kind] of queries) {
        const run = async (r: number) => {
          const reply = await api.post(token, graphqlOf[kind], { i: [input(user.username, r)] });
          if (reply.errors) throw new Error(JSON.stringify(reply.errors));
        };
        const [first] = await time(() => run(0));
        const samples: number[] = [];
        for (let r = 1; r <= runs; r++) samples.push((await time(() => run(r)))[0]);
        samples.sort((a, b) => a - b);
        console.log(
          `  ${name.padEnd(28)} first ${fmt(first).padStart(7)}  p50 ${fmt(percentile(samples, 50)).padStart(7)}  p95 ${fmt(percentile(samples, 95)).padStart(7)}`,
        );
      }
    }
    sampling = false;
    await sampler;
    const hwm = await rssOf('VmHWM');
    await api.stop();
    apiMemory = `search API process (${values['api-from']}${values['api-node-options'] ? ` ${values['api-node-options']}` : ''}): RSS ${idleRss.toFixed(0)} MiB when ready, peak ${Math.max(peakRss, hwm).toFixed(0)} MiB over the query mix (sampled every 50 ms, and the kernel's high-water mark)`;
    console.log(`\n${apiMemory}`);
  }

  // A user never seen before: the set is built from the informers' caches, no API call.
  {
    const fresh: SearchUser = { username: 'wide', uid: 'another-session', groups: ['system:authenticated'] };
    const before = await apiRequests();
    const [ms] = await time(async () => {
      const a = provider.forUser(fresh);
      return engine.search(
        a,
        { filters: [{ property: 'namespace', values: [ns(5)] }] },
        { items: true, count: false, related: false },
      );
    });
    console.log(
      `\nnew user's first query (set built + filter query): ${fmt(ms)} ms, ${(await apiRequests()) - before} API calls`,
    );
  }

  // Revocation: delete one of the narrow user's RoleBindings and query until that namespace is gone.
  const narrow = users[2]![1];
  const delays: number[] = [];
  for (let i = 0; i < 5; i++) {
    const input: SearchInput = { filters: [{ property: 'namespace', values: [ns(i)] }] };
    const visible = await engine.search(provider.forUser(narrow), input, {
      items: false,
      count: true,
      related: false,
    });
    const started = performance.now();
    await admin.delete(Resources.roleBindings, 'view-narrow', ns(i));
    for (;;) {
      const r = await engine.search(provider.forUser(narrow), input, {
        items: false,
        count: true,
        related: false,
      });
      if (r.count === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    delays.push(performance.now() - started);
    if (!visible.count) console.log(`  (namespace ${ns(i)} was not visible before revocation)`);
  }
  console.log(`revocation visible in results after: ${delays.map(fmt).join(', ')} ms`);

  // The tables are partitioned (by cluster): their size is that of their partitions.
  const size = await db.pool.query<{ db: string; resources: string; edges: string }>(
    `SELECT pg_size_pretty(pg_database_size(current_database())) AS db,
            pg_size_pretty((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('search.resources'))) AS resources,
            pg_size_pretty((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('search.edges'))) AS edges`,
  );
  const mem = process.memoryUsage();
  console.log(
    `database ${size.rows[0]!.db} (resources with indexes ${size.rows[0]!.resources}, edges ${size.rows[0]!.edges}); ` +
      `bench process (indexer, engine, RBAC informers): RSS ${Math.round(mem.rss / 1048576)} MiB, heap ${Math.round(mem.heapUsed / 1048576)} MiB`,
  );
  console.log(apiMemory);
} finally {
  stop.abort();
  await db.close();
  await cp.stop();
  await rm(dir, { recursive: true, force: true });
}
