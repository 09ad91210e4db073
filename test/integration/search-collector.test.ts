// The collector against the real control plane, into the real index on PostgreSQL: the initial sync,
// edges the query engine follows, secret values kept out, updates and deletes followed by watch, CRDs
// that come and go, and the resync that removes what was deleted while the collector was stopped.
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installCrds } from '../../src/kube/crds.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { type KubeObject, Resources, type ResourceType, resourceType } from '../../src/kube/resources.ts';
import { freePort } from '../../src/ports.ts';
import {
  Collector,
  type CollectorOptions,
  type CollectorStats,
} from '../../src/search/collector/collector.ts';
import { discover } from '../../src/search/collector/discovery.ts';
import { connect, type Database } from '../../src/search/db/postgres.ts';
import { Indexer } from '../../src/search/indexer/indexer.ts';
import { BackPressureError, HubCluster, type IndexBatch, type IndexSink } from '../../src/search/model.ts';
import { PostgresSearch } from '../../src/search/query/engine.ts';
import { allAccess } from '../harness/access-sets.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { proxyOn, startTestDatabase } from '../harness/postgres.ts';
import { afterEachBreak, apiServerRelay } from '../harness/relay.ts';

const cluster = await TestCluster.connect();
const all = allAccess;

const core = (plural: string, kind: string, namespaced = true) =>
  resourceType('', 'v1', plural, kind, namespaced);
const Types = {
  nodes: core('nodes', 'Node', false),
  services: core('services', 'Service'),
  pvcs: core('persistentvolumeclaims', 'PersistentVolumeClaim'),
  pvs: core('persistentvolumes', 'PersistentVolume', false),
  deployments: {
    group: 'apps',
    version: 'v1',
    plural: 'deployments',
    kind: 'Deployment',
    namespaced: true,
  } as ResourceType,
};

/** Passes batches to the indexer, but only when the test opens the gate, and pushes back on every third. */
class GatedSink implements IndexSink {
  private readonly inner: IndexSink;
  gate: Promise<void> = Promise.resolve();
  writes = 0;
  pushedBack = 0;
  constructor(inner: IndexSink) {
    this.inner = inner;
  }
  async write(batch: IndexBatch): Promise<void> {
    await this.gate;
    if (++this.writes % 3 === 0) {
      this.pushedBack++;
      throw new BackPressureError(5);
    }
    await this.inner.write(batch);
  }
}

describe('search collector', () => {
  let db: Database;
  let indexer: Indexer;
  let engine: PostgresSearch;
  let ns = '';
  let stop = new AbortController();
  let collector: Collector;
  let running: Promise<void> = Promise.resolve();
  const secretValue = `s3cr3t-${randomBytes(8).toString('hex')}`;
  const nodeName = cluster.unique('collector-node');
  const pvName = cluster.unique('collector-pv');
  let initial: CollectorStats | undefined;

  const start = async (options: Partial<CollectorOptions> = {}) => {
    stop = new AbortController();
    collector = new Collector({
      client: cluster.admin,
      sink: indexer,
      cluster: HubCluster,
      hub: true,
      logger: silentLogger,
      batchMaxDelayMs: 50,
      ...options,
    });
    running = collector.run(stop.signal);
    await collector.waitForInitialSync();
  };
  const stopCollector = async () => {
    stop.abort();
    await running;
  };

  /** The data of the row of one object, by kind, namespace and name. */
  const row = async (kind: string, name: string, namespace?: string) =>
    (
      await db.pool.query<{ uid: string; data: Record<string, unknown> }>(
        `SELECT uid, data FROM search.resources
         WHERE cluster = $4 AND data->>'kind' = $1 AND data->>'name' = $2 AND coalesce(data->>'namespace', '') = $3`,
        [kind, name, namespace ?? '', HubCluster],
      )
    ).rows[0];
  const edgesFrom = async (uid: string) =>
    (
      await db.pool.query<{ edge: string }>(
        `SELECT e.edgetype || ' ' || (d.data->>'kind') || '/' || (d.data->>'name') AS edge
         FROM search.edges e JOIN search.resources d ON d.uid = e.destid
         WHERE e.sourceid = $1 ORDER BY 1`,
        [uid],
      )
    ).rows.map((r) => r.edge);

  beforeAll(async () => {
    db = await startTestDatabase();
    indexer = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
    engine = new PostgresSearch({ pool: db.pool, hubCluster: HubCluster, logger: silentLogger });
    ns = await cluster.namespace('collector');
    const admin = cluster.admin;
    await admin.create(Resources.configMaps, {
      metadata: { name: 'settings', namespace: ns, labels: { app: 'web' } },
      data: { color: secretValue },
    } as KubeObject);
    await admin.create(Resources.configMaps, { metadata: { name: 'doomed', namespace: ns } });
    await admin.create(Resources.secrets, {
      metadata: {
        name: 'db',
        namespace: ns,
        annotations: {
          'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({
            stringData: { password: secretValue },
          }),
          owner: 'team-a',
        },
      },
      stringData: { password: secretValue },
    } as KubeObject);
    await admin.create(Types.nodes, {
      metadata: { name: nodeName, labels: { 'node-role.kubernetes.io/edge': '' } },
    });
    cluster.defer(() => admin.delete(Types.nodes, nodeName));
    await admin.create(Types.pvs, {
      metadata: { name: pvName },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        hostPath: { path: '/tmp/collector' },
        persistentVolumeReclaimPolicy: 'Retain',
      },
    } as KubeObject);
    cluster.defer(() => admin.delete(Types.pvs, pvName));
    await admin.create(Types.pvcs, {
      metadata: { name: 'data', namespace: ns },
      spec: {
        accessModes: ['ReadWriteOnce'],
        volumeName: pvName,
        storageClassName: '',
        resources: { requests: { storage: '1Gi' } },
      },
    } as KubeObject);
    await admin.create(Types.services, {
      metadata: { name: 'web', namespace: ns },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, protocol: 'TCP' }] },
    } as KubeObject);
    await admin.create(Types.deployments, {
      metadata: { name: 'web', namespace: ns },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            containers: [{ name: 'app', image: 'nginx', envFrom: [{ configMapRef: { name: 'settings' } }] }],
          },
        },
      },
    } as KubeObject);
    // Pods need the namespace's default service account, which a controller creates shortly.
    await eventually(() =>
      admin
        .create(Resources.pods, {
          metadata: { name: 'web-1', namespace: ns, labels: { app: 'web' } },
          spec: {
            nodeName,
            containers: [
              {
                name: 'app',
                image: 'nginx:1.27',
                env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }],
              },
              { name: 'sidecar', image: 'envoy' },
            ],
            volumes: [
              { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
              { name: 'cfg', configMap: { name: 'settings' } },
            ],
          },
        } as KubeObject)
        .then(() => true),
    );
    const started = Date.now();
    await start();
    initial = collector.stats();
    console.log(`[collector] initial sync of ${initial.types} types in ${Date.now() - started} ms`);
  });

  afterAll(async () => {
    await stopCollector();
    await cluster.cleanup();
    await db?.close();
  });

  it('indexes every object with ACM properties and relationships the query engine follows', async () => {
    // Every discovered type was listed once, none failed.
    expect(initial?.lists.start).toBe(initial?.types);
    const cm = await row('ConfigMap', 'settings', ns);
    expect(cm?.data).toMatchObject({
      kind: 'ConfigMap',
      kind_plural: 'configmaps',
      apiversion: 'v1',
      namespace: ns,
      label: { app: 'web' },
      _hubClusterResource: true,
    });
    expect(cm?.data.apigroup).toBeUndefined();
    expect(cm?.uid.startsWith(`${HubCluster}/`)).toBe(true);

    const pod = await row('Pod', 'web-1', ns);
    expect(pod?.data).toMatchObject({ status: 'Pending', container: ['app', 'sidecar'], restarts: 0 });
    // kube-root-ca.crt comes from the service-account volume that admission projects into every pod.
    expect(await edgesFrom(pod!.uid)).toEqual([
      'attachedTo ConfigMap/kube-root-ca.crt',
      'attachedTo ConfigMap/settings',
      'attachedTo PersistentVolumeClaim/data',
      'attachedTo Secret/db',
      `runsOn Node/${nodeName}`,
    ]);
    const service = await row('Service', 'web', ns);
    expect(service?.data).toMatchObject({ type: 'ClusterIP', port: ['80/TCP'] });
    expect(await edgesFrom(service!.uid)).toEqual(['usedBy Pod/web-1']);
    const pvc = await row('PersistentVolumeClaim', 'data', ns);
    expect(await edgesFrom(pvc!.uid)).toEqual([`boundTo PersistentVolume/${pvName}`]);
    const deployment = await row('Deployment', 'web', ns);
    expect(deployment?.data).toMatchObject({ apigroup: 'apps', apiversion: 'v1', desired: 2, current: 0 });
    expect(await edgesFrom(deployment!.uid)).toEqual(['uses ConfigMap/settings']);
    expect((await row('Node', nodeName))?.data).toMatchObject({ role: ['edge'], kind_plural: 'nodes' });
    expect((await row('Namespace', ns))?.data).toMatchObject({ status: 'Active' });

    const clusterRow = await db.pool.query('SELECT data FROM search.resources WHERE uid = $1', [
      `cluster__${HubCluster}`,
    ]);
    expect(clusterRow.rows[0]?.data).toMatchObject({
      kind: 'Cluster',
      name: HubCluster,
      apigroup: 'internal.open-cluster-management.io',
      kind_plural: 'managedclusterinfos',
      kubernetesVersion: expect.stringMatching(/^v1\./),
    });
    // Events are never collected.
    const events = await db.pool.query(
      `SELECT 1 FROM search.resources WHERE data->>'kind' = 'Event' LIMIT 1`,
    );
    expect(events.rows).toEqual([]);

    // The query engine walks the same edges: the pod's related objects, as ACM clients ask for them.
    const result = await engine.search(
      all,
      {
        filters: [
          { property: 'kind', values: ['Pod'] },
          { property: 'namespace', values: [ns] },
        ],
      },
      { items: true, count: true, related: { items: false, count: true } },
    );
    expect(result.count).toBe(1);
    expect(Object.fromEntries((result.related ?? []).map((r) => [r.kind, r.count]))).toMatchObject({
      ConfigMap: 2,
      Secret: 1,
      PersistentVolumeClaim: 1,
      Node: 1,
      Service: 1,
    });
  });

  it('never indexes secret values, config map data or last-applied-configuration', async () => {
    const secret = await row('Secret', 'db', ns);
    expect(secret?.data).toMatchObject({ type: 'Opaque', annotation: { owner: 'team-a' } });
    const base64 = Buffer.from(secretValue).toString('base64');
    for (const needle of [secretValue, base64, base64.slice(0, 12)]) {
      const found = await db.pool.query(`SELECT uid FROM search.resources WHERE data::text LIKE $1`, [
        `%${needle}%`,
      ]);
      expect(found.rows, needle).toEqual([]);
    }
  });

  it('follows updates and deletes through the watch', async () => {
    const admin = cluster.admin;
    await admin.patch(Resources.configMaps, 'settings', ns, {
      metadata: { labels: { app: 'web', tier: 'front' } },
    });
    await eventually(
      async () => {
        const label = (await row('ConfigMap', 'settings', ns))?.data.label as
          | Record<string, string>
          | undefined;
        return label?.tier === 'front' && label.app === 'web';
      },
      { what: 'label update indexed' },
    );
    await admin.delete(Resources.configMaps, 'doomed', ns);
    await eventually(async () => (await row('ConfigMap', 'doomed', ns)) === undefined, {
      what: 'delete indexed',
    });
    await admin.create(Resources.configMaps, { metadata: { name: 'fresh', namespace: ns } });
    await eventually(async () => (await row('ConfigMap', 'fresh', ns)) !== undefined, {
      what: 'create indexed',
    });

    // The pod no longer matches the service's selector: the edge goes.
    const service = await row('Service', 'web', ns);
    await admin.patch(Resources.pods, 'web-1', ns, { metadata: { labels: { app: 'other' } } });
    await eventually(async () => (await edgesFrom(service!.uid)).length === 0, {
      what: 'selector edge removed',
    });
  });

  it('picks up a CRD created while running, indexes its objects (metadata only), and drops them with it', async () => {
    const group = `g${randomBytes(3).toString('hex')}.collector.test.tenantkit.io`;
    const crdName = `gadgets.${group}`;
    const Gadget: ResourceType = {
      group,
      version: 'v1',
      plural: 'gadgets',
      kind: 'Gadget',
      namespaced: true,
    };
    const typesBefore = collector.stats().types;
    await installCrds(cluster.admin, [
      {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: crdName },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          ],
        },
      } as KubeObject,
    ]);
    cluster.defer(() => cluster.admin.delete(Resources.customResourceDefinitions, crdName));
    await eventually(
      () =>
        cluster.admin
          .create(Gadget, {
            metadata: { name: 'g1', namespace: ns, labels: { size: 'xl' } },
            spec: { apiKey: secretValue },
          } as KubeObject)
          .then(() => true),
      { what: 'the API server serves the new CRD' },
    );
    const gadget = await eventually(() => row('Gadget', 'g1', ns), { what: 'the new type is indexed' });
    expect(gadget.data).toEqual({
      kind: 'Gadget',
      kind_plural: 'gadgets',
      apigroup: group,
      apiversion: 'v1',
      name: 'g1',
      namespace: ns,
      created: expect.any(String),
      label: { size: 'xl' },
      _hubClusterResource: true,
    });
    expect(collector.stats().types).toBe(typesBefore + 1);

    await cluster.admin.delete(Resources.customResourceDefinitions, crdName);
    await eventually(
      async () =>
        (await db.pool.query(`SELECT 1 FROM search.resources WHERE _gr = $1`, [`${group}/gadgets`])).rows
          .length === 0 && collector.stats().types === typesBefore,
      { what: 'the type and its rows are gone' },
    );
  });

  it('discovers the same types through legacy per-group discovery as through aggregated discovery', async () => {
    const key = (t: ResourceType) => `${t.group}/${t.plural}@${t.version}:${t.kind}:${t.namespaced}`;
    const aggregated = (await discover(cluster.admin)).types.map(key).sort();
    const legacy = (await discover(cluster.admin, { aggregated: false })).types.map(key).sort();
    expect(legacy).toEqual(aggregated);
    expect(aggregated).toContain('/pods@v1:Pod:true');
    expect(aggregated).not.toContain('/events@v1:Event:true');
    expect(aggregated.some((k) => k.startsWith('authentication.k8s.io/tokenreviews'))).toBe(false);
    expect(aggregated.some((k) => k.includes('/status@'))).toBe(false);
  });

  it('indexes within 3 s after each of many broken watches in a row, each one after they worked', async () => {
    // As the API server restarting now and then: each break is a first failure. Before, every type's
    // watch waited twice as long as after the break before (0.25, 0.5, 1, 2, 4, 8, 16 s...).
    const { client, relay } = await apiServerRelay(cluster.adminKubeconfigPath);
    const cut = new Collector({
      client,
      sink: indexer,
      cluster: 'cut-test',
      hub: false,
      logger: silentLogger,
      batchMaxDelayMs: 20,
    });
    const halt = new AbortController();
    const run = cut.run(halt.signal);
    const where = await cluster.namespace('cut');
    const indexed = async (name: string) =>
      (
        await db.pool.query(
          `SELECT 1 FROM search.resources
           WHERE cluster = 'cut-test' AND data->>'kind' = 'ConfigMap' AND data->>'namespace' = $1 AND data->>'name' = $2`,
          [where, name],
        )
      ).rowCount === 1;
    try {
      await cut.waitForInitialSync();
      const took = await afterEachBreak(relay, 7, async (i) => {
        await cluster.admin.create(Resources.configMaps, {
          metadata: { name: `after-cut-${i}`, namespace: where },
        });
        await eventually(() => indexed(`after-cut-${i}`), {
          timeoutMs: 90_000,
          intervalMs: 20,
          what: `after-cut-${i} indexed`,
        });
      });
      expect(Math.max(...took), `indexed after ${took.map((t) => Math.round(t)).join(', ')} ms`).toBeLessThan(
        3_000,
      );
    } finally {
      halt.abort();
      await run;
      await relay.close();
    }
  });

  it('holds reading while the index is behind, resends what it pushed back, and loses nothing', async () => {
    const sink = new GatedSink(indexer);
    const slow = new Collector({
      client: cluster.admin,
      sink,
      cluster: 'bp-test',
      hub: false,
      logger: silentLogger,
      batchMaxObjects: 20,
      maxPendingObjects: 40,
      batchMaxDelayMs: 20,
    });
    const halt = new AbortController();
    const run = slow.run(halt.signal);
    try {
      await slow.waitForInitialSync();
      let open!: () => void;
      sink.gate = new Promise((resolve) => {
        open = resolve;
      });
      const many = await cluster.namespace('backpressure');
      for (let i = 0; i < 150; i++) {
        await cluster.admin.create(Resources.configMaps, { metadata: { name: `cm-${i}`, namespace: many } });
      }
      await eventually(() => slow.stats().pauses > 0, { what: 'the watch pauses while the index is behind' });
      open();
      await eventually(
        async () =>
          (
            await db.pool.query(
              `SELECT count(*)::int AS n FROM search.resources
               WHERE cluster = 'bp-test' AND data->>'namespace' = $1 AND data->>'name' LIKE 'cm-%'`,
              [many],
            )
          ).rows[0].n === 150,
        { what: 'every object indexed after the pause' },
      );
      expect(sink.pushedBack).toBeGreaterThan(0);
      // Resumed from where the watch stopped: no relist was needed.
      expect(slow.stats().lists.gone).toBe(0);
    } finally {
      halt.abort();
      await run;
    }
  });

  it('says why it is not ready while the index refuses its batches, keeps them, and catches up once it takes them', async () => {
    // The index reached through a proxy that is cut, as a database whose Pod is gone or cannot write.
    const port = await freePort();
    let proxy = await proxyOn(db.url, port);
    const through = await connect(proxy.url);
    const refusing = new Collector({
      client: cluster.admin,
      sink: new Indexer({ pool: through.pool, logger: silentLogger, hubCluster: HubCluster }),
      cluster: 'refused-test',
      hub: false,
      logger: silentLogger,
      batchMaxDelayMs: 20,
    });
    const halt = new AbortController();
    const run = refusing.run(halt.signal);
    try {
      expect(refusing.notReady()).toBe('the first list of every type is not in the index yet');
      await refusing.waitForInitialSync();
      expect(refusing.notReady()).toBeUndefined();
      await proxy.cut();
      const late = await cluster.namespace('refused');
      await cluster.admin.create(Resources.configMaps, { metadata: { name: 'kept', namespace: late } });
      // A batch in flight when the connection was cut fails with "Connection terminated unexpectedly";
      // the resends after it find nothing listening.
      const reason = await eventually(
        () => {
          const why = refusing.notReady(0);
          return why?.includes('ECONNREFUSED') ? why : undefined;
        },
        { what: 'not ready while refused' },
      );
      expect(reason).toMatch(
        /^the index has refused this collector's batches for \d+ s \(they are kept and resent\): .*ECONNREFUSED/,
      );
      // Within its grace, a refusal does not make it unready.
      expect(refusing.notReady(60_000)).toBeUndefined();
      proxy = await proxyOn(db.url, port);
      await eventually(() => refusing.notReady(0) === undefined, { what: 'ready again', timeoutMs: 30_000 });
      // The refused batch was kept: the object made while the index refused arrives.
      await eventually(
        async () =>
          (
            await db.pool.query(
              `SELECT 1 FROM search.resources WHERE cluster = 'refused-test' AND data->>'namespace' = $1 AND data->>'name' = 'kept'`,
              [late],
            )
          ).rowCount === 1,
        { what: 'the object made while refused, indexed' },
      );
    } finally {
      halt.abort();
      await run;
      await proxy.cut();
      await through.close();
    }
  });

  it('resyncs on start: rows of objects deleted while it was stopped go, new ones come', async () => {
    await stopCollector();
    // A type that went away while the collector was down (e.g. its CRD was deleted).
    await indexer.write({
      cluster: HubCluster,
      upserts: [
        {
          uid: `${HubCluster}/gone-type-object`,
          data: {
            kind: 'Widget',
            kind_plural: 'widgets',
            apigroup: 'gone.example.com',
            apiversion: 'v1',
            name: 'w',
          },
          edges: [],
        },
      ],
    });
    expect(await row('Widget', 'w')).toBeDefined();
    await cluster.admin.delete(Resources.configMaps, 'fresh', ns);
    await cluster.admin.create(Resources.configMaps, { metadata: { name: 'while-stopped', namespace: ns } });
    expect(await row('ConfigMap', 'fresh', ns)).toBeDefined();
    await start({ resyncPeriodMs: 1_000 });
    // The initial sync means every type's resync is committed: no waiting.
    expect(await row('ConfigMap', 'fresh', ns)).toBeUndefined();
    expect(await row('ConfigMap', 'while-stopped', ns)).toBeDefined();
    expect(await row('Widget', 'w')).toBeUndefined();
    expect(collector.stats()).toMatchObject({ synced: true, lists: { gone: 0 } });

    // The periodic resync lists again: a row lost from the index comes back without any change in the cluster.
    const lost = await row('ConfigMap', 'while-stopped', ns);
    await db.pool.query('DELETE FROM search.resources WHERE uid = $1', [lost!.uid]);
    await eventually(async () => (await row('ConfigMap', 'while-stopped', ns)) !== undefined, {
      what: 'the periodic resync restores the row',
    });
    expect(collector.stats().lists.resync).toBeGreaterThan(0);
  });
});
