// Benchmarks for the namespace-ownership webhooks, on a real control plane:
// 1. Namespace creation by a tenant through the API server, without and with tenantkit's webhooks:
//    latency percentiles and the overhead ratio, measured in the same run.
// 2. The webhook server alone, fed AdmissionReviews recorded from real API-server calls, over HTTPS at a
//    fixed rate by a separate load process (bench/load.ts): p50/p99/max latency and errors.
//   node bench/tenancy.ts [--rate 1000] [--seconds 60] [--namespaces 150] [--apiserver-profile PREFIX]
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { startControlPlane } from '../devenv/controlplane/launch.ts';
import { allCrds } from '../src/crds/index.ts';
import { crdManifest } from '../src/crds/schema.ts';
import { TenantUserCrd } from '../src/crds/tenancy.ts';
import { KubeClient } from '../src/kube/client.ts';
import { installCrds } from '../src/kube/crds.ts';
import { silentLogger } from '../src/kube/log.ts';
import { Manager } from '../src/kube/manager.ts';
import { registry } from '../src/kube/metrics.ts';
import { type KubeObject, Resources } from '../src/kube/resources.ts';
import { createCA } from '../src/serving/certs.ts';
import { tenancy } from '../src/tenancy/index.ts';
import type { AdmissionRequest } from '../src/webhook/admission.ts';
import { registerWebhooks } from '../src/webhook/registration.ts';
import { WebhookServer } from '../src/webhook/server.ts';
import { benchArgs } from './args.ts';
import { perCall, percentiles, samplesOf } from './prom.ts';
import { applyBenchTenant } from './tenant.ts';

const { values } = benchArgs('bench:tenancy', {
  rate: { type: 'string', default: '1000' },
  seconds: { type: 'string', default: '60' },
  namespaces: { type: 'string', default: '150' },
  // Also take kube-apiserver's CPU profile (Go pprof) while each round of creates runs, written to
  // <prefix>-without.pb.gz and <prefix>-with.pb.gz (read them with `go tool pprof -top`).
  'apiserver-profile': { type: 'string' },
});
const here = dirname(fileURLToPath(import.meta.url));
const dir = await mkdtemp(join(tmpdir(), 'tenantkit-bench-'));
const crds = allCrds.map((d) => crdManifest(d) as unknown as KubeObject);
const cp = await startControlPlane({
  dir,
  unsafeNoFsync: true,
  // The control plane serves no profiles unless asked to (a later flag wins over its --profiling=false).
  ...(values['apiserver-profile'] ? { apiserverFlags: ['--profiling=true'] } : {}),
  progress: (l) => console.error(l),
  beforeControllers: (kubeconfig) => installCrds(KubeClient.fromKubeconfig({ yaml: kubeconfig }), crds),
});
const admin = KubeClient.fromKubeconfig({ yaml: cp.adminKubeconfig });
const apply = { fieldManager: 'bench', force: true };
const stop = new AbortController();

/** kube-apiserver's CPU profile over `seconds` (its /debug/pprof endpoint, as the admin). */
async function apiserverProfile(seconds: number): Promise<Buffer> {
  const config = parseYaml(cp.adminKubeconfig) as {
    clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
    users: { user: { 'client-certificate-data': string; 'client-key-data': string } }[];
  };
  const pem = (b64: string) => Buffer.from(b64, 'base64');
  const { cluster } = config.clusters[0]!;
  const { user } = config.users[0]!;
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${cluster.server}/debug/pprof/profile?seconds=${seconds}`,
      {
        ca: pem(cluster['certificate-authority-data']),
        cert: pem(user['client-certificate-data']),
        key: pem(user['client-key-data']),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(chunks))
            : reject(new Error(`pprof: HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Times the creates; with --apiserver-profile, kube-apiserver's CPU profile over them goes to a file. */
async function profiledCreates(client: KubeClient, prefix: string, count: number, label: string) {
  const file = values['apiserver-profile'];
  if (!file) return timeCreates(client, prefix, count);
  // A profile covers whole seconds: it starts with the creates and ends before the last of them.
  const samples = timeCreates(client, prefix, count);
  const profile = apiserverProfile(Math.max(1, Math.floor((count * 3) / 1000)));
  const [result, data] = await Promise.all([samples, profile]);
  await writeFile(`${file}-${label}.pb.gz`, data);
  return result;
}

async function timeCreates(client: KubeClient, prefix: string, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await client.create(Resources.namespaces, {
      metadata: { name: `${prefix}-${i}`, labels: { 'appuio.io/organization': 'bench-org' } },
    });
    samples.push(performance.now() - started);
  }
  return samples;
}

try {
  await admin.apply(Resources.namespaces, { metadata: { name: 'tenantkit-system' } }, apply);
  await applyBenchTenant(admin, {
    config: { fairUseRatios: [{ memoryPerCpu: '4Gi' }] },
    rules: [{ apiGroups: [''], resources: ['namespaces', 'pods'], verbs: ['*'] }],
  });
  await admin.apply(
    TenantUserCrd.type,
    {
      metadata: { name: 'alice' },
      spec: { username: 'alice', defaultOrganization: 'bench-org' },
    } as KubeObject,
    apply,
  );
  const alice = KubeClient.fromKubeconfig({ yaml: await cp.userKubeconfig('alice', ['tenants']) });
  const count = Number(values.namespaces);

  // Baseline: no tenantkit webhooks registered.
  await timeCreates(alice, 'warmup', 10);
  const without = await profiledCreates(alice, 'plain', count, 'without');

  // Webhooks in this process, recording every request they receive.
  const manager = new Manager({ client: admin, logger: silentLogger, component: 'bench' });
  const definitions = (
    (await tenancy.webhooks?.({ client: admin, manager, namespace: 'tenantkit-system' })) ?? []
  ).map((d) => ({
    ...d,
    handler: (req: AdmissionRequest, signal: AbortSignal) => {
      if (recording) recorded.push({ path: `/${d.name}`, request: req });
      return d.handler(req, signal);
    },
  }));
  const recorded: { path: string; request: AdmissionRequest }[] = [];
  let recording = true;
  const running = manager.start(stop.signal);
  while (!manager.hasSynced()) await new Promise((r) => setTimeout(r, 20));
  const ca = await createCA('bench-ca');
  const server = new WebhookServer({
    logger: silentLogger,
    certificate: await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] }),
  });
  server.register(...definitions);
  const port = await server.start();
  await registerWebhooks(admin, 'bench', definitions, { url: `https://127.0.0.1:${port}` }, ca.certPem);
  // Wait until the API server calls us.
  for (let i = 0; recorded.length === 0; i++) {
    await alice.create(Resources.namespaces, { metadata: { name: `probe-${i}` } });
  }
  await timeCreates(alice, 'warm', 10);
  // Where the time goes: the API server's view of each call against this process' own.
  const apiFamily = 'apiserver_admission_webhook_admission_duration_seconds';
  const ours =
    /^tenantkit_(webhook_duration_seconds_|https_connections_total|https_request_duration_seconds_)/;
  const readings = async () => ({
    api: samplesOf(await admin.request<string>('GET', '/metrics', { text: true }), apiFamily),
    ours: samplesOf(await registry.metrics(), ours, (series) => series.replace(/,?allowed="[^"]*"/, '')),
  });
  const before = await readings();
  const withWebhooks = await profiledCreates(alice, 'owned', count, 'with');
  const after = await readings();

  // Record the other reviews tenants cause: label edits and pods (with and without defaults).
  while (!(await admin.get(Resources.serviceAccounts, 'default', 'owned-0')))
    await new Promise((r) => setTimeout(r, 100));
  for (let i = 0; i < 20; i++) {
    await alice.patch(Resources.namespaces, `owned-${i}`, undefined, {
      metadata: { labels: { 'appuio.io/organization': 'bench-org' } },
    });
    await alice.create(Resources.pods, {
      metadata: { name: `job-${i}`, namespace: 'owned-0' },
      spec: {
        restartPolicy: i % 2 ? 'Never' : 'Always',
        containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu: '1', memory: '1Gi' } } }],
      },
    } as KubeObject);
  }
  // Steady-state mix: reviews answered from caches. Namespace creates are left out: their check reserves
  // quota in a ledger on the API server on purpose (that is what makes it race-free), and its cost is in
  // the end-to-end figure above.
  const reviews = recorded
    .filter((r) => r.path !== '/namespace-create')
    .map((r) => ({
      path: r.path,
      body: JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: r.request,
      }),
    }));
  recording = false;
  const kinds = [...new Set(reviews.map((r) => r.path))].sort();
  const file = join(dir, 'reviews.json');
  await writeFile(file, JSON.stringify(reviews));

  const a = percentiles(without);
  const b = percentiles(withWebhooks);
  console.log(`namespace creation by a tenant through the API server (${count} sequential creates each)`);
  console.log(
    `  without tenantkit webhooks: mean ${a.mean.toFixed(2)} ms, p50 ${a.p50.toFixed(2)} ms, p99 ${a.p99.toFixed(2)} ms`,
  );
  console.log(
    `  with tenantkit webhooks:    mean ${b.mean.toFixed(2)} ms, p50 ${b.p50.toFixed(2)} ms, p99 ${b.p99.toFixed(2)} ms`,
  );
  console.log(`  overhead ratio (mean):      ${(b.mean / a.mean).toFixed(2)}x`);
  console.log('  where it went (mean per call):');
  for (const row of perCall(before.api, after.api, apiFamily, 'name'))
    console.log(`    as kube-apiserver saw it, ${row.name}: ${row.calls} calls, ${row.meanMs.toFixed(2)} ms`);
  for (const row of perCall(before.ours, after.ours, 'tenantkit_https_request_duration_seconds', 'path'))
    console.log(`    headers to reply sent, ${row.name}: ${row.calls} calls, ${row.meanMs.toFixed(2)} ms`);
  for (const row of perCall(before.ours, after.ours, 'tenantkit_webhook_duration_seconds', 'webhook'))
    console.log(`    inside the handler, ${row.name}: ${row.calls} calls, ${row.meanMs.toFixed(2)} ms`);
  const connections = (m: Map<string, number>) => m.get('tenantkit_https_connections_total') ?? 0;
  console.log(
    `    TLS connections accepted meanwhile: ${connections(after.ours) - connections(before.ours)}`,
  );

  const load = spawn(
    process.execPath,
    [
      join(here, 'load.ts'),
      `--port=${port}`,
      `--reviews=${file}`,
      `--rate=${values.rate}`,
      `--seconds=${values.seconds}`,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  load.stdout.on('data', (c) => {
    out += c;
  });
  const rssBefore = process.memoryUsage().rss;
  await new Promise((r) => load.once('exit', r));
  const result = JSON.parse(out) as Record<string, number>;
  console.log(
    `webhook server alone: ${reviews.length} recorded reviews (${kinds.join(', ')}) at ${values.rate}/s for ${values.seconds} s`,
  );
  console.log(`  sent ${result.sent}, errors ${result.errors}, achieved ${result.achievedRate}/s`);
  console.log(
    `  latency p50 ${result.p50} ms, p90 ${result.p90} ms, p99 ${result.p99} ms, max ${result.max} ms`,
  );
  console.log(
    `  server RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB (growth during load ${((process.memoryUsage().rss - rssBefore) / 2 ** 20).toFixed(1)} MiB)`,
  );
  await server.stop();
  stop.abort();
  await running;
} finally {
  stop.abort();
  await cp.stop();
  await rm(dir, { recursive: true, force: true });
}
