// Benchmark of search across a fleet: `--clusters N` clusters push `--objects` objects in all into the hub
// through the real ingest path: HTTPS to `tenantkit search api` (its own process with its indexer, as the
// chart runs it), each cluster with its own hub identity (a ServiceAccount that may write only its
// cluster), batched and sequenced by the collectors' own BatchQueue. Taking part: the hub's collector
// (the hub control plane's objects; a process of its own, as in the chart), one real managed cluster (a second control plane and its collector), and N-1 load
// clusters whose objects a generator makes (they speak the collectors' push protocol exactly: the same
// BatchQueue and RemoteSink; only the objects come from bench/search-data.ts instead of a watch).
// Measured in the same run: ingest (sustained, and per 10 s window), the raw COPY rate of the same rows
// into the same tables and indexes (the ceiling here), one cluster's resync (unchanged, and from empty),
// a cluster's removal, database bytes per object, the query mix over HTTPS GraphQL for three users (idle
// and during ingest), a new user's first query, revocation during ingest, and the API process's memory.
// With --replicas N (default 2) the database has N streaming standbys that the API reads from; their lag
// is sampled during ingest.
//   npm run bench:search -- --clusters 100 --objects 10000000 [--namespaces-per-cluster 100]
//     [--hub-namespaces 1000] [--bindings 10000] [--runs 20] [--replicas 2] [--api-from dist|src]
//     [--db-settings shared_buffers=1GB,max_wal_size=4GB]
//     [--api-variants 'MALLOC_ARENA_MAX=2 --max-old-space-size=128;--max-semi-space-size=1']
// --api-variants: after the run, the search API is restarted with each variant (NAME=value words are its
// environment, the rest its NODE_OPTIONS) and the query mix is run again, idle and under churn, for its
// memory and latency beside the run's own settings.
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { startControlPlane } from '../devenv/controlplane/launch.ts';
import { type Standby, startStandby } from '../devenv/postgres/standby.ts';
import { crdManifest } from '../src/crds/schema.ts';
import { mapLimit } from '../src/kube/access.ts';
import { KubeClient } from '../src/kube/client.ts';
import { installCrds } from '../src/kube/crds.ts';
import { silentLogger } from '../src/kube/log.ts';
import { type KubeObject, Resources } from '../src/kube/resources.ts';
import { ManagedClusterType } from '../src/search/access/managed-clusters.ts';
import { BatchQueue } from '../src/search/collector/batch-queue.ts';
import { Collector } from '../src/search/collector/collector.ts';
import { migrate } from '../src/search/db/migrations.ts';
import { startEmbedded } from '../src/search/db/postgres.ts';
import { ReadRouter } from '../src/search/db/replicas.ts';
import { searchUserClusterRoles } from '../src/search/index.ts';
import { clusterRemoveAttributes, clusterWriteAttributes } from '../src/search/indexer/http.ts';
import { ClusterPartitions } from '../src/search/indexer/partitions.ts';
import { RemoteSink } from '../src/search/indexer/remote-sink.ts';
import type { IndexBatch, IndexedResource } from '../src/search/model.ts';
import { ManagedClusterCrd } from '../test/fixtures/managed-cluster.ts';
import { benchArgs } from './args.ts';
import { childTreeCpu, machineCpu } from './cpu.ts';
import { addGrowth } from './prom.ts';
import {
  benchTokenUsers,
  fmt,
  graphqlOf,
  type HubCollectorProcess,
  httpsText,
  type ProcessMemory,
  percentile,
  type QueryKind,
  startHubCollectorProcess,
  startSearchApiProcess,
} from './search-api-process.ts';
import { syntheticNamespace } from './search-data.ts';

const { values } = benchArgs('bench:search-fleet', {
  clusters: { type: 'string', default: '100' },
  objects: { type: 'string', default: '10000000' },
  'namespaces-per-cluster': { type: 'string', default: '100' },
  'hub-namespaces': { type: 'string', default: '1000' },
  bindings: { type: 'string', default: '10000' },
  runs: { type: 'string', default: '20' },
  'api-from': { type: 'string', default: 'dist' },
  'api-node-options': { type: 'string', default: '' },
  // NODE_OPTIONS for the hub's collector process (as the chart's search.collectorNodeOptions).
  'collector-node-options': { type: 'string', default: '' },
  // PostgreSQL server settings for the primary, `name=value,name=value` (e.g. shared_buffers=1GB).
  'db-settings': { type: 'string', default: '' },
  // Streaming-replication standbys of the database that the API reads from (0: none).
  replicas: { type: 'string', default: '2' },
  'api-variants': { type: 'string', default: '' },
});
/** A process setting of the search API: NAME=value words are environment, the rest NODE_OPTIONS. */
interface ApiVariant {
  label: string;
  nodeOptions: string;
  env: Record<string, string>;
}
const apiVariant = (text: string): ApiVariant => {
  const words = text.trim().split(/\s+/).filter(Boolean);
  const isEnv = (w: string) => /^[A-Z_][A-Z0-9_]*=/.test(w);
  return {
    label: text.trim() || "Node's defaults",
    nodeOptions: words.filter((w) => !isEnv(w)).join(' '),
    env: Object.fromEntries(
      words.filter(isEnv).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]),
    ),
  };
};
/** Users whose first query is timed: each is bound after the load, and has never asked before. */
const newcomers = Array.from({ length: 10 }, (_, i) => ({ name: `newcomer-${i}`, groups: [] }));
const clusterCount = Number(values.clusters);
const perCluster = Math.floor(Number(values.objects) / clusterCount);
const namespacesPerCluster = Number(values['namespaces-per-cluster']);
const hubNamespaces = Number(values['hub-namespaces']);
const runs = Number(values.runs);
const loadClusters = Array.from(
  { length: clusterCount - 1 },
  (_, i) => `fleet-${String(i).padStart(3, '0')}`,
);
const edgeName = 'edge-real';
const hubNs = (i: number) => `ns-${String(i).padStart(4, '0')}`;

const since = (t: number) => performance.now() - t;

const dir = await mkdtemp(join(tmpdir(), 'tenantkit-bench-fleet-'));
await chmod(dir, 0o755);
const stop = new AbortController();
const cp = await startControlPlane({
  dir: join(dir, 'hub'),
  unsafeNoFsync: true,
  tokenUsers: [...benchTokenUsers, ...newcomers],
  progress: (l) => console.error(l),
});
const edge = await startControlPlane({ dir: join(dir, 'edge'), unsafeNoFsync: true });
const dbSettings = Object.fromEntries(
  values['db-settings']
    .split(',')
    .filter(Boolean)
    .map((pair) => pair.split('=') as [string, string]),
);
const db = await startEmbedded({
  dir: join(dir, 'pg'),
  statementTimeoutMs: 120_000,
  max: 4,
  settings: dbSettings,
});
let api: Awaited<ReturnType<typeof startSearchApiProcess>> | undefined;
let hubCollector: HubCollectorProcess | undefined;
const standbys: Standby[] = [];

/** A load cluster's objects, namespace by namespace (never all in memory), with its nodes first. */
function* clusterObjects(cluster: string, seed: number): Generator<IndexedResource[]> {
  yield Array.from({ length: 100 }, (_, i) => ({
    uid: `${cluster}/node-${i}`,
    data: { kind: 'Node', kind_plural: 'nodes', apiversion: 'v1', name: `node-${i}` },
    edges: [],
  }));
  const each = Math.floor((perCluster - 100) / namespacesPerCluster);
  for (let n = 0; n < namespacesPerCluster; n++) {
    yield syntheticNamespace(`app-${String(n).padStart(3, '0')}`, seed * 1000 + n, each, cluster);
  }
}

/** The bench's child processes by what they are, for the CPU report of the ingest. */
function processLabel(pid: number, argv: string[]): string | undefined {
  const line = argv.join(' ');
  if (pid === api?.pid) return 'search API';
  if (pid === hubCollector?.pid) return 'hub collector';
  if (line.includes(` -D ${join(dir, 'pg')}`)) return 'PostgreSQL primary';
  if (line.includes(join(dir, 'replica-'))) return 'PostgreSQL standbys';
  if (line.includes(join(dir, 'hub'))) return 'hub control plane';
  if (line.includes(join(dir, 'edge'))) return 'managed cluster control plane';
  return undefined;
}

type CpuWindow = readonly [Map<string, number>, Awaited<ReturnType<typeof machineCpu>>];

/** Where the machine's CPU went between two readings: its split, then each process tree's share. */
function cpuReport([treesBefore, before]: CpuWindow, [treesAfter, after]: CpuWindow): string[] {
  const total = after.total - before.total;
  const pct = (s: number) => `${((s / total) * 100).toFixed(0)} %`;
  const busy = after.busy - before.busy;
  const iowait = after.iowait - before.iowait;
  const trees = [...addGrowth(new Map(), treesBefore, treesAfter)].sort((a, b) => b[1] - a[1]);
  return [
    `CPU of the machine during ingest: busy ${pct(busy)}, waiting on I/O ${pct(iowait)}, idle ${pct(total - busy - iowait)}`,
    `  by process (share of all cores): ${trees
      .filter(([, s]) => s / total >= 0.005)
      .map(([name, s]) => `${name} ${pct(s)}`)
      .join(', ')}`,
  ];
}

/** The types in the synthetic mix, as the collector resyncs them after a list. */
const typeOf = (o: IndexedResource) => ({
  apigroup: (o.data.apigroup as string | undefined) ?? '',
  kind_plural: o.data.kind_plural as string,
});

/**
 * Pushes one load cluster as its collector's first list would: every object upserted through the batch
 * queue (500 per batch, at most 5,000 pending), then one resync per type with every uid seen.
 */
async function pushCluster(cluster: string, seed: number, token: string, onAck: (n: number) => void) {
  const sink = new RemoteSink({ url: api!.url, token: () => token, ca: api!.caPem });
  const counting = {
    write: async (batch: IndexBatch) => {
      await sink.write(batch);
      onAck(batch.upserts?.length ?? 0);
    },
  };
  const queue = new BatchQueue({
    sink: counting,
    cluster,
    logger: silentLogger,
    maxObjects: 500,
    maxDelayMs: 150,
    maxPendingObjects: 5_000,
  });
  const seen = new Map<string, { apigroup: string; kind_plural: string; uids: string[] }>();
  for (const objects of clusterObjects(cluster, seed)) {
    for (const o of objects) {
      if (queue.full()) await queue.room();
      queue.upsert(o);
      const t = typeOf(o);
      const key = `${t.apigroup}/${t.kind_plural}`;
      const entry = seen.get(key) ?? { ...t, uids: [] };
      seen.set(key, entry);
      entry.uids.push(o.uid);
    }
  }
  for (const r of seen.values()) queue.resync(r);
  await queue.barrier();
  await queue.close(10_000);
}

try {
  await migrate(db.pool);
  for (let i = 1; i <= Number(values.replicas); i++) {
    standbys.push(await startStandby(db, join(dir, 'pg'), join(dir, `replica-${i}`), `replica-${i}`));
  }
  // The bench's own view of the replicas' lag (the API process keeps its own, for its reads).
  const lagRouter = new ReadRouter({
    primary: db.pool,
    replicas: standbys.map((r, i) => ({ name: `replica-${i + 1}`, pool: r.pool })),
    logger: silentLogger,
  });
  void lagRouter.run(stop.signal);
  const admin = KubeClient.fromKubeconfig({ yaml: cp.adminKubeconfig });
  for (const role of searchUserClusterRoles()) {
    await admin.apply(Resources.clusterRoles, role, { fieldManager: 'bench', force: true });
  }
  await installCrds(admin, [crdManifest(ManagedClusterCrd) as unknown as KubeObject]);

  // RBAC on the hub: `view` for wide in every hub namespace and narrow in 10; ManagedClusterViews (ACM's
  // rule for a managed cluster's objects) for wide in every cluster and narrow in one; other users'
  // bindings up to --bindings in all.
  let t = performance.now();
  const bind = (namespace: string, user: string, role: string, name = `${role}-${user}`) =>
    admin.create(Resources.roleBindings, {
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    } as never);
  await admin.create(Resources.clusterRoles, {
    metadata: { name: 'fleet-cluster-viewer' },
    rules: [
      {
        apiGroups: ['view.open-cluster-management.io'],
        resources: ['managedclusterviews'],
        verbs: ['create'],
      },
    ],
  } as never);
  let bindings = 0;
  await mapLimit([...Array(hubNamespaces).keys()], 16, async (i) => {
    await admin.create(Resources.namespaces, { metadata: { name: hubNs(i) } });
    await bind(hubNs(i), 'wide', 'view');
    bindings++;
    if (i < 10) {
      await bind(hubNs(i), 'narrow', 'view');
      bindings++;
    }
  });
  const allClusters = [edgeName, ...loadClusters];
  await mapLimit(allClusters, 16, async (c) => {
    const i = allClusters.indexOf(c);
    await admin.apply(ManagedClusterType, { metadata: { name: c }, spec: {} } as KubeObject, {
      fieldManager: 'bench',
      force: true,
    });
    await admin.create(Resources.namespaces, { metadata: { name: c } });
    await bind(c, 'wide', 'fleet-cluster-viewer');
    bindings++;
    if (i === 1) {
      await bind(c, 'narrow', 'fleet-cluster-viewer');
      bindings++;
    }
  });
  const filler = Math.max(0, Number(values.bindings) - bindings);
  await mapLimit([...Array(filler).keys()], 16, (i) =>
    bind(hubNs(i % hubNamespaces), `user-${i}`, 'view', `view-user-${i}`),
  );
  bindings += filler;
  // Each cluster's collector identity: a ServiceAccount that may write only its own cluster.
  await admin.create(Resources.namespaces, { metadata: { name: 'fleet-identities' } });
  const tokens = new Map<string, string>();
  await mapLimit(allClusters, 16, async (c) => {
    const sa = `collector-${c}`;
    await admin.create(Resources.serviceAccounts, { metadata: { name: sa, namespace: 'fleet-identities' } });
    const w = clusterWriteAttributes(c);
    await admin.create(Resources.clusterRoles, {
      metadata: { name: `fleet-write-${c}` },
      rules: [{ apiGroups: [w.group], resources: [w.resource], resourceNames: [c], verbs: [w.verb] }],
    } as never);
    await admin.create(Resources.clusterRoleBindings, {
      metadata: { name: `fleet-write-${c}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `fleet-write-${c}` },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: 'fleet-identities' }],
    } as never);
    const reply = await admin.request<{ status: { token: string } }>(
      'POST',
      `/api/v1/namespaces/fleet-identities/serviceaccounts/${sa}/token`,
      {
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds: 86_400 },
        },
      },
    );
    tokens.set(c, reply.status.token);
  });
  const shown = await db.pool.query<{ name: string; setting: string }>(
    `SELECT name, current_setting(name) AS setting FROM pg_settings WHERE name = ANY($1) ORDER BY name`,
    [
      [
        'shared_buffers',
        'max_wal_size',
        'checkpoint_timeout',
        'wal_compression',
        'fsync',
        ...Object.keys(dbSettings),
      ],
    ],
  );
  console.log(`database: ${shown.rows.map((r) => `${r.name}=${r.setting}`).join(' ')}`);
  console.log(
    `RBAC set-up: ${hubNamespaces} hub namespaces, ${allClusters.length} ManagedClusters, ${bindings} RoleBindings, ${allClusters.length} collector identities in ${(since(t) / 1000).toFixed(1)} s`,
  );

  // The search API with its indexer and the hub's collector, as in its Pod.
  const startApi = (variant: ApiVariant, from: 'dist' | 'src' | 'already-built') =>
    startSearchApiProcess({
      dir,
      kubeconfigPath: cp.adminKubeconfigPath,
      databaseUrl: db.url,
      nodeOptions: variant.nodeOptions,
      env: variant.env,
      from,
      maxSockets: 8,
      args: ['--no-collector', ...standbys.map((r) => `--database-replica-url=${r.url}`)],
    });
  api = await startApi(
    apiVariant(values['api-node-options']),
    values['api-from'] === 'dist' ? 'dist' : 'src',
  );
  hubCollector = await startHubCollectorProcess({
    kubeconfigPath: cp.adminKubeconfigPath,
    databaseUrl: db.url,
    nodeOptions: values['collector-node-options'],
    from: values['api-from'] === 'dist' ? 'already-built' : 'src',
  });
  await hubCollector.ready();
  const tokenOf = async (user: string) =>
    (
      parseYaml(await readFile(cp.tokenKubeconfigPath(user), 'utf8')) as {
        users: { user: { token: string } }[];
      }
    ).users[0]!.user.token;
  const userTokens = {
    admin: await tokenOf('root'),
    wide: await tokenOf('wide'),
    narrow: await tokenOf('narrow'),
  };
  // Where the API's memory is when its RSS is highest: sampled every second for the whole run.
  let memoryAtPeak: { rss: number; memory: ProcessMemory } | undefined;
  const memorySampler = setInterval(async () => {
    const rss = await api!.rss('VmRSS').catch(() => 0);
    if (rss <= (memoryAtPeak?.rss ?? 0)) return;
    const memory = await api!.memory(userTokens.admin).catch(() => undefined);
    if (memory) memoryAtPeak = { rss, memory };
  }, 1000);
  memorySampler.unref();

  // The real managed cluster: a few namespaces of objects, and its collector pushing with its identity.
  const edgeAdmin = KubeClient.fromKubeconfig({ path: edge.adminKubeconfigPath });
  await mapLimit([...Array(20).keys()], 8, async (n) => {
    await edgeAdmin.create(Resources.namespaces, { metadata: { name: `shop-${n}` } });
    for (let c = 0; c < 20; c++) {
      await edgeAdmin.create(Resources.configMaps, {
        metadata: { name: `settings-${c}`, namespace: `shop-${n}` },
      });
    }
  });
  const edgeCollector = new Collector({
    client: edgeAdmin,
    sink: new RemoteSink({ url: api.url, token: () => tokens.get(edgeName)!, ca: api.caPem }),
    cluster: edgeName,
    hub: false,
    logger: silentLogger,
  });
  const edgeRun = edgeCollector.run(stop.signal);

  // Ingest: every load cluster pushes its first list at once, as a fleet coming up does.
  console.log(
    `\ningest: ${loadClusters.length} load clusters of ${perCluster} objects (${namespacesPerCluster} namespaces each; no Events: the collector skips them, as ACM's does) + ${edgeName} (real) + the hub`,
  );
  let acked = 0;
  const windows: number[] = [];
  let last = 0;
  t = performance.now();
  const lagSamples: number[] = [];
  const lagSampler = setInterval(() => {
    for (const lag of Object.values(lagRouter.lags())) lagSamples.push(lag);
  }, 100);
  const sampler = setInterval(() => {
    windows.push((acked - last) / 10);
    last = acked;
    console.error(
      `  ${acked} objects acknowledged, ${Math.round(acked / (since(t) / 1000))}/s so far, ${windows.at(-1)}/s in the last 10 s`,
    );
  }, 10_000);
  const cpuBefore = [await childTreeCpu(processLabel), await machineCpu()] as const;
  await mapLimit(loadClusters, loadClusters.length, (c) =>
    pushCluster(c, loadClusters.indexOf(c) + 1, tokens.get(c)!, (n) => {
      acked += n;
    }),
  );
  const cpuAfter = [await childTreeCpu(processLabel), await machineCpu()] as const;
  clearInterval(sampler);
  clearInterval(lagSampler);
  const ingestS = since(t) / 1000;
  for (const line of cpuReport(cpuBefore, cpuAfter)) console.log(`  ${line}`);
  await edgeCollector.waitForInitialSync();
  const sorted = [...windows].sort((a, b) => a - b);
  console.log(
    `  ${acked} objects in ${ingestS.toFixed(1)} s = ${Math.round(acked / ingestS)} objects/s sustained; 10 s windows min ${sorted[0] ?? '-'} / median ${sorted.length ? percentile(sorted, 50) : '-'} / max ${sorted.at(-1) ?? '-'} objects/s`,
  );
  if (standbys.length > 0) {
    const lags = lagSamples.filter(Number.isFinite).sort((a, b) => a - b);
    const unreachable = lagSamples.length - lags.length;
    const caughtUp = performance.now();
    while (!Object.values(lagRouter.lags()).every((l) => l === 0))
      await new Promise((r) => setTimeout(r, 50));
    console.log(
      `  ${standbys.length} replicas' lag during ingest (every 100 ms): p50 ${fmt(percentile(lags, 50))} / p99 ${fmt(percentile(lags, 99))} / max ${fmt(lags.at(-1) ?? 0)} ms${unreachable ? ` (${unreachable} samples unreachable)` : ''}; caught up ${fmt(since(caughtUp))} ms after the last batch`,
    );
  }
  const stored = await db.pool.query<{ r: string; e: string; c: string }>(
    'SELECT (SELECT count(*) FROM search.resources) AS r, (SELECT count(*) FROM search.edges) AS e, (SELECT count(DISTINCT cluster) FROM search.resources) AS c',
  );
  console.log(
    `  stored ${stored.rows[0]!.r} objects and ${stored.rows[0]!.e} edges of ${stored.rows[0]!.c} clusters`,
  );
  t = performance.now();
  await db.pool.query('VACUUM ANALYZE');
  console.log(`  VACUUM ANALYZE (autovacuum's job in production): ${(since(t) / 1000).toFixed(1)} s`);
  const size = await db.pool.query<{ db: string; resources: string; edges: string; refs: string }>(
    `SELECT pg_database_size(current_database()) AS db,
       (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('search.resources')) AS resources,
       (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('search.edges')) AS edges,
       (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('tenantkit_search.edge_refs')) AS refs`,
  );
  const objects = Number(stored.rows[0]!.r);
  const perObject = (bytes: string) => `${Math.round(Number(bytes) / objects)} B`;
  const s = size.rows[0]!;
  console.log(
    `  database ${(Number(s.db) / 1e9).toFixed(2)} GB = ${perObject(s.db)} per object (resources with indexes ${perObject(s.resources)}, edges ${perObject(s.edges)}, references ${perObject(s.refs)})`,
  );
  // Each table (with its TOAST) and each index, over all its partitions: where the bytes are.
  const parts = await db.pool.query<{ name: string; bytes: string }>(
    `SELECT c.relname AS name,
       sum(CASE c.relkind WHEN 'p' THEN pg_table_size(t.relid) ELSE pg_relation_size(t.relid) END) AS bytes
     FROM pg_class c CROSS JOIN LATERAL pg_partition_tree(c.oid) t
     WHERE c.relkind IN ('p', 'I') AND c.relnamespace IN ('search'::regnamespace, 'tenantkit_search'::regnamespace)
     GROUP BY c.relname ORDER BY 2 DESC`,
  );
  console.log(
    `  per object, by table and index: ${parts.rows.map((r) => `${r.name} ${perObject(r.bytes)}`).join(', ')}`,
  );

  // The ceiling: COPY of one cluster's rows (the first load cluster's, under another cluster name) into
  // the same partitioned tables with the same indexes, from files on the database's machine.
  const sample = loadClusters[0]!;
  const ceiling = 'copy-ceiling';
  const files = join(dir, 'copy');
  await rm(files, { recursive: true, force: true });
  await mkdir(files);
  await chmod(files, 0o777);
  const rename = (column: string) => `'${ceiling}/' || substr(${column}, ${sample.length + 2})`;
  const exports: [table: string, select: string][] = [
    [
      'search.resources (uid, cluster, data, _refs)',
      `SELECT ${rename('uid')}, '${ceiling}', data, _refs FROM search.resources WHERE cluster = '${sample}'`,
    ],
    [
      'tenantkit_search.edge_refs (sourceid, cluster, edgetype, destuid, destkind, destns, destname, selector)',
      `SELECT ${rename('sourceid')}, '${ceiling}', edgetype, CASE WHEN destuid IS NULL THEN NULL ELSE ${rename('destuid')} END, destkind, destns, destname, selector FROM tenantkit_search.edge_refs WHERE cluster = '${sample}'`,
    ],
    [
      'search.edges (sourceid, sourcekind, destid, destkind, edgetype, cluster)',
      `SELECT ${rename('sourceid')}, sourcekind, ${rename('destid')}, destkind, edgetype, '${ceiling}' FROM search.edges WHERE cluster = '${sample}'`,
    ],
  ];
  for (const [i, [, select]] of exports.entries()) {
    await db.pool.query(`COPY (${select}) TO '${join(files, `${i}.copy`)}'`);
  }
  await db.pool.query('SELECT tenantkit_search.ensure_cluster($1)', [ceiling]);
  t = performance.now();
  for (const [i, [table]] of exports.entries())
    await db.pool.query(`COPY ${table} FROM '${join(files, `${i}.copy`)}'`);
  const copyS = since(t) / 1000;
  const sampleCount = Number(
    (
      await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM search.resources WHERE cluster = $1', [
        ceiling,
      ])
    ).rows[0]!.n,
  );
  const copyRate = sampleCount / copyS;
  console.log(
    `\nraw COPY of one cluster's rows (${sampleCount} objects, with their references and edges) into the same tables and indexes: ${copyS.toFixed(2)} s = ${Math.round(copyRate)} objects/s`,
  );
  console.log(
    `  fleet ingest sustained = ${((acked / ingestS / copyRate) * 100).toFixed(0)}% of the COPY rate`,
  );
  t = performance.now();
  const dropped = await new ClusterPartitions(db.pool).drop(ceiling);
  console.log(
    `  the COPY's cluster (${dropped} objects) removed, as the indexer removes one, in ${fmt(since(t))} ms`,
  );

  // One cluster's full resync through the ingest path: unchanged (a relist), then removed over HTTPS and
  // pushed again from empty (a cluster that comes back).
  const resyncOf = async (label: string) => {
    let n = 0;
    const started = performance.now();
    await pushCluster(sample, 1, tokens.get(sample)!, (k) => {
      n += k;
    });
    const sec = since(started) / 1000;
    console.log(
      `  ${label}: ${n} objects in ${sec.toFixed(2)} s = ${Math.round(n / sec)} objects/s (${((n / sec / copyRate) * 100).toFixed(0)}% of COPY)`,
    );
  };
  console.log(`\none cluster (${sample}) resynced through HTTPS:`);
  await resyncOf('unchanged (every object resent, none written)');
  const janitor = clusterRemoveAttributes(sample);
  t = performance.now();
  const removed = await httpsText(`${api.url}/searchindexer/clusters/${sample}`, {
    method: 'DELETE',
    ca: api.caPem,
    headers: { authorization: `Bearer ${userTokens.admin}` },
  });
  console.log(
    `  removed over HTTPS (${janitor.verb} on ${janitor.resource}/${sample}) in ${fmt(since(t))} ms: ${removed}`,
  );
  await resyncOf('from empty (a collector started after the removal)');

  // Queries, through HTTPS GraphQL, for a cluster admin / view in 1,000 hub namespaces and every cluster /
  // view in 10 hub namespaces and one cluster.
  const nsFor = (user: string, r: number) => hubNs(user === 'narrow' ? r % 10 : (r * 37) % hubNamespaces);
  const clusterFor = (user: string, r: number) =>
    user === 'narrow' ? loadClusters[0]! : loadClusters[r % loadClusters.length]!;
  const mix: [string, (user: string, r: number) => Record<string, unknown>, QueryKind][] = [
    [
      'filter cluster+namespace',
      (u, r) => ({
        filters: [
          { property: 'cluster', values: [clusterFor(u, r)] },
          { property: 'namespace', values: [`app-${String(r % namespacesPerCluster).padStart(3, '0')}`] },
        ],
      }),
      'items',
    ],
    [
      'filter namespace:<hub ns>',
      (u, r) => ({ filters: [{ property: 'namespace', values: [nsFor(u, r)] }] }),
      'items',
    ],
    ['count kind:Pod', () => ({ filters: [{ property: 'kind', values: ['Pod'] }] }), 'count'],
    [
      'count kind:Pod cluster:<c>',
      (u, r) => ({
        filters: [
          { property: 'kind', values: ['Pod'] },
          { property: 'cluster', values: [clusterFor(u, r)] },
        ],
      }),
      'count',
    ],
    ['keyword apiserver', () => ({ keywords: ['apiserver'] }), 'items'],
    ['searchComplete name', () => ({}), 'complete'],
    [
      'related count',
      (u, r) => ({
        filters: [
          { property: 'cluster', values: [clusterFor(u, r)] },
          { property: 'kind', values: ['Deployment'] },
          { property: 'namespace', values: [`app-${String(r % namespacesPerCluster).padStart(3, '0')}`] },
        ],
      }),
      'relcount',
    ],
  ];
  let peakRss = await api.rss('VmRSS');
  const queryMix = async (heading: string) => {
    console.log(`\n${heading} (p50 / p95 ms over ${runs} runs)`);
    console.log(
      `  ${'query'.padEnd(28)} ${['admin', 'wide', 'narrow'].map((u) => u.padStart(15)).join(' ')}`,
    );
    // The API's RSS under this mix alone (the issue's memory target is for the query mix; the peak of
    // the whole run, ingest included, is printed at the end).
    let mixRss = 0;
    for (const [name, input, kind] of mix) {
      const cells: string[] = [];
      for (const user of ['admin', 'wide', 'narrow'] as const) {
        const samples: number[] = [];
        for (let r = 0; r <= runs; r++) {
          const started = performance.now();
          const reply = await api!.post(userTokens[user], graphqlOf[kind], { i: [input(user, r)] });
          if (reply.errors) throw new Error(`${name} as ${user}: ${JSON.stringify(reply.errors)}`);
          if (r > 0) samples.push(since(started));
          const rss = await api!.rss('VmRSS');
          peakRss = Math.max(peakRss, rss);
          mixRss = Math.max(mixRss, rss);
        }
        samples.sort((a, b) => a - b);
        cells.push(`${fmt(percentile(samples, 50))} / ${fmt(percentile(samples, 95))}`.padStart(15));
      }
      console.log(`  ${name.padEnd(28)} ${cells.join(' ')}`);
    }
    const parts = await api!.rssParts();
    console.log(
      `  search API process RSS under this mix: peak ${mixRss.toFixed(0)} MiB; at its end ${(parts.anon + parts.file + parts.shmem).toFixed(0)} MiB = anonymous ${parts.anon.toFixed(0)} (V8's heap, malloc, Buffers) + file-backed ${parts.file.toFixed(0)} (the node binary, code) + shared ${parts.shmem.toFixed(0)}`,
    );
    return mixRss;
  };
  // Every object of 4 clusters changed (another seed gives other values for the same objects), over and
  // over, while `work` runs; returns the objects pushed and the seconds it took.
  let round = 0;
  const underChurn = async (work: () => Promise<void>) => {
    let churning = true;
    let churned = 0;
    const churn = mapLimit(loadClusters.slice(1, 5), 4, async (c) => {
      while (churning) {
        round++;
        await pushCluster(c, loadClusters.indexOf(c) + 1 + 1_000 * round, tokens.get(c)!, (n) => {
          churned += n;
        });
      }
    });
    const started = performance.now();
    try {
      await work();
    } finally {
      churning = false;
      await churn;
    }
    return { churned, seconds: since(started) / 1000 };
  };
  const idleRss = await queryMix('queries, idle');
  if (standbys.length > 0) {
    // The API read those from the replicas (caught up): its counts equal the primary's own.
    const differ: string[] = [];
    for (const c of [edgeName, ...loadClusters.slice(0, 5)]) {
      const reply = await api.post(userTokens.admin, graphqlOf.count, {
        i: [{ filters: [{ property: 'cluster', values: [c] }] }],
      });
      const viaApi = (reply.data?.search as { count: number }[] | undefined)?.[0]?.count;
      const onPrimary = Number(
        (
          await db.pool.query<{ n: string }>(
            'SELECT count(*) AS n FROM search.resources WHERE cluster = $1',
            [c],
          )
        ).rows[0]!.n,
      );
      if (viaApi !== onPrimary) differ.push(`${c}: ${viaApi} via the API, ${onPrimary} on the primary`);
    }
    console.log(
      `  replica reads vs the primary: ${differ.length === 0 ? 'every count equal' : differ.join('; ')}`,
    );
  }

  // A new user's first query: 10 users bound now (view in 10 hub namespaces and one cluster each) who
  // never asked before; each one's first answer pays for its TokenReview and its access set.
  await mapLimit(newcomers, 4, async ({ name }) => {
    const i = newcomers.findIndex((n) => n.name === name);
    for (let k = 0; k < 10; k++) await bind(hubNs((i * 10 + k) % hubNamespaces), name, 'view');
    await bind(loadClusters[i % loadClusters.length]!, name, 'fleet-cluster-viewer');
  });
  // The bindings reach the API's informers by watch; a second is far more than that takes.
  await new Promise((r) => setTimeout(r, 1000));
  const firsts: number[] = [];
  let blind = 0;
  for (const [i, { name }] of newcomers.entries()) {
    const token = await tokenOf(name);
    const started = performance.now();
    const reply = await api.post(token, graphqlOf.count, {
      i: [{ filters: [{ property: 'namespace', values: [hubNs((i * 10) % hubNamespaces)] }] }],
    });
    firsts.push(since(started));
    if (!((reply.data?.search as { count: number }[] | undefined)?.[0]?.count ?? 0)) blind++;
  }
  firsts.sort((a, b) => a - b);
  console.log(
    `\na new user's first query (count in one of its namespaces, ${newcomers.length} users, TokenReview and access set included): p50 ${fmt(percentile(firsts, 50))} / max ${fmt(firsts.at(-1)!)} ms${blind ? `; ${blind} saw nothing` : ''}`,
  );

  // The same while clusters push at full rate, with revocation measured meanwhile: narrow loses its one
  // cluster's ManagedClusterView binding. (Removing and adding clusters is measured apart.)
  const narrowCluster = loadClusters[0]!;
  let churnRss = 0;
  const churnMix = await underChurn(async () => {
    churnRss = await queryMix('queries while 4 clusters push changed objects at full rate');
    const narrowSees = async () => {
      const reply = await api!.post(userTokens.narrow, graphqlOf.count, {
        i: [{ filters: [{ property: 'cluster', values: [narrowCluster] }] }],
      });
      return ((reply.data?.search as { count: number }[] | undefined)?.[0]?.count ?? -1) as number;
    };
    const before = await narrowSees();
    const revokeStart = performance.now();
    await admin.delete(Resources.roleBindings, 'fleet-cluster-viewer-narrow', narrowCluster);
    while ((await narrowSees()) !== 0) await new Promise((r) => setTimeout(r, 5));
    console.log(
      `\nrevocation during ingest: narrow saw ${before} objects of ${narrowCluster}; 0 after ${fmt(since(revokeStart))} ms (through HTTPS)`,
    );
  });
  console.log(
    `  churn meanwhile: ${churnMix.churned} objects pushed in ${churnMix.seconds.toFixed(1)} s = ${Math.round(churnMix.churned / churnMix.seconds)} objects/s`,
  );
  const hwm = await api.rss('VmHWM');
  console.log(
    `\nsearch API process: peak RSS ${Math.max(peakRss, hwm).toFixed(0)} MiB (sampled per query, and the kernel's high-water mark)`,
  );
  clearInterval(memorySampler);
  console.log(
    `hub collector process (its own, as in the chart; NODE_OPTIONS '${values['collector-node-options']}'): RSS now ${(await hubCollector.rss('VmRSS')).toFixed(0)} MiB, high-water ${(await hubCollector.rss('VmHWM')).toFixed(0)} MiB`,
  );
  if (memoryAtPeak) {
    const { rss, memory: m } = memoryAtPeak;
    const spaces = Object.entries(m.spaces)
      .filter(([, v]) => v >= 1)
      .map(([k, v]) => `${k} ${v.toFixed(0)}`)
      .join(', ');
    console.log(
      `  at the highest RSS sampled each second (${rss.toFixed(0)} MiB): V8 heap ${m.heapUsed.toFixed(0)} MiB used of ${m.heapTotal.toFixed(0)} held (${spaces}), ${m.external.toFixed(0)} MiB outside it (Buffers, TLS)`,
    );
  }

  // The API again with each --api-variants setting, on the same index: its memory (and latency) under the
  // same query mix, idle and under churn, beside the run's own settings.
  const given = values['api-variants']
    .split(';')
    .filter((v) => v.trim())
    .map(apiVariant);
  if (given.length > 0) {
    // The run's own settings again first, in a process that has not been through the ingest (as each
    // variant's has not), so that the rows compare alike.
    const own = apiVariant(values['api-node-options']);
    const variants = [{ ...own, label: `${own.label} (restarted)` }, ...given];
    await bind(narrowCluster, 'narrow', 'fleet-cluster-viewer');
    const rows = [
      `  ${own.label} (the run's process, through the ingest): idle ${idleRss.toFixed(0)} / churn ${churnRss.toFixed(0)} / high-water ${hwm.toFixed(0)} MiB`,
    ];
    for (const variant of variants) {
      await api.stop();
      api = await startApi(variant, 'already-built');
      const idle = await queryMix(`queries, idle; search API with ${variant.label}`);
      let churn = 0;
      await underChurn(async () => {
        churn = await queryMix(`queries under churn; search API with ${variant.label}`);
      });
      rows.push(
        `  ${variant.label}: idle ${idle.toFixed(0)} / churn ${churn.toFixed(0)} / high-water ${(await api.rss('VmHWM')).toFixed(0)} MiB`,
      );
    }
    console.log(
      `\nsearch API RSS under the query mix by process settings (peak idle / under churn / the process's high-water mark):`,
    );
    for (const row of rows) console.log(row);
  }
  stop.abort();
  await edgeRun.catch(() => {});
  await writeFile(join(dir, 'done'), '');
} finally {
  stop.abort();
  await api?.stop();
  await hubCollector?.stop();
  for (const r of standbys) await r.close();
  await db.close();
  await edge.stop();
  await cp.stop();
  await rm(dir, { recursive: true, force: true });
}
