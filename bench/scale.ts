// Benchmark: tenantkit at the size of the clusters it is for. The chart installed on the local node (as
// the e2e tests install it), then a tenant population grown through the real API server to three sizes
// (S: 100 organizations / 1,000 namespaces, M: 500 / 5,000, L: 1,000 / 10,000; see scale-population.ts),
// and at each size: every tenantkit Pod's working set (after the population is in, and after an idle
// window), a tenant's new namespace to its bindings and to search while 20 other tenants churn, the
// tenant's namespace and Pod creates through the webhooks, a standby's warm-up and a failover, the
// requests tenantkit's ServiceAccounts send at idle (kube-apiserver's audit log), and CPU per change.
//   npm run bench:scale -- [--sizes S,M,L] [--creates 200] [--idle-minutes 10] [--divide 1]
// --idle-minutes takes one figure for every size or one per size (e.g. 2,2,10: the full window at L only).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { helmFor } from '../devenv/helm/build.ts';
import { repoRoot } from '../devenv/images/build.ts';
import { KubeClient } from '../src/kube/client.ts';
import { type KubeObject, Resources } from '../src/kube/resources.ts';
import { benchArgs } from './args.ts';
import { auditServiceAccounts, writeVerbs } from './audit.ts';
import type { PodStats } from './kubelet.ts';
import { helmInstallArgs, importChartImages, requireNode, startBenchCluster } from './node.ts';
import { percentiles } from './prom.ts';
import {
  admissionLatency,
  type CacheReading,
  cachedObjects,
  failover,
  newNamespaces,
  type Release,
  settle,
  stats,
} from './scale-measure.ts';
import { applyFoundation, applyOrganization, grow } from './scale-population.ts';

const { values } = benchArgs('bench:scale', {
  sizes: { type: 'string', default: 'S,M,L' },
  creates: { type: 'string', default: '200' },
  churners: { type: 'string', default: '20' },
  // Each churning tenant makes one change (create, relabel or delete) this often.
  'churn-pace-ms': { type: 'string', default: '1000' },
  'pace-ms': { type: 'string', default: '250' },
  'idle-minutes': { type: 'string', default: '10' },
  concurrency: { type: 'string', default: '24' },
  // Divides every size's organizations and namespaces: --divide 10 is a quick trial of the whole run.
  divide: { type: 'string', default: '1' },
  set: { type: 'string', multiple: true, default: [] },
});
requireNode('bench/scale.ts');
const say = (line: string) => console.error(line);
const divide = Number(values.divide);
const allSizes = { S: [100, 1000], M: [500, 5000], L: [1000, 10000] } as const;
const sizes = values.sizes.split(',').map((name) => {
  const [organizations, namespaces] = allSizes[name as keyof typeof allSizes];
  return { name, organizations: organizations / divide, namespaces: namespaces / divide };
});
const release = 'bench';
const namespace = 'tenantkit-system';
const apply = { fieldManager: 'bench', force: true };
// Sized for the largest population: APF's total seats, and etcd's default 2 GiB quota (the database
// size at the end of each size is printed against it).
const sizing = ['--max-requests-inflight=800', '--max-mutating-requests-inflight=400'];

interface SizeResult {
  name: string;
  objects: number;
  populateSeconds: number;
  settleSeconds: number;
  populated: PodStats[];
  idle: PodStats[];
  cached: Map<string, CacheReading>;
  cachedIdle: Map<string, CacheReading>;
  fresh: Awaited<ReturnType<typeof newNamespaces>>;
  admission: Awaited<ReturnType<typeof admissionLatency>>;
  failover: Awaited<ReturnType<typeof failover>>;
  idleRequests: Map<string, number>;
  idleMinutes: number;
  etcdBytes: number;
}

/** The release's Pods and caches right after the install, before any tenant: what growth is measured from. */
let baseline: { stats: PodStats[]; cached: Map<string, CacheReading> } = { stats: [], cached: new Map() };
const auditDir = await mkdtemp(join(tmpdir(), 'tenantkit-scale-'));
const audit = await auditServiceAccounts(auditDir, namespace);
const bench = await startBenchCluster({ node: true, apiserverFlags: [...sizing, ...audit.flags] });
const { admin, cp } = bench;
const node = bench.node!;
try {
  say(`kube-apiserver: ${sizing.join(' ')}; etcd: default quota (2 GiB), no fsync (bench)`);
  const r = await install();
  baseline = { stats: await stats(r), cached: await cachedObjects(r) };
  say(`installed: controllers hold ${most(baseline.cached).objects} objects in their informers`);
  const results: SizeResult[] = [];
  let grown = { organizations: 0, namespaces: 0 };
  const idle = values['idle-minutes'].split(',').map(Number);
  for (const [i, size] of sizes.entries()) {
    results.push(await measureSize(r, size, grown, idle[Math.min(i, idle.length - 1)]!));
    grown = size;
    report(results);
  }
} finally {
  await bench.stop();
  await rm(auditDir, { recursive: true, force: true });
}

/** The chart installed with the images built here, the foundation applied, the tenant and searcher made. */
async function install(): Promise<Release> {
  const images = await importChartImages(node);
  const helm = await helmFor(cp.adminKubeconfigPath, join(bench.dir, 'helm'), say);
  await admin.apply(Resources.namespaces, { metadata: { name: 'velero' } }, apply);
  const settings = [...images.values, 'search.replicas=1', ...values.set];
  say(`helm install ${settings.slice(images.values.length).join(' ')}`);
  await helm(helmInstallArgs(release, join(repoRoot, 'deploy', 'helm', 'tenantkit'), namespace, settings));
  await applyFoundation(admin);
  const tenantOrganization = 'org-tenant';
  // Her organization is like the others: the profile, and a ScopeInstance over its namespaces.
  await applyOrganization(admin, tenantOrganization, ['alice']);
  await admin.apply(
    Resources.clusterRoleBindings,
    {
      metadata: { name: 'bench-alice-creates' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'tenantkit:tenancy:namespace-creator',
      },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
    } as KubeObject,
    apply,
  );
  return {
    admin,
    tenant: KubeClient.fromKubeconfig({ yaml: await cp.userKubeconfig('alice') }),
    tenantOrganization,
    node: node.name,
    namespace,
    release,
    searchToken: await searcherToken(),
    workloadImage: node.workloadImage,
  };
}

/** A token of a ServiceAccount that may list everything (search answers it with every object). */
async function searcherToken(): Promise<string> {
  await admin.apply(
    Resources.serviceAccounts,
    { metadata: { name: 'bench-searcher', namespace: 'default' } },
    apply,
  );
  await admin.apply(
    Resources.clusterRoleBindings,
    {
      metadata: { name: 'bench-searcher' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'bench-searcher', namespace: 'default' }],
    } as KubeObject,
    apply,
  );
  const reply = await admin.request<{ status: { token: string } }>(
    'POST',
    '/api/v1/namespaces/default/serviceaccounts/bench-searcher/token',
    {
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 7200 },
      },
    },
  );
  return reply.status.token;
}

/** Waits until no namespace is terminating; seconds waited. */
async function untilNoneTerminating(): Promise<number> {
  const started = performance.now();
  for (;;) {
    const list = await admin.listAll(Resources.namespaces);
    if (!list.items.some((n) => n.metadata.deletionTimestamp)) return (performance.now() - started) / 1000;
    await new Promise((res) => setTimeout(res, 2000));
  }
}

async function etcdBytes(): Promise<number> {
  const text = await admin.request<string>('GET', '/metrics', { text: true });
  const line = text.split('\n').find((l) => l.startsWith('apiserver_storage_size_bytes'));
  return Number(line?.split(' ').at(-1) ?? 0);
}

async function measureSize(
  r: Release,
  size: { name: string; organizations: number; namespaces: number },
  from: { organizations: number; namespaces: number },
  idleMinutes: number,
): Promise<SizeResult> {
  say(`size ${size.name}: growing to ${size.organizations} organizations, ${size.namespaces} namespaces`);
  const grown = await grow(admin, {
    from,
    to: size,
    concurrency: Number(values.concurrency),
    image: node.workloadImage,
    progress: say,
  });
  say(`  ${grown.objects} objects in ${grown.seconds.toFixed(0)} s; waiting for tenantkit to settle`);
  const settleSeconds = await settle(r, size.namespaces, say);
  const populated = await stats(r);
  const cached = await cachedObjects(r);
  say(
    `  settled in ${settleSeconds.toFixed(0)} s; a tenant's new namespaces while ${values.churners} tenants churn`,
  );
  const fresh = await newNamespaces(r, {
    creates: Number(values.creates),
    churners: Number(values.churners),
    organizations: size.organizations,
    paceMs: Number(values['pace-ms']),
    churnPaceMs: Number(values['churn-pace-ms']),
    tag: size.name.toLowerCase(),
  });
  say('  admission latency');
  const admission = await admissionLatency(r, 100, size.name.toLowerCase());
  say('  standby warm-up and failover');
  const failed = await failover(r, size.name.toLowerCase());
  // Idle means nothing left to do: the churned namespaces' deletions finished, then half a minute more.
  const terminating = await untilNoneTerminating();
  say(`  the last namespace deletions ended after ${terminating.toFixed(0)} s; idle for ${idleMinutes} min`);
  await new Promise((res) => setTimeout(res, 30_000));
  const from2 = Date.now();
  await new Promise((res) => setTimeout(res, idleMinutes * 60_000));
  const idleRequests = await audit.count(from2, Date.now());
  return {
    name: size.name,
    objects: grown.objects,
    populateSeconds: grown.seconds,
    settleSeconds,
    populated,
    idle: await stats(r),
    cached,
    cachedIdle: await cachedObjects(r),
    fresh,
    admission,
    failover: failed,
    idleRequests,
    idleMinutes,
    etcdBytes: await etcdBytes(),
  };
}

/** The controllers Pod whose informers hold the most. */
function most(readings: Map<string, CacheReading>): CacheReading {
  return (
    [...readings.values()].sort((a, b) => b.objects - a.objects)[0] ?? {
      objects: 0,
      heapUsedMiB: 0,
      largest: [],
    }
  );
}

function ms(samples: number[]): string {
  const p = percentiles(samples);
  return `p50 ${p.p50.toFixed(0)} ms, p99 ${p.p99.toFixed(0)} ms`;
}

/** The largest working set among a component's Pods, and how many it has. */
function byComponent(stats: PodStats[]): Map<string, { mib: number; pods: number }> {
  const out = new Map<string, { mib: number; pods: number }>();
  for (const p of stats) {
    const known = out.get(p.component) ?? { mib: 0, pods: 0 };
    out.set(p.component, { mib: Math.max(known.mib, p.workingSetMiB), pods: known.pods + 1 });
  }
  return out;
}

function report(results: SizeResult[]): void {
  const first = results[0]!;
  const last = results.at(-1)!;
  const ratio = (a: number, b: number) =>
    b > 0 ? ` (${last.name}/${first.name} ${(a / b).toFixed(2)})` : '';
  console.log(
    `\nscale benchmark, size ${last.name}: ${last.objects} objects added (${last.populateSeconds.toFixed(0)} s), settled in ${last.settleSeconds.toFixed(0)} s, etcd ${(last.etcdBytes / 2 ** 20).toFixed(0)} MiB of 2048`,
  );
  console.log('  working set (MiB, the largest Pod of each component), populated / after idle:');
  const idleNow = byComponent(last.idle);
  const idleFirst = byComponent(first.idle);
  for (const [component, p] of byComponent(last.populated)) {
    const idle = idleNow.get(component);
    const was = idleFirst.get(component);
    console.log(
      `    ${`${component} (${p.pods} Pods)`.padEnd(28)} ${p.mib.toFixed(0).padStart(5)} / ${idle?.mib.toFixed(0) ?? '-'}${was && idle ? ratio(idle.mib, was.mib) : ''}`,
    );
  }
  // Growth per cached object: the controllers' working set and live heap after idle (garbage collected)
  // over the objects their informers hold then, each measured from the install.
  const grownMiB =
    (byComponent(last.idle).get('controllers')?.mib ?? 0) -
    (byComponent(baseline.stats).get('controllers')?.mib ?? 0);
  const now = most(last.cachedIdle);
  const was = most(baseline.cached);
  const added = Math.max(1, now.objects - was.objects);
  const kib = (mib: number) => ((mib * 1024) / added).toFixed(2);
  console.log(
    `    controllers' informers: ${now.objects} objects (${was.objects} at install); per object added ${kib(grownMiB)} KiB of working set, ${kib(now.heapUsedMiB - was.heapUsedMiB)} KiB of live heap (${now.heapUsedMiB.toFixed(0)} MiB)`,
  );
  console.log(`    largest informers: ${now.largest.join(', ')}`);
  const f = last.fresh;
  const g = first.fresh;
  const p99 = (s: number[]) => percentiles(s).p99;
  console.log(`  a tenant's new namespace (${f.rbac.length} creates, ${f.changes} changes with the churn):`);
  console.log(`    organization RoleBinding: ${ms(f.rbac)}${ratio(p99(f.rbac), p99(g.rbac))}`);
  console.log(`    scope binding:            ${ms(f.scope)}${ratio(p99(f.scope), p99(g.scope))}`);
  console.log(`    searchable:               ${ms(f.search)}${ratio(p99(f.search), p99(g.search))}`);
  console.log(
    `    CPU per change (ms): ${[...f.cpuPerChange].map(([c, s]) => `${c} ${(s * 1000).toFixed(2)}`).join(', ')}`,
  );
  // The webhooks' overhead: p50 with them minus p50 without, in the same minutes.
  const overhead = (m: SizeResult['admission'], kind: 'namespaces' | 'pods') =>
    m.with[kind].p50 - m.without[kind].p50;
  for (const kind of ['namespaces', 'pods'] as const) {
    const a = last.admission;
    const o = overhead(a, kind);
    console.log(
      `  tenant ${kind} creates: with the webhooks p50 ${a.with[kind].p50.toFixed(1)} ms, p99 ${a.with[kind].p99.toFixed(1)} ms; without p50 ${a.without[kind].p50.toFixed(1)} ms, p99 ${a.without[kind].p99.toFixed(1)} ms; overhead ${o.toFixed(1)} ms${ratio(o, overhead(first.admission, kind))}`,
    );
  }
  console.log(
    `  standby replaced, Ready (caches synced) in ${last.failover.warmUp.toFixed(1)} s; leader deleted, lease moved in ${last.failover.leaseMoved.toFixed(1)} s, a namespace created then bound in ${last.failover.workDone.toFixed(1)} s`,
  );
  const idle = [...last.idleRequests].sort();
  const writes = idle.filter(([k]) => writeVerbs.has(k.split(' ')[1]!)).reduce((s, [, n]) => s + n, 0);
  console.log(
    `  idle ${last.idleMinutes} min: ${writes} writes; requests by ServiceAccount and verb: ${idle.map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`,
  );
}
