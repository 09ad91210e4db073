// A managed cluster, end to end: a second real control plane plays the managed cluster, its collector
// (`tenantkit search collector` in code) pushes over HTTPS to the hub's indexer with a hub token that may
// write only its own cluster, and hub users see that cluster's objects exactly as ACM's rule says: who
// may create ManagedClusterViews in the cluster's namespace sees everything there except Secrets.
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane } from '../../devenv/controlplane/launch.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { ManagedClusterType } from '../../src/search/access/managed-clusters.ts';
import { Collector } from '../../src/search/collector/collector.ts';
import { type SearchService, startSearchService } from '../../src/search/components/service.ts';
import { searchServiceRules, searchUserClusterRoles } from '../../src/search/index.ts';
import { clusterRemoveAttributes, clusterWriteAttributes } from '../../src/search/indexer/http.ts';
import { RemoteSink } from '../../src/search/indexer/remote-sink.ts';
import { searchMetrics } from '../../src/search/metrics.ts';
import { BackPressureError } from '../../src/search/model.ts';
import { createCA } from '../../src/serving/certs.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { startTestDatabase } from '../harness/postgres.ts';
import { postGraphQL } from '../harness/search-client.ts';

const hub = await TestCluster.connect();
const db = await startTestDatabase();
const ca = await createCA('search-managed-test-ca');
const stop = new AbortController();
const managedName = hub.unique('edge');
let dir = '';
let edge: ControlPlane;
let service: SearchService;
let url: string;
let collectorToken: string;
let searchClient: KubeClient;
let viewerToken: string;
let collectorRun: Promise<void> = Promise.resolve();

async function search(token: string, filters: { property: string; values: string[] }[]) {
  const reply = await postGraphQL(
    url,
    ca.certPem,
    token,
    'query ($input: [SearchInput]) { search(input: $input) { items } }',
    { input: [{ filters }] },
  );
  const data = reply.body.data as { search: { items: Record<string, string>[] }[] } | undefined;
  if (!data) throw new Error(`HTTP ${reply.status}: ${JSON.stringify(reply.body)}`);
  return data.search[0]!.items;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tenantkit-managed-'));
  edge = await startControlPlane({ dir, unsafeNoFsync: true });
  const sysNs = await hub.namespace('search-sys');
  const { client } = await hub.serviceAccount(sysNs, 'search');
  searchClient = client;
  await hub.grant(
    { kind: 'ServiceAccount', name: 'search', namespace: sysNs },
    { rules: searchServiceRules },
  );
  for (const role of searchUserClusterRoles()) {
    await hub.admin.apply(Resources.clusterRoles, role, { fieldManager: 'managed-test', force: true });
  }
  // On the hub: the ManagedCluster, its namespace, a collector identity that may write only its rows,
  // and a viewer who may create ManagedClusterViews there (and use search).
  await hub.admin.apply(ManagedClusterType, { metadata: { name: managedName }, spec: {} } as KubeObject, {
    fieldManager: 'managed-test',
    force: true,
  });
  hub.defer(() => hub.admin.delete(ManagedClusterType, managedName));
  await hub.admin.create(Resources.namespaces, { metadata: { name: managedName } });
  hub.defer(() => hub.admin.delete(Resources.namespaces, managedName));
  const w = clusterWriteAttributes(managedName);
  collectorToken = (await hub.serviceAccount(managedName, 'collector')).token;
  await hub.grant(
    { kind: 'ServiceAccount', name: 'collector', namespace: managedName },
    {
      rules: [
        { apiGroups: [w.group], resources: [w.resource], resourceNames: [managedName], verbs: [w.verb] },
      ],
    },
  );
  viewerToken = (await hub.serviceAccount(sysNs, 'viewer')).token;
  const viewer = { kind: 'ServiceAccount' as const, name: 'viewer', namespace: sysNs };
  await hub.grant(
    viewer,
    {
      rules: [
        {
          apiGroups: ['view.open-cluster-management.io'],
          resources: ['managedclusterviews'],
          verbs: ['create'],
        },
      ],
    },
    managedName,
  );
  await hub.grant(viewer, { clusterRole: 'tenantkit:search:user' }, sysNs);

  const serving = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
  service = await startSearchService(
    { client, logger: silentLogger, databaseUrl: db.url, certificate: serving },
    stop.signal,
  );
  url = `https://127.0.0.1:${service.port}`;

  // On the managed cluster: a namespace with a config map and a secret.
  const edgeAdmin = KubeClient.fromKubeconfig({ path: edge.adminKubeconfigPath });
  await edgeAdmin.create(Resources.namespaces, { metadata: { name: 'shop' } });
  await edgeAdmin.create(Resources.configMaps, {
    metadata: { name: 'shop-settings', namespace: 'shop' },
    data: { a: 'b' },
  } as KubeObject);
  await edgeAdmin.create(Resources.secrets, {
    metadata: { name: 'shop-secret', namespace: 'shop' },
    stringData: { p: 'hunter2' },
  } as KubeObject);
  const collector = new Collector({
    client: edgeAdmin,
    sink: new RemoteSink({ url, token: () => collectorToken, ca: ca.certPem }),
    cluster: managedName,
    hub: false,
    logger: silentLogger,
  });
  collectorRun = collector.run(stop.signal);
  await collector.waitForInitialSync();
}, 180_000);

afterAll(async () => {
  stop.abort();
  await collectorRun.catch(() => {});
  await service?.done;
  await edge?.stop();
  await db.close();
  await hub.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a managed cluster in the hub index', () => {
  it('is indexed through the hub indexer under its own cluster name', async () => {
    const rows = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM search.resources WHERE cluster = $1',
      [managedName],
    );
    expect(rows.rows[0]!.n).toBeGreaterThan(20);
    const hubRows = await db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM search.resources WHERE data ? '_hubClusterResource' AND cluster = $1",
      [managedName],
    );
    expect(hubRows.rows[0]!.n).toBe(0);
  });

  it("shows the cluster's objects, except Secrets, to who may create ManagedClusterViews there", async () => {
    const items = await eventually(async () => {
      const found = await search(viewerToken, [{ property: 'namespace', values: ['shop'] }]);
      return found.length > 0 ? found : undefined;
    });
    expect(items.every((i) => i.cluster === managedName)).toBe(true);
    expect(items.map((i) => i.name)).toContain('shop-settings');
    expect(items.map((i) => i.kind)).not.toContain('Secret');
    const secrets = await search(viewerToken, [
      { property: 'kind', values: ['Secret'] },
      { property: 'cluster', values: [managedName] },
    ]);
    expect(secrets).toEqual([]);
    // A hub tenant without that right sees nothing of the managed cluster.
    const outsiderNs = await hub.namespace('outsider');
    const { token } = await hub.serviceAccount(outsiderNs, 'tenant');
    await hub.grant(
      { kind: 'ServiceAccount', name: 'tenant', namespace: outsiderNs },
      { clusterRole: 'admin' },
      outsiderNs,
    );
    const seen = await eventually(async () =>
      search(token, [{ property: 'cluster', values: [managedName] }]).catch(() => undefined),
    );
    expect(seen).toEqual([]);
  });

  it("refuses a collector's writes for any other cluster, with the grant it lacks", async () => {
    const forged = new RemoteSink({ url, token: () => collectorToken, ca: ca.certPem });
    const error = await forged.write({ cluster: 'local-cluster', deletes: ['local-cluster/anything'] }).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(BackPressureError);
    expect(error?.message).toMatch(/403.*may not write cluster local-cluster/);
    const smuggled = await forged.write({ cluster: managedName, deletes: ['local-cluster/anything'] }).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(smuggled?.message).toMatch(/400/);
    const bad = new RemoteSink({ url, token: () => 'not-a-token', ca: ca.certPem });
    const unauthenticated = await bad.write({ cluster: managedName }).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(unauthenticated?.message).toMatch(/401/);
  });

  it("answers 409 with the reason to a batch of a collector run the cluster's running collector replaced", async () => {
    // A batch of a run that started before the running collector (a copy a replica took long ago, or a
    // collector Pod that should have stopped): it could undo newer changes, so it is refused.
    const old = new RemoteSink({ url, token: () => collectorToken, ca: ca.certPem });
    const error = await old
      .write({
        cluster: managedName,
        sequence: { stream: '1000000000000.00000000deadbeef', seq: 7 },
        deletes: [`${managedName}/anything`],
      })
      .then(
        () => undefined,
        (err: Error) => err,
      );
    expect(error?.message).toMatch(/409: .*a newer collector of the cluster runs; stop this one/);
    const rows = await db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM search.resources WHERE cluster = $1 AND data->>'name' = 'shop-settings'",
      [managedName],
    );
    expect(rows.rows[0]!.n).toBe(1);
  });

  it('holds at most its limit of batch bytes across clusters, refusing more with 429 until they are applied', async () => {
    // A second API replica of the hub with a small limit (64 KiB), on the same index.
    const smallStop = new AbortController();
    const small = await startSearchService(
      {
        client: searchClient,
        logger: silentLogger,
        databaseUrl: db.url,
        certificate: await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] }),
        api: false,
        maxBatchBytesInFlight: 64 * 1024,
      },
      smallStop.signal,
    );
    const sink = new RemoteSink({
      url: `https://127.0.0.1:${small.port}`,
      token: () => collectorToken,
      ca: ca.certPem,
    });
    const held = {
      uid: `${managedName}/budget-held`,
      data: {
        kind: 'ConfigMap',
        kind_plural: 'configmaps',
        apiversion: 'v1',
        name: 'budget-held',
        namespace: 'shop',
      },
      edges: [],
    };
    await sink.write({ cluster: managedName, upserts: [held] });
    // A batch of 100 KB is let in (it is the only one) and kept waiting on a row lock held here.
    const lock = await db.pool.connect();
    try {
      await lock.query('BEGIN');
      await lock.query('SELECT 1 FROM search.resources WHERE uid = $1 AND cluster = $2 FOR UPDATE', [
        held.uid,
        managedName,
      ]);
      const big = sink.write({
        cluster: managedName,
        upserts: [{ ...held, data: { ...held.data, label: { padding: 'x'.repeat(100_000) } } }],
      });
      await eventually(
        async () =>
          (await db.pool.query("SELECT 1 FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'"))
            .rows.length > 0,
        { what: 'the big batch waiting on the row lock' },
      );
      // The next batch does not fit beside it: 429, saying what the limit is.
      const refused = await sink.write({ cluster: managedName, deletes: [`${managedName}/nothing`] }).then(
        () => undefined,
        (err: Error) => err,
      );
      expect(refused).toBeInstanceOf(BackPressureError);
      expect(refused?.message).toMatch(/retry in 1000 ms/);
      await lock.query('COMMIT');
      await big;
    } finally {
      lock.release();
    }
    // Once applied, the bytes are released and the same batch is taken.
    await sink.write({ cluster: managedName, deletes: [held.uid] });
    expect((await db.pool.query('SELECT 1 FROM search.resources WHERE uid = $1', [held.uid])).rows).toEqual(
      [],
    );
    smallStop.abort();
    await small.done;
  });

  it('removes the cluster from the index for who may delete it, and keeps its running collector out', async () => {
    // Runs last: the cluster is gone from the index afterwards.
    const removal = (token: string) => httpsDelete(`${url}/searchindexer/clusters/${managedName}`, token);
    const count = async () =>
      (
        await db.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM search.resources WHERE cluster = $1',
          [managedName],
        )
      ).rows[0]!.n;
    expect(await count()).toBeGreaterThan(0);
    // The collector may write the cluster, not remove it.
    const refused = await removal(collectorToken);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(
      /may not remove cluster .* grant verb "delete" on resource "clusters"/,
    );
    expect(await count()).toBeGreaterThan(0);

    const sysNs = await hub.namespace('search-sys');
    const { token: janitorToken } = await hub.serviceAccount(sysNs, 'janitor');
    const d = clusterRemoveAttributes(managedName);
    await hub.grant(
      { kind: 'ServiceAccount', name: 'janitor', namespace: sysNs },
      {
        rules: [
          { apiGroups: [d.group], resources: [d.resource], resourceNames: [managedName], verbs: [d.verb] },
        ],
      },
    );
    const before = await count();
    const done = await removal(janitorToken);
    expect(done).toEqual({ status: 200, body: { cluster: managedName, removed: before } });
    expect(await count()).toBe(0);
    expect(await search(viewerToken, [{ property: 'cluster', values: [managedName] }])).toEqual([]);

    // The collector still runs: what it sends next (a new config map's upsert) is refused, not indexed.
    const superseded = async () =>
      (await searchMetrics.indexerBatches.get()).values
        .filter((v) => v.labels.cluster === managedName && v.labels.outcome === 'superseded')
        .reduce((n, v) => n + v.value, 0);
    const refusedBefore = await superseded();
    const edgeAdmin = KubeClient.fromKubeconfig({ path: edge.adminKubeconfigPath });
    await edgeAdmin.create(Resources.configMaps, { metadata: { name: 'after-removal', namespace: 'shop' } });
    await eventually(async () => (await superseded()) > refusedBefore, {
      what: "the running collector's next batch refused",
      timeoutMs: 20_000,
    });
    expect(await count()).toBe(0);
  });
});

function httpsDelete(
  target: string,
  token: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      target,
      { method: 'DELETE', ca: ca.certPem, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}
