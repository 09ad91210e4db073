// The measurements of bench/scale.ts at one population size, each against the installed release.
import { request } from 'node:https';
import { mapLimit } from '../src/kube/access.ts';
import type { KubeClient } from '../src/kube/client.ts';
import { type KubeObject, Resources } from '../src/kube/resources.ts';
import { processCpu } from './cpu.ts';
import { type PodStats, podStats } from './kubelet.ts';
import { percentiles } from './prom.ts';
import { organizationLabel, organizationName } from './scale-population.ts';
import { webhookSwitch } from './webhooks.ts';

export interface Release {
  admin: KubeClient;
  /** A tenant, member of organization `tenantOrganization`, who may create namespaces. */
  tenant: KubeClient;
  tenantOrganization: string;
  node: string;
  namespace: string;
  release: string;
  searchToken: string;
  workloadImage: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const managedBy = (b: KubeObject) => b.metadata.labels?.['app.kubernetes.io/managed-by'];

/** Every tenantkit Pod's working set and CPU so far. */
export const stats = (r: Release): Promise<PodStats[]> => podStats(r.admin, r.node, r.namespace, r.release);

/** Namespaces among `names` that hold a RoleBinding made by `manager`. */
async function boundNamespaces(admin: KubeClient, manager: string): Promise<Set<string>> {
  const list = await admin.listAll(Resources.roleBindings, {
    labelSelector: `app.kubernetes.io/managed-by=${manager}`,
  });
  return new Set(list.items.map((b) => b.metadata.namespace!));
}

/** Waits until every team namespace has its organization's and its scope's bindings; seconds waited. */
export async function settle(r: Release, namespaces: number, say: (l: string) => void): Promise<number> {
  const started = performance.now();
  for (;;) {
    const [org, scope] = await Promise.all([
      boundNamespaces(r.admin, 'tenantkit-tenancy'),
      boundNamespaces(r.admin, 'tenantkit-scopes'),
    ]);
    const team = (s: Set<string>) => [...s].filter((n) => n.startsWith('team-')).length;
    const seconds = (performance.now() - started) / 1000;
    if (team(org) >= namespaces && team(scope) >= namespaces) return seconds;
    if (seconds > 1800)
      throw new Error(`not settled after 30 min: ${team(org)} / ${team(scope)} of ${namespaces}`);
    say(
      `  settling: organization bindings in ${team(org)}, scope bindings in ${team(scope)} of ${namespaces}`,
    );
    await sleep(5000);
  }
}

/** Names among `names` the search API returns as Namespaces, asked as an admin ServiceAccount. */
async function searchable(
  r: Release,
  at: { address: string; ca: string },
  names: string[],
): Promise<Set<string>> {
  const query = `{ search(input: [{ filters: [{ property: "kind", values: ["Namespace"] }, { property: "name", values: ${JSON.stringify(names)} }], limit: ${names.length} }]) { items } }`;
  const body = await new Promise<string>((resolve, reject) => {
    const req = request(
      `https://${at.address}:4010/searchapi/graphql`,
      {
        method: 'POST',
        ca: at.ca,
        servername: `${r.release}-search.${r.namespace}.svc`,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${r.searchToken}` },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve(text));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ query }));
  });
  const data = JSON.parse(body) as { data?: { search?: { items?: { name: string }[] }[] } };
  return new Set((data.data?.search?.[0]?.items ?? []).map((i) => i.name));
}

/** The search API's address and CA, found again for every size (its Pod may have been replaced). */
async function searchEndpoint(r: Release): Promise<{ address: string; ca: string }> {
  const tls = await r.admin.get<KubeObject & { data: Record<string, string> }>(
    Resources.secrets,
    `${r.release}-search-tls`,
    r.namespace,
  );
  const pods = await r.admin.list<KubeObject & { status?: { podIP?: string } }>(Resources.pods, {
    namespace: r.namespace,
    labelSelector: `app.kubernetes.io/instance=${r.release},app.kubernetes.io/component=search`,
  });
  return {
    address: pods.items.find((p) => p.status?.podIP)!.status!.podIP!,
    ca: Buffer.from(tls?.data['ca.crt'] ?? '', 'base64').toString(),
  };
}

/** Other tenants' churn until `signal`: create a namespace in an organization, relabel it, delete it. */
async function churn(
  r: Release,
  options: { churners: number; organizations: number; tag: string; churnPaceMs: number },
  signal: AbortSignal,
) {
  const { churners, organizations, tag } = options;
  const pace = () => sleep(options.churnPaceMs);
  let changes = 0;
  await Promise.all(
    Array.from({ length: churners }, async (_, k) => {
      for (let n = 0; !signal.aborted; n++) {
        const name = `churn-${tag}-${k}-${n}`;
        const org = organizationName((k * 37 + n) % organizations);
        await r.admin.create(Resources.namespaces, {
          metadata: { name, labels: { [organizationLabel]: org } },
        });
        await pace();
        await r.admin.patch(Resources.namespaces, name, undefined, {
          metadata: { labels: { churned: 'yes' } },
        });
        await pace();
        await r.admin.delete(Resources.namespaces, name);
        changes += 3;
        await pace();
      }
    }),
  );
  return changes;
}

export interface NewNamespaceTimes {
  rbac: number[];
  scope: number[];
  search: number[];
  /** CPU seconds each process role used per tenant change meanwhile (creates, relabels, deletes). */
  cpuPerChange: Map<string, number>;
  changes: number;
}

/** Records, from a RoleBinding watch, when each of `wanted`'s namespaces got a binding of each manager. */
function watchBindings(r: Release, wanted: Map<string, number>, signal: AbortSignal) {
  const seen = new Map<string, { rbac?: number; scope?: number }>();
  const done = (async () => {
    const start = await r.admin.list(Resources.roleBindings, { limit: 1 });
    await r.admin
      .watch(Resources.roleBindings, { resourceVersion: start.metadata.resourceVersion, signal }, (event) => {
        const ns = event.object.metadata?.namespace ?? '';
        if (event.type !== 'ADDED' || !wanted.has(ns)) return;
        const entry = seen.get(ns) ?? {};
        const now = performance.now();
        if (managedBy(event.object) === 'tenantkit-tenancy') entry.rbac ??= now;
        if (managedBy(event.object) === 'tenantkit-scopes') entry.scope ??= now;
        seen.set(ns, entry);
      })
      .catch(() => undefined);
  })();
  return { seen, done };
}

/**
 * `creates` namespaces made by the tenant at a tenant's pace (one every `paceMs`) while `churners` other
 * tenants churn: from each create to its organization RoleBinding, its scope binding, and to search.
 */
export async function newNamespaces(
  r: Release,
  options: {
    creates: number;
    churners: number;
    organizations: number;
    paceMs: number;
    churnPaceMs: number;
    tag: string;
  },
): Promise<NewNamespaceTimes> {
  const stop = new AbortController();
  const created = new Map<string, number>();
  const watcher = watchBindings(r, created, stop.signal);
  await sleep(500);
  const before = await processCpu();
  const churning = churn(r, options, stop.signal);
  const endpoint = await searchEndpoint(r);
  const found = new Map<string, number>();
  const polling = (async () => {
    while (!stop.signal.aborted) {
      const pending = [...created.keys()].filter((n) => !found.has(n));
      if (pending.length > 0)
        for (const name of await searchable(r, endpoint, pending).catch(() => new Set<string>()))
          found.set(name, performance.now());
      await sleep(100);
    }
  })();
  for (let c = 0; c < options.creates; c++) {
    const name = `fresh-${options.tag}-${c}`;
    const at = performance.now();
    await r.tenant.create(Resources.namespaces, {
      metadata: { name, labels: { [organizationLabel]: r.tenantOrganization } },
    });
    created.set(name, at);
    await sleep(options.paceMs);
  }
  const deadline = performance.now() + 120_000;
  const complete = () =>
    [...created.keys()].every((n) => found.has(n) && watcher.seen.get(n)?.rbac && watcher.seen.get(n)?.scope);
  while (!complete() && performance.now() < deadline) await sleep(200);
  stop.abort();
  const changes = options.creates + (await churning);
  await Promise.all([polling, watcher.done]);
  const after = await processCpu();
  const since = (n: string, t: number | undefined) =>
    t === undefined ? Number.POSITIVE_INFINITY : t - created.get(n)!;
  const names = [...created.keys()];
  return {
    rbac: names.map((n) => since(n, watcher.seen.get(n)?.rbac)),
    scope: names.map((n) => since(n, watcher.seen.get(n)?.scope)),
    search: names.map((n) => since(n, found.get(n))),
    cpuPerChange: cpuDelta(before, after, changes),
    changes,
  };
}

/**
 * CPU seconds per change of each process role between two readings of /proc (the node runs on this
 * machine: a Pod's processes are ours to read; replicas of a component are added up).
 */
function cpuDelta(
  before: Map<string, number>,
  after: Map<string, number>,
  changes: number,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [role, seconds] of after) {
    if (!/^tenantkit |^postgres$|^kube-apiserver|^kube-controller/.test(role)) continue;
    out.set(role, (seconds - (before.get(role) ?? 0)) / changes);
  }
  return out;
}

/**
 * The tenant's namespace and Pod creates, one at a time, `gapMs` apart (ms each), with tenantkit's webhooks
 * and without them (their configurations deleted, as bench:chart does), in alternating blocks so that
 * neither gets the quieter minutes. Meant for when nothing else writes (no churn): the webhooks are off
 * for a while.
 */
export async function admissionLatency(r: Release, count: number, tag: string, gapMs = 100) {
  const podsNamespace = `pods-${tag}`;
  await r.tenant.create(Resources.namespaces, {
    metadata: { name: podsNamespace, labels: { [organizationLabel]: r.tenantOrganization } },
  });
  // Her organization's RoleBinding lets her create Pods there.
  for (let waited = 0; ; waited += 200) {
    const ok = await r.tenant.list(Resources.pods, { namespace: podsNamespace }).then(
      () => true,
      () => false,
    );
    if (ok) break;
    if (waited > 60_000) throw new Error(`the tenant could not list Pods in ${podsNamespace} within 60 s`);
    await sleep(200);
  }
  let made = 0;
  const timed = async (n: number, one: (i: number) => Promise<unknown>) => {
    const samples: number[] = [];
    for (let i = 0; i < n; i++) {
      await sleep(gapMs);
      const t = performance.now();
      await one(made++);
      samples.push(performance.now() - t);
    }
    return samples;
  };
  const createNamespace = (i: number) =>
    r.tenant.create(Resources.namespaces, {
      metadata: { name: `adm-${tag}-${i}`, labels: { [organizationLabel]: r.tenantOrganization } },
    });
  const createPod = (i: number) =>
    r.tenant.create(Resources.pods, {
      metadata: { name: `p-${i}`, namespace: podsNamespace },
      spec: {
        schedulerName: 'bench-unscheduled',
        containers: [
          { name: 'c', image: r.workloadImage, resources: { requests: { cpu: '10m', memory: '16Mi' } } },
        ],
      },
    } as KubeObject);
  const hooks = await webhookSwitch(r.admin, r.release);
  const samples = {
    with: { namespaces: [] as number[], pods: [] as number[] },
    without: { namespaces: [] as number[], pods: [] as number[] },
  };
  const blocks = 4;
  const perBlock = Math.ceil(count / (blocks / 2));
  try {
    for (let b = 0; b < blocks; b++) {
      const on = b % 4 === 0 || b % 4 === 3;
      await hooks.set(on);
      const mode = on ? 'with' : 'without';
      samples[mode].namespaces.push(...(await timed(perBlock, createNamespace)));
      samples[mode].pods.push(...(await timed(perBlock, createPod)));
    }
  } finally {
    await hooks.set(true);
  }
  const summary = (s: { namespaces: number[]; pods: number[] }) => ({
    namespaces: percentiles(s.namespaces),
    pods: percentiles(s.pods),
  });
  return { with: summary(samples.with), without: summary(samples.without) };
}

interface Lease extends KubeObject {
  spec?: { holderIdentity?: string };
}

const controllerPods = async (r: Release) =>
  (
    await r.admin.list<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
      Resources.pods,
      {
        namespace: r.namespace,
        labelSelector: `app.kubernetes.io/instance=${r.release},app.kubernetes.io/component=controllers`,
      },
    )
  ).items.filter((p) => !p.metadata.deletionTimestamp);

const isReady = (p: { status?: { conditions?: { type: string; status: string }[] } }) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

async function holder(r: Release): Promise<string> {
  const lease = await r.admin.get<Lease>(Resources.leases, 'tenantkit-controllers', r.namespace);
  return (lease?.spec?.holderIdentity ?? '').split('_')[0]!;
}

/**
 * A standby controller replica replaced (its Pod deleted): seconds until the new one is Ready (caches
 * synced). Then the leader's Pod deleted: seconds until another replica holds the lease, and until a
 * namespace created at the delete has its organization's RoleBinding (work carried across).
 */
export async function failover(r: Release, tag: string) {
  const leader = await holder(r);
  const standby = (await controllerPods(r)).find((p) => p.metadata.name !== leader)!;
  let t = performance.now();
  await r.admin.delete(Resources.pods, standby.metadata.name!, r.namespace);
  for (;;) {
    const fresh = (await controllerPods(r)).find(
      (p) => p.metadata.name !== leader && p.metadata.name !== standby.metadata.name,
    );
    if (fresh && isReady(fresh)) break;
    await sleep(250);
  }
  const warmUp = (performance.now() - t) / 1000;
  t = performance.now();
  const name = `failover-${tag}`;
  await r.admin.delete(Resources.pods, leader, r.namespace);
  await r.admin.create(Resources.namespaces, {
    metadata: { name, labels: { [organizationLabel]: r.tenantOrganization } },
  });
  let moved = 0;
  for (;;) {
    const now = await holder(r);
    if (!moved && now && now !== leader) moved = (performance.now() - t) / 1000;
    const bindings = await r.admin.list(Resources.roleBindings, {
      namespace: name,
      labelSelector: 'app.kubernetes.io/managed-by=tenantkit-tenancy',
    });
    if (moved && bindings.items.length > 0) break;
    if (performance.now() - t > 180_000) throw new Error('no failover within 3 minutes');
    await sleep(100);
  }
  return { warmUp, leaseMoved: moved, workDone: (performance.now() - t) / 1000 };
}

/** What a controllers Pod's /metrics says of its caches: objects its informers hold, and its live heap. */
export interface CacheReading {
  objects: number;
  heapUsedMiB: number;
  /** The five largest informers, `resource{selector} count`. */
  largest: string[];
}

/** A reading of every controllers Pod, by Pod name (from their /metrics). */
export async function cachedObjects(r: Release): Promise<Map<string, CacheReading>> {
  const pods = await controllerPods(r);
  const out = new Map<string, CacheReading>();
  await mapLimit(pods, 2, async (p) => {
    const ip = (p as KubeObject & { status?: { podIP?: string } }).status?.podIP;
    const text = await fetch(`http://${ip}:8080/metrics`)
      .then((res) => res.text())
      .catch(() => '');
    const informers: [string, number][] = [];
    let heap = 0;
    for (const line of text.split('\n')) {
      const value = Number(line.split(' ').at(-1));
      if (line.startsWith('tenantkit_informer_objects{'))
        informers.push([line.slice(27, line.lastIndexOf(' ') - 1), value]);
      if (/^(tenantkit_)?nodejs_heap_size_used_bytes /.test(line)) heap = value;
    }
    informers.sort((a, b) => b[1] - a[1]);
    out.set(p.metadata.name!, {
      objects: informers.reduce((sum, [, n]) => sum + n, 0),
      heapUsedMiB: heap / 2 ** 20,
      largest: informers.slice(0, 5).map(([k, n]) => `${k} ${n}`),
    });
  });
  return out;
}
