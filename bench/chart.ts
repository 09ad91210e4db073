import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { helmFor } from '../devenv/helm/build.ts';
import { repoRoot } from '../devenv/images/build.ts';
import { mapLimit } from '../src/kube/access.ts';
import { KubeClient } from '../src/kube/client.ts';
import { type KubeObject, Resources } from '../src/kube/resources.ts';
import type { AdmissionReview } from '../src/webhook/admission.ts';
import { benchArgs } from './args.ts';
import { machineCpu, processCpu } from './cpu.ts';
import { type Floor, type FloorRuntime, startFloor } from './floor.ts';
import { podMemory } from './kubelet.ts';
import { helmInstallArgs, importChartImages, requireNode, startBenchCluster } from './node.ts';
import { addGrowth, perCall, percentiles, samplesOf } from './prom.ts';
import { applyBenchTenant } from './tenant.ts';
import { webhookSwitch } from './webhooks.ts';

const { values } = benchArgs('bench:chart', {
  creates: { type: 'string', default: '200' },
  // The creates of each kind, with and without the webhooks, are split into this many alternating blocks.
  blocks: { type: 'string', default: '4' },
  burst: { type: 'string', default: '400' },
  concurrency: { type: 'string', default: '16' },
  // Creates of each kind, with and without the webhooks, at a tenant's pace: each after the release
  // finished reacting to the one before (`--pace-ms` apart), so that nothing waits for a busy core.
  paced: { type: 'string', default: '100' },
  'pace-ms': { type: 'string', default: '150' },
  // Chart values on top of the bench's, e.g. --set webhooks.resources.requests.cpu=500m (an A/B).
  set: { type: 'string', multiple: true, default: [] },
});
requireNode('bench/chart.ts');
const say = (line: string) => console.error(line);
const count = Number(values.creates);
const organizationLabel = 'appuio.io/organization';
const apply = { fieldManager: 'bench', force: true };

const fmt = (p: ReturnType<typeof percentiles>) =>
  `mean ${p.mean.toFixed(2)} ms, p50 ${p.p50.toFixed(2)} ms, p99 ${p.p99.toFixed(2)} ms, max ${p.max.toFixed(1)} ms`;

/** Latencies of `times` calls in sequence, each `gapMs` after the previous one ended. */
async function timed(times: number, one: (i: number) => Promise<unknown>, gapMs = 0): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    const started = performance.now();
    await one(i);
    samples.push(performance.now() - started);
  }
  return samples;
}

/** Waits (up to 15 s) until the machine's cores are less than a third busy over half a second. */
async function quiet(): Promise<void> {
  for (let waited = 0; waited < 15_000; waited += 500) {
    const before = await machineCpu();
    await new Promise((r) => setTimeout(r, 500));
    const after = await machineCpu();
    if ((after.busy - before.busy) / (after.total - before.total) < 1 / 3) return;
  }
}

/** The webhook server's phases per call (body read, checks, reply written) and its handler's time. */
function webhookPhases(grown: Map<string, number>): void {
  const phase = 'tenantkit_webhook_phase_seconds';
  for (const row of perCall(new Map(), grown, 'tenantkit_webhook_duration_seconds', 'webhook')) {
    const parts = ['body', 'checks', 'reply'].map((p) => {
      const only = new Map(
        [...grown].filter(([k]) => k.includes(`phase="${p}"`) && k.includes(`webhook="${row.name}"`)),
      );
      return `${p} ${(perCall(new Map(), only, phase, 'webhook')[0]?.meanMs ?? 0).toFixed(2)}`;
    });
    console.log(
      `  webhook Pod phases, ${row.name} (ms per call): ${parts.join(', ')}, handler ${row.meanMs.toFixed(2)}`,
    );
  }
}

/** kube-apiserver's counters and sums of one metric family, by their label sets. */
async function scrape(admin: KubeClient, family: string): Promise<Map<string, number>> {
  return samplesOf(await admin.request<string>('GET', '/metrics', { text: true }), family);
}

/** tenantkit's own webhook metric family, summed over the webhook Pods (scraped on their Pod IPs). */
async function scrapeWebhookPods(admin: KubeClient, namespace: string, release: string) {
  const secret = await admin.get<KubeObject & { data: Record<string, string> }>(
    Resources.secrets,
    `${release}-webhook-tls`,
    namespace,
  );
  const ca = Buffer.from(secret?.data['ca.crt'] ?? '', 'base64').toString();
  const pods = await admin.list<KubeObject & { status?: { podIP?: string } }>(Resources.pods, {
    namespace,
    labelSelector: `app.kubernetes.io/instance=${release},app.kubernetes.io/component=webhooks`,
  });
  const total = new Map<string, number>();
  for (const pod of pods.items) {
    const metrics = await new Promise<string>((resolve, reject) => {
      const req = httpsRequest(
        `https://${pod.status?.podIP}:9443/metrics`,
        { ca, servername: `${release}-webhooks.${namespace}.svc` },
        (res) => {
          text(res).then(resolve, reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    samplesOf(
      metrics,
      /^tenantkit_(webhook_duration_seconds_|webhook_phase_seconds_|https_connections_total|https_request_duration_seconds_)/,
      (series) => series.replace(/,?allowed="[^"]*"/, ''),
      total,
    );
  }
  return total;
}

/** A tenant's Pod create as kube-apiserver asks the webhooks about it. */
function podReview(uid: string, namespace: string, image: string): AdmissionReview {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace,
      operation: 'CREATE',
      userInfo: { username: 'alice', groups: ['tenants', 'system:authenticated'] },
      object: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: uid, namespace },
        spec: { containers: [{ name: 'c', image }] },
      } as KubeObject,
      dryRun: false,
    },
  };
}

/**
 * Latencies of `times` Pod AdmissionReviews posted one after another to the release's webhook Service
 * (its ClusterIP, through kube-proxy to either Pod) on one kept-alive TLS connection, as kube-apiserver
 * sends them, `gapMs` apart; checks each is allowed.
 */
async function throughService(
  admin: KubeClient,
  namespace: string,
  release: string,
  podsNamespace: string,
  image: string,
  times: number,
  gapMs: number,
): Promise<number[]> {
  const service = await admin.get<KubeObject & { spec: { clusterIP: string } }>(
    Resources.services,
    `${release}-webhooks`,
    namespace,
  );
  const secret = await admin.get<KubeObject & { data: Record<string, string> }>(
    Resources.secrets,
    `${release}-webhook-tls`,
    namespace,
  );
  const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
  const post = (uid: string) =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify(podReview(uid, podsNamespace, image));
      const req = httpsRequest(
        `https://${service?.spec.clusterIP}:443/pod-defaults`,
        {
          method: 'POST',
          agent,
          ca: Buffer.from(secret?.data['ca.crt'] ?? '', 'base64').toString(),
          servername: `${release}-webhooks.${namespace}.svc`,
          headers: { 'Content-Type': 'application/json' },
        },
        (res) => {
          text(res).then((reply) => {
            if (res.statusCode === 200 && JSON.parse(reply).response?.allowed === true) resolve();
            else
              reject(
                new Error(`review ${uid} through the Service: ${res.statusCode} ${reply.slice(0, 300)}`),
              );
          }, reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  try {
    return await timed(times, (i) => post(`review-${i}`), gapMs);
  } finally {
    agent.destroy();
  }
}

const bench = await startBenchCluster({ node: true });
const { admin, cp, dir } = bench;
const node = bench.node!;
try {
  const images = await importChartImages(node);
  const helm = await helmFor(cp.adminKubeconfigPath, join(dir, 'helm'), say);
  const chart = join(repoRoot, 'deploy', 'helm', 'tenantkit');
  const release = 'bench';
  const namespace = 'tenantkit-system';
  await admin.apply(Resources.namespaces, { metadata: { name: 'velero' } }, apply);
  const settings = [...images.values, 'search.replicas=1', ...values.set];
  /** When each workload of the release first had all its replicas ready, in s from `started`. */
  const watchReady = (started: number) => {
    const ready = new Map<string, number>();
    let watching = true;
    let reported = false;
    const done = (async () => {
      while (watching) {
        for (const type of [Resources.deployments, Resources.statefulSets]) {
          const list = await admin
            .list<KubeObject & { spec: { replicas?: number }; status?: { readyReplicas?: number } }>(type, {
              namespace,
            })
            .catch(() => ({ items: [] }));
          for (const w of list.items) {
            const name = w.metadata.name!.replace(`${release}-`, '');
            if (!ready.has(name) && (w.status?.readyReplicas ?? 0) === (w.spec.replicas ?? 1)) {
              ready.set(name, (performance.now() - started) / 1000);
            }
          }
        }
        // A component still not ready after a minute: its Pods' last log lines say why.
        if (!reported && performance.now() - started > 60_000) {
          reported = true;
          const pods = await admin
            .list<KubeObject>(Resources.pods, { namespace })
            .catch(() => ({ items: [] }));
          for (const pod of pods.items) {
            const component = pod.metadata.labels?.['app.kubernetes.io/component'] ?? '';
            if (!component || ready.has(component)) continue;
            const log = await admin
              .request<string>('GET', `/api/v1/namespaces/${namespace}/pods/${pod.metadata.name}/log`, {
                text: true,
                query: { tailLines: 15 },
              })
              .catch((err: Error) => err.message);
            say(`  ${pod.metadata.name} not ready after 60 s; its log ends:\n${log}`);
          }
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    return async () => {
      watching = false;
      await done;
      return [...ready].map(([k, v]) => `${k} ${v.toFixed(1)} s`).join(', ');
    };
  };
  const timelines: string[] = [];
  const install = async () => {
    const started = performance.now();
    const wallStarted = Math.floor(Date.now() / 1000) * 1000;
    const stopWatching = watchReady(started);
    await helm(helmInstallArgs(release, chart, namespace, settings));
    const seconds = (performance.now() - started) / 1000;
    timelines.push(await stopWatching());
    // What held an install up, in the cluster's words.
    const events = await admin.list<KubeObject & { type?: string; reason?: string; message?: string }>(
      Resources.coreEvents,
      { namespace },
    );
    const warnings = new Set(
      events.items
        .filter((e) => e.type === 'Warning' && Date.parse(e.metadata.creationTimestamp ?? '') >= wallStarted)
        .map((e) => `${e.reason}: ${e.message}`),
    );
    for (const w of warnings) say(`  warning during the install: ${w}`);
    return seconds;
  };
  const uninstall = () => helm(['uninstall', release, '-n', namespace, '--wait', '--timeout', '5m']);

  // The guardrails and one tenant: organization member, may create namespaces and (in bench-pods) Pods.
  await applyBenchTenant(admin, {
    config: { organizationLabel, defaultNamespaceQuota: 100000 },
    rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['create'] }],
  });
  const podsNamespace = 'bench-pods';
  await admin.apply(
    Resources.namespaces,
    { metadata: { name: podsNamespace, labels: { [organizationLabel]: 'bench-org' } } },
    apply,
  );
  await admin.apply(
    Resources.roleBindings,
    {
      metadata: { name: 'alice-admin', namespace: podsNamespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
    } as KubeObject,
    apply,
  );
  const alice = KubeClient.fromKubeconfig({ yaml: await cp.userKubeconfig('alice', ['tenants']) });
  const createNamespace = (name: string) =>
    alice.create(Resources.namespaces, { metadata: { name, labels: { [organizationLabel]: 'bench-org' } } });
  // Pending Pods (a node selector no node has): admission and storage, not containers, are measured.
  const createPod = (name: string) =>
    alice.create(Resources.pods, {
      metadata: { name, namespace: podsNamespace },
      spec: {
        nodeSelector: { 'bench.tenantkit.io/nowhere': 'true' },
        containers: [
          { name: 'c', image: node.workloadImage, resources: { requests: { cpu: '100m', memory: '128Mi' } } },
        ],
      },
    } as KubeObject);
  const round = async (label: string) => {
    await timed(10, (i) => createNamespace(`${label}-warmup-${i}`));
    const namespaces = await timed(count, (i) => createNamespace(`${label}-${i}`));
    await timed(10, (i) => createPod(`${label}-warmup-${i}`));
    const pods = await timed(count, (i) => createPod(`${label}-${i}`));
    return { namespaces: percentiles(namespaces), pods: percentiles(pods) };
  };

  say('baseline: no tenantkit');
  const without = await round('plain');
  say('the floors: allow-all webhooks (Go, and Node in the tenantkit image) as 2 Pods behind a Service each');
  const floors: [FloorRuntime, Floor][] = [
    ['go', await startFloor(admin, 'go', node.workloadImage)],
    ['node', await startFloor(admin, 'node', images.tenantkit)],
  ];

  say('helm install (cold)');
  const cold = await install();
  await uninstall();
  say('helm install (warm)');
  const warm = await install();

  const idle = await podMemory(admin, node.name, namespace, release);
  const family = 'apiserver_admission_webhook_admission_duration_seconds';
  const stepFamily = 'apiserver_admission_step_admission_duration_seconds';
  // The same release, its controllers, search collector and database running, with and without its
  // webhook configurations: the same background load, so the difference is the webhooks' alone. The two
  // alternate in blocks (hooked, unhooked, unhooked, hooked, ...), so that neither gets the quieter
  // minutes once the release settled after its install.
  const hooks = await webhookSwitch(admin, release);
  const { saved } = hooks;
  const setHooks = (on: boolean) => hooks.set(on);
  const grown = {
    calls: new Map<string, number>(),
    steps: new Map<string, number>(),
    pods: new Map<string, number>(),
  };
  const offCalls = new Map<string, number>();
  const pacedGrown = { calls: new Map<string, number>(), pods: new Map<string, number>() };
  const floorCalls = { go: new Map<string, number>(), node: new Map<string, number>() };
  const mutating = saved.find(([type]) => type === Resources.mutatingWebhookConfigurations)?.[1];
  if (!mutating) throw new Error(`the release has no MutatingWebhookConfiguration ${release}`);
  // CPU over the namespace creates: each process' seconds, and the machine's busy and total core-seconds.
  const cpu = {
    hooked: { byProcess: new Map<string, number>(), busy: 0, total: 0 },
    unhooked: { byProcess: new Map<string, number>(), busy: 0, total: 0 },
  };
  const samples = {
    hooked: { namespaces: [] as number[], pods: [] as number[] },
    unhooked: { namespaces: [] as number[], pods: [] as number[] },
  };
  const paced = {
    hooked: { namespaces: [] as number[], pods: [] as number[] },
    unhooked: { namespaces: [] as number[], pods: [] as number[] },
    go: { namespaces: [] as number[], pods: [] as number[] },
    node: { namespaces: [] as number[], pods: [] as number[] },
  };
  const pacedPerBlock = Math.ceil(Number(values.paced) / Number(values.blocks));
  const paceMs = Number(values['pace-ms']);
  // The webhooks serve once their endpoints are in the Service; the first calls may still be slow.
  await timed(10, (i) => createNamespace(`warmup-${i}`));
  await timed(10, (i) => createPod(`warmup-${i}`));
  const blocks = Number(values.blocks);
  const perBlock = Math.ceil(count / blocks);
  for (let b = 0; b < blocks; b++) {
    for (const on of b % 2 ? [false, true] : [true, false]) {
      await setHooks(on);
      const mode = on ? 'hooked' : 'unhooked';
      const before = [await scrape(admin, family), await scrape(admin, stepFamily)];
      const podsBefore = await scrapeWebhookPods(admin, namespace, release);
      const cpuBefore = [await processCpu(), await machineCpu()] as const;
      samples[mode].namespaces.push(...(await timed(perBlock, (i) => createNamespace(`${mode}-${b}-${i}`))));
      const cpuAfter = [await processCpu(), await machineCpu()] as const;
      addGrowth(cpu[mode].byProcess, cpuBefore[0], cpuAfter[0]);
      cpu[mode].busy += cpuAfter[1].busy - cpuBefore[1].busy;
      cpu[mode].total += cpuAfter[1].total - cpuBefore[1].total;
      samples[mode].pods.push(...(await timed(perBlock, (i) => createPod(`${mode}-${b}-${i}`))));
      const calls = await scrape(admin, family);
      if (on) {
        addGrowth(grown.calls, before[0]!, calls);
        addGrowth(grown.steps, before[1]!, await scrape(admin, stepFamily));
        addGrowth(grown.pods, podsBefore, await scrapeWebhookPods(admin, namespace, release));
      } else {
        addGrowth(offCalls, before[0]!, calls);
      }
      if (pacedPerBlock <= 0) continue;
      const pacedBefore = [await scrape(admin, family), await scrapeWebhookPods(admin, namespace, release)];
      await quiet();
      const one = (kind: 'namespaces' | 'pods') => (i: number) =>
        kind === 'pods' ? createPod(`${mode}-p${b}-${i}`) : createNamespace(`${mode}-p${b}-${i}`);
      for (const kind of ['namespaces', 'pods'] as const) {
        paced[mode][kind].push(...(await timed(pacedPerBlock, one(kind), paceMs)));
      }
      const pacedCalls = await scrape(admin, family);
      if (on) {
        addGrowth(pacedGrown.calls, pacedBefore[0]!, pacedCalls);
        addGrowth(pacedGrown.pods, pacedBefore[1]!, await scrapeWebhookPods(admin, namespace, release));
      } else {
        addGrowth(offCalls, pacedBefore[0]!, pacedCalls);
        // The floors, with tenantkit's webhooks still off: the same creates through an allow-all webhook.
        for (const [runtime, floor] of b % 2 ? [...floors].reverse() : floors) {
          await floor.set(true, mutating, ['namespaces', 'pods']);
          const callsBefore = await scrape(admin, family);
          await quiet();
          for (const kind of ['namespaces', 'pods'] as const) {
            const create = kind === 'pods' ? createPod : createNamespace;
            const name = (i: number) => `floor-${runtime}-p${b}-${i}`;
            paced[runtime][kind].push(...(await timed(pacedPerBlock, (i) => create(name(i)), paceMs)));
          }
          addGrowth(floorCalls[runtime], callsBefore, await scrape(admin, family));
          await floor.set(false, mutating, []);
        }
      }
    }
  }
  await setHooks(true);
  const withChart = {
    namespaces: percentiles(samples.hooked.namespaces),
    pods: percentiles(samples.hooked.pods),
  };
  const unhooked = {
    namespaces: percentiles(samples.unhooked.namespaces),
    pods: percentiles(samples.unhooked.pods),
  };
  // The webhook alone through its Service, as kube-apiserver reaches it (p99 included), paced and back to back.
  await quiet();
  const viaServicePaced = percentiles(
    await throughService(admin, namespace, release, podsNamespace, node.workloadImage, 200, 20),
  );
  const viaService = percentiles(
    await throughService(admin, namespace, release, podsNamespace, node.workloadImage, 1000, 0),
  );
  const strayCalls = perCall(new Map(), offCalls, family, 'name').reduce((n, row) => n + row.calls, 0);

  // A burst of concurrent tenant requests, memory sampled throughout.
  const peak = new Map<string, number>();
  let bursting = true;
  const sampler = (async () => {
    while (bursting) {
      for (const [k, v] of await podMemory(admin, node.name, namespace, release))
        peak.set(k, Math.max(peak.get(k) ?? 0, v));
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  const burstStarted = performance.now();
  const burst = Number(values.burst);
  await mapLimit(
    Array.from({ length: burst }, (_, i) => i),
    Number(values.concurrency),
    (i) => (i % 2 ? createNamespace(`burst-${i}`) : createPod(`burst-${i}`)),
  );
  const burstSeconds = (performance.now() - burstStarted) / 1000;
  bursting = false;
  await sampler;

  console.log(`helm install --wait, every Deployment and the bundled database Ready (one node, 2 cores):`);
  console.log(`  cold ${cold.toFixed(1)} s, warm ${warm.toFixed(1)} s`);
  console.log(`  ready (cold): ${timelines[0]}`);
  console.log(`  ready (warm): ${timelines[1]}`);
  console.log(
    `a tenant's requests through the API server, sequential, ${blocks} blocks of ${perBlock} with the webhooks and ${blocks} without, alternating:`,
  );
  console.log(`  namespace create without tenantkit: ${fmt(without.namespaces)}`);
  console.log(`  namespace create, in-cluster webhooks: ${fmt(withChart.namespaces)}`);
  console.log(`  ratio (mean) ${(withChart.namespaces.mean / without.namespaces.mean).toFixed(2)}x`);
  console.log(`  Pod create without tenantkit: ${fmt(without.pods)}`);
  console.log(`  Pod create, in-cluster webhooks: ${fmt(withChart.pods)}`);
  console.log(`  ratio (mean) ${(withChart.pods.mean / without.pods.mean).toFixed(2)}x`);
  console.log(
    `the same release running, its ${saved.length} webhook configurations removed (same background load; ${strayCalls} webhook calls seen meanwhile):`,
  );
  console.log(`  namespace create: ${fmt(unhooked.namespaces)}`);
  console.log(
    `  ratio (mean) webhooks / no webhooks ${(withChart.namespaces.mean / unhooked.namespaces.mean).toFixed(2)}x`,
  );
  console.log(`  Pod create: ${fmt(unhooked.pods)}`);
  console.log(
    `  ratio (mean) webhooks / no webhooks ${(withChart.pods.mean / unhooked.pods.mean).toFixed(2)}x`,
  );
  if (paced.hooked.namespaces.length > 0) {
    console.log(
      `at a tenant's pace (${paced.hooked.namespaces.length} creates of each kind each way, ${paceMs} ms apart, the release idle in between):`,
    );
    const ratio = (a: ReturnType<typeof percentiles>, b: ReturnType<typeof percentiles>) =>
      `mean ${(a.mean / b.mean).toFixed(2)}x, p50 ${(a.p50 / b.p50).toFixed(2)}x`;
    for (const kind of ['namespaces', 'pods'] as const) {
      const [a, b] = [percentiles(paced.hooked[kind]), percentiles(paced.unhooked[kind])];
      const what = kind === 'pods' ? 'Pod' : 'namespace';
      console.log(`  ${what} create, webhooks: ${fmt(a)}`);
      console.log(`  ${what} create, no webhooks: ${fmt(b)}`);
      console.log(`  ratio webhooks / no webhooks: ${ratio(a, b)}`);
      for (const [runtime] of floors) {
        const f = percentiles(paced[runtime][kind]);
        console.log(`  ${what} create, an allow-all ${runtime} webhook instead: ${fmt(f)}`);
        console.log(
          `    ratio ${runtime} floor / no webhooks: ${ratio(f, b)}; webhooks / floor: ${ratio(a, f)}`,
        );
      }
    }
    for (const [runtime] of floors) {
      for (const row of perCall(new Map(), floorCalls[runtime], family, 'name')) {
        console.log(
          `  kube-apiserver waits for ${row.name}: ${row.calls} calls, ${row.meanMs.toFixed(2)} ms`,
        );
      }
    }
    for (const row of perCall(new Map(), pacedGrown.calls, family, 'name')) {
      console.log(`  kube-apiserver waits for ${row.name}: ${row.calls} calls, ${row.meanMs.toFixed(2)} ms`);
    }
    for (const row of perCall(
      new Map(),
      pacedGrown.pods,
      'tenantkit_https_request_duration_seconds',
      'path',
    )) {
      console.log(
        `  webhook Pod, headers to reply, ${row.name}: ${row.calls} calls, ${row.meanMs.toFixed(2)} ms`,
      );
    }
    webhookPhases(pacedGrown.pods);
  }
  console.log(`Pod AdmissionReviews posted to the webhook Service (ClusterIP) on one kept-alive connection:`);
  console.log(`  200, 20 ms apart: ${fmt(viaServicePaced)}`);
  console.log(`  1000 back to back: ${fmt(viaService)}`);
  const creates = samples.hooked.namespaces.length;
  console.log(`CPU over the namespace creates (ms of one core per create), with the webhooks / without:`);
  for (const mode of ['hooked', 'unhooked'] as const) {
    const c = cpu[mode];
    console.log(`  machine ${mode}: ${((100 * c.busy) / c.total).toFixed(0)}% of all cores busy`);
  }
  const roles = [...cpu.hooked.byProcess].sort((a, b) => b[1] - a[1]).filter(([, s]) => s > 0);
  for (const [role, seconds] of roles.slice(0, 14)) {
    const without = cpu.unhooked.byProcess.get(role) ?? 0;
    console.log(
      `  ${role}: ${((1000 * seconds) / creates).toFixed(2)} / ${((1000 * without) / creates).toFixed(2)}`,
    );
  }
  console.log(`where it went (kube-apiserver's metrics over those requests, mean per call):`);
  for (const row of perCall(new Map(), grown.calls, family, 'name')) {
    console.log(`  webhook ${row.name}: ${row.calls} calls, ${row.meanMs.toFixed(2)} ms`);
  }
  const connections = (m: Map<string, number>) => m.get('tenantkit_https_connections_total') ?? 0;
  console.log(`  TLS connections the webhook Pods accepted meanwhile: ${connections(grown.pods)}`);
  for (const row of perCall(new Map(), grown.pods, 'tenantkit_https_request_duration_seconds', 'path')) {
    console.log(
      `  in the webhook Pod, headers to reply sent, ${row.name}: ${row.calls} calls, ${row.meanMs.toFixed(2)} ms`,
    );
  }
  for (const row of perCall(new Map(), grown.pods, 'tenantkit_webhook_duration_seconds', 'webhook')) {
    console.log(`  inside tenantkit's handler, ${row.name}: ${row.calls} calls, ${row.meanMs.toFixed(2)} ms`);
  }
  webhookPhases(grown.pods);
  for (const row of perCall(new Map(), grown.steps, stepFamily, 'type')) {
    console.log(`  admission step ${row.name}: ${row.calls} calls, ${row.meanMs.toFixed(2)} ms`);
  }
  console.log(
    `burst: ${burst} requests (half namespaces, half Pods) at concurrency ${values.concurrency}: ${burstSeconds.toFixed(1)} s, ${(burst / burstSeconds).toFixed(0)}/s`,
  );
  console.log(`memory of each tenantkit Pod (working set, MiB): idle / peak during the burst`);
  for (const [pod, mib] of [...idle].sort()) {
    console.log(`  ${pod}: ${mib.toFixed(0)} / ${(peak.get(pod) ?? mib).toFixed(0)}`);
  }
  for (const [, floor] of floors) await floor.remove();
  await uninstall();
} finally {
  await bench.stop();
}
