// Benchmark of the tenant console on a large index: N synthetic objects (default 1,000,000) over 1,000
// namespaces in a real PostgreSQL, the search service and the console's server in this process, a real
// control plane for RBAC, and Debian's Chromium loading the page. A user with `view` in 10 namespaces
// signs in and runs a keyword search through the page, again and again. Prints the page's first
// contentful paint and transferred bytes, and time to results through the page (click to rendered
// rows) next to the same query sent straight to the search API and through the console's backend alone,
// in the same run.
//   node bench/console.ts [--objects 1000000] [--namespaces 1000] [--runs 30] [--keyword apiserver]
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { startControlPlane } from '../devenv/controlplane/launch.ts';
import { ConsoleServer } from '../src/console/server/server.ts';
import { consoleAssets } from '../src/console/web/build.ts';
import { mapLimit } from '../src/kube/access.ts';
import { KubeClient } from '../src/kube/client.ts';
import { silentLogger } from '../src/kube/log.ts';
import { Resources } from '../src/kube/resources.ts';
import { startSearchService } from '../src/search/components/service.ts';
import { migrate } from '../src/search/db/migrations.ts';
import { startEmbedded } from '../src/search/db/postgres.ts';
import { searchUserClusterRoles } from '../src/search/index.ts';
import { Indexer } from '../src/search/indexer/indexer.ts';
import { HubCluster } from '../src/search/model.ts';
import { createCA } from '../src/serving/certs.ts';
import { launchBrowser } from '../test/harness/browser.ts';
import { benchArgs } from './args.ts';
import { syntheticNamespace } from './search-data.ts';

const { values } = benchArgs('bench:console', {
  objects: { type: 'string', default: '1000000' },
  namespaces: { type: 'string', default: '1000' },
  runs: { type: 'string', default: '30' },
  keyword: { type: 'string', default: 'apiserver' },
});
const namespaces = Number(values.namespaces);
const perNamespace = Math.floor(Number(values.objects) / namespaces);
const runs = Number(values.runs);
const ns = (i: number) => `ns-${String(i).padStart(4, '0')}`;
const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

const dir = await mkdtemp(join(tmpdir(), 'tenantkit-bench-console-'));
const { chmod } = await import('node:fs/promises');
await chmod(dir, 0o755);
const cp = await startControlPlane({
  dir: join(dir, 'cp'),
  unsafeNoFsync: true,
  tokenUsers: [{ name: 'narrow', groups: [] }],
  progress: (l) => console.error(l),
});
const db = await startEmbedded({ dir: join(dir, 'pg'), statementTimeoutMs: 60_000, max: 8 });
const stop = new AbortController();
try {
  await migrate(db.pool);
  const admin = KubeClient.fromKubeconfig({ yaml: cp.adminKubeconfig });
  for (const role of searchUserClusterRoles()) {
    await admin.apply(Resources.clusterRoles, role, { fieldManager: 'bench', force: true });
  }
  await mapLimit([...Array(namespaces).keys()], 16, async (i) => {
    await admin.create(Resources.namespaces, { metadata: { name: ns(i) } });
    if (i < 10) {
      await admin.create(Resources.roleBindings, {
        metadata: { name: 'view-narrow', namespace: ns(i) },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'narrow' }],
      } as never);
    }
  });
  const indexer = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
  const t = performance.now();
  for (let i = 0; i < namespaces; i++) {
    const objects = syntheticNamespace(ns(i), i, perNamespace);
    for (let j = 0; j < objects.length; j += 1000) {
      await indexer.write({ cluster: HubCluster, upserts: objects.slice(j, j + 1000) });
    }
    if ((i + 1) % 100 === 0) console.error(`  indexed ${(i + 1) * perNamespace} objects`);
  }
  await db.pool.query('VACUUM ANALYZE');
  console.log(
    `index: ${namespaces * perNamespace} objects in ${((performance.now() - t) / 1000).toFixed(0)} s`,
  );

  const ca = await createCA('bench-console');
  const serving = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
  const search = await startSearchService(
    { client: admin, logger: silentLogger, databaseUrl: db.url, certificate: serving, port: 0 },
    stop.signal,
  );
  const server = await ConsoleServer.start({
    logger: silentLogger,
    certificate: serving,
    kube: { url: new URL(cp.server), caPem: cp.caPem },
    search: { url: new URL(`https://127.0.0.1:${search.port}`), caPem: ca.certPem },
    assetsDir: await consoleAssets(),
  });
  const kubeconfig = parseYaml(await readFile(cp.tokenKubeconfigPath('narrow'), 'utf8')) as {
    users: { user: { token: string } }[];
  };
  const token = kubeconfig.users[0]!.user.token;
  const query = JSON.stringify({
    query: 'query($i:[SearchInput]){search(input:$i){count items}}',
    variables: { i: [{ keywords: [values.keyword], limit: 1000 }] },
  });
  /** The same query as a plain HTTPS client: straight to the search API, or through the console's backend. */
  const direct = (url: string) =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      const req = httpsRequest(
        url,
        {
          method: 'POST',
          ca: ca.certPem,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(performance.now() - started));
        },
      );
      req.on('error', reject);
      req.end(query);
    });

  const browser = await launchBrowser();
  try {
    const paints: number[] = [];
    let transferred = 0;
    for (let i = 0; i < 5; i++) {
      const context = await browser.newContext({ ignoreHTTPSErrors: true });
      const page = await context.newPage();
      const sizes: Promise<number>[] = [];
      page.on('requestfinished', (r) =>
        sizes.push(r.sizes().then((s) => s.responseBodySize + s.responseHeadersSize)),
      );
      await page.goto(server.url, { waitUntil: 'networkidle' });
      transferred = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
      paints.push(
        Number(
          await page.evaluate("performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1"),
        ),
      );
      await context.close();
    }
    console.log(
      `page: first contentful paint p50 ${fmt(pct(paints, 50))} ms (cold browser cache, 5 loads); ${Math.round(transferred / 1024)} KiB transferred (compressed)`,
    );

    const context = await browser.newContext({
      ignoreHTTPSErrors: true,
      viewport: { width: 1280, height: 720 },
    });
    const page = await context.newPage();
    await page.goto(server.url);
    await page.fill('#token', token);
    await page.click('button[type=submit]');
    await page.waitForSelector('#search-query');
    await page.fill('#search-query', values.keyword!);
    const throughPage: number[] = [];
    const straight: number[] = [];
    const backend: number[] = [];
    let count = '';
    for (let r = 0; r < runs + 3; r++) {
      const previous = (await page.getAttribute('#search-results', 'data-seq').catch(() => null)) ?? '';
      const started = performance.now();
      await page.click('#search-submit');
      await page.waitForSelector(`#search-results:not([data-seq="${previous}"]) tr`);
      const ms = performance.now() - started;
      const apiMs = await direct(`https://127.0.0.1:${search.port}/searchapi/graphql`);
      const backendMs = await direct(`${server.url}/api/search/graphql`);
      if (r >= 3) {
        throughPage.push(ms);
        straight.push(apiMs);
        backend.push(backendMs);
      }
      count = (await page.textContent('#search-results p')) ?? '';
    }
    console.log(
      `keyword "${values.keyword}" as a user with view in 10 of ${namespaces} namespaces (${count}), ${runs} runs after 3 warm-up:`,
    );
    console.log(
      `  through the page (click to rows rendered): p50 ${fmt(pct(throughPage, 50))} ms, p95 ${fmt(pct(throughPage, 95))} ms`,
    );
    console.log(
      `  straight to the search API (same query, same run): p50 ${fmt(pct(straight, 50))} ms, p95 ${fmt(pct(straight, 95))} ms`,
    );
    console.log(
      `  through the console's backend, no page (same run): p50 ${fmt(pct(backend, 50))} ms, p95 ${fmt(pct(backend, 95))} ms`,
    );
    console.log(`  ratio page/API at p50: ${(pct(throughPage, 50) / pct(straight, 50)).toFixed(2)}`);
    await context.close();
  } finally {
    await browser.close();
    await server.stop();
  }
} finally {
  stop.abort();
  await db.close();
  await cp.stop();
  await rm(dir, { recursive: true, force: true });
}
