// The Projects API at cluster size, through kube-apiserver's aggregation layer (test/harness/projects.ts):
// N namespaces (default 10,000), a tenant bound in 100 of them among N RoleBindings of other users, then
//  - `GET projects` as the tenant: p50/p99 over 200 lists (JSON, and the Table kubectl asks for), beside
//    the same number of `GET namespaces/<one>` as the admin through the same API server (the baseline:
//    kube-apiserver's own round trip);
//  - a namespace the tenant is given: time from the RoleBinding's create to the watch's ADDED, p50/p99
//    over 50.
//   node bench/projects.ts [--namespaces 10000]
import { type KubeObject, Resources, resourceType } from '../src/kube/resources.ts';
import { startProjectsCluster } from '../test/harness/projects.ts';
import { benchArgs } from './args.ts';

const { values } = benchArgs('bench:projects', { namespaces: { type: 'string', default: '10000' } });
const total = Number(values.namespaces);
const projectsPath = '/apis/project.openshift.io/v1/projects';
const apply = { fieldManager: 'bench', force: true };

const pct = (samples: number[], p: number) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const fmt = (samples: number[]) =>
  `p50 ${pct(samples, 50).toFixed(1)} ms, p99 ${pct(samples, 99).toFixed(1)} ms (n=${samples.length})`;

async function inBatches<T>(items: T[], size: number, each: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(each));
}

const pc = await startProjectsCluster({
  // A control plane sized for N namespaces and N RoleBindings being written at once.
  apiserverFlags: ['--max-requests-inflight=800', '--max-mutating-requests-inflight=400'],
  progress: (line) => console.error(line),
});
const { admin } = pc;
try {
  const binding = (namespace: string, user: string) =>
    ({
      metadata: { name: `${user}-edit`, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    }) as KubeObject;
  const names = Array.from({ length: total }, (_, i) => `ns-${String(i).padStart(5, '0')}`);
  let started = Date.now();
  await inBatches(names, 50, (name) => admin.create(Resources.namespaces, { metadata: { name } }));
  console.log(`[projects] ${total} namespaces created in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  started = Date.now();
  // One RoleBinding per namespace: the tenant's in every 100th, another user's in the rest.
  await inBatches(names, 50, (name) =>
    admin.create(
      Resources.roleBindings,
      binding(name, Number(name.slice(3)) % (total / 100) === 0 ? 'alice' : `user-${name}`),
    ),
  );
  console.log(`[projects] ${total} RoleBindings created in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const alice = await pc.user('alice', ['tenants']);
  const expected = names.filter((n) => Number(n.slice(3)) % (total / 100) === 0).length;
  // Wait until the API is available and the access sets have caught up.
  for (let i = 0; ; i++) {
    const list = await alice.request<{ items: unknown[] }>('GET', projectsPath).catch(() => ({ items: [] }));
    if (list.items.length === expected) break;
    if (i > 600) throw new Error(`alice sees ${list.items.length} projects, not ${expected}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const time = async (call: () => Promise<unknown>) => {
    const t = performance.now();
    await call();
    return performance.now() - t;
  };
  const lists: number[] = [];
  const tables: number[] = [];
  const baseline: number[] = [];
  const table = alice.withHeaders({
    Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
  });
  for (let i = 0; i < 200; i++) {
    lists.push(await time(() => alice.request('GET', projectsPath)));
    tables.push(await time(() => table.request('GET', projectsPath)));
    baseline.push(await time(() => admin.get(Resources.namespaces, names[i % total]!)));
  }
  console.log(`[projects] ${total} namespaces, tenant in ${expected}:`);
  console.log(`  list projects (JSON)      ${fmt(lists)}`);
  console.log(`  list projects (Table)     ${fmt(tables)}`);
  console.log(`  baseline: get namespace   ${fmt(baseline)} (admin, the same API server)`);
  console.log(`  ratio list/baseline p99   ${(pct(lists, 99) / pct(baseline, 99)).toFixed(2)}`);

  // Namespaces given to alice: RoleBinding create -> ADDED on her watch.
  const seen = new Map<string, number>();
  const stop = new AbortController();
  const watching = alice
    .watch<KubeObject>(
      resourceType('project.openshift.io', 'v1', 'projects', 'Project', false),
      { signal: stop.signal, resourceVersion: '1' },
      (e) => {
        if (e.type === 'ADDED') seen.set(e.object.metadata.name!, performance.now());
      },
    )
    .catch(() => {});
  await new Promise((r) => setTimeout(r, 500));
  const delays: number[] = [];
  for (let i = 1; i <= 50; i++) {
    const name = names[i]!;
    if (Number(name.slice(3)) % (total / 100) === 0) continue;
    const at = performance.now();
    await admin.apply(
      Resources.roleBindings,
      { ...binding(name, 'alice'), metadata: { name: 'alice-given', namespace: name } } as KubeObject,
      apply,
    );
    for (let w = 0; w < 100 && !seen.has(name); w++) await new Promise((r) => setTimeout(r, 10));
    if (seen.has(name)) delays.push(seen.get(name)! - at);
  }
  stop.abort();
  await watching;
  console.log(`  given namespace -> watch  ${fmt(delays)} (RoleBinding create to ADDED)`);
} finally {
  await pc.stop();
}
