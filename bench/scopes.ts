// Benchmark: one ScopeInstance selecting N namespaces (default 1,000) with a 3-role ScopeTemplate.
// Prints the time from create to every binding present, the API writes the controllers issued, and the
// writes of an idle resync and of a controller restart (target: 0 for both).
//   node bench/scopes.ts [--namespaces 1000]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane } from '../devenv/controlplane/launch.ts';
import { allCrds } from '../src/crds/index.ts';
import { crdManifest } from '../src/crds/schema.ts';
import { type ScopeInstance, ScopeInstanceCrd, ScopeTemplateCrd } from '../src/crds/scopes.ts';
import { mapLimit } from '../src/kube/access.ts';
import { KubeClient } from '../src/kube/client.ts';
import { installCrds } from '../src/kube/crds.ts';
import { silentLogger } from '../src/kube/log.ts';
import { Manager } from '../src/kube/manager.ts';
import { type KubeObject, Resources } from '../src/kube/resources.ts';
import { scopes } from '../src/scopes/index.ts';
import { benchArgs } from './args.ts';

const { values } = benchArgs('bench:scopes', { namespaces: { type: 'string', default: '1000' } });
const count = Number(values.namespaces);
const dir = await mkdtemp(join(tmpdir(), 'tenantkit-bench-'));
const cp = await startControlPlane({ dir, unsafeNoFsync: true, progress: (l) => console.error(l) });
const admin = KubeClient.fromKubeconfig({ yaml: cp.adminKubeconfig });

async function startControllers() {
  // A client of its own, so its write counter holds the controllers' writes only.
  const client = KubeClient.fromKubeconfig({ yaml: cp.adminKubeconfig });
  const manager = new Manager({ client, logger: silentLogger, component: 'bench', resyncPeriodMs: 0 });
  await scopes.controllers?.({ client, manager, namespace: 'default' });
  const stop = new AbortController();
  const done = manager.start(stop.signal);
  return {
    client,
    manager,
    stop: async () => {
      stop.abort();
      await done;
    },
  };
}

async function waitFor(probe: () => Promise<boolean>, pollMs = 50): Promise<void> {
  while (!(await probe())) await new Promise((r) => setTimeout(r, pollMs));
}

try {
  await installCrds(
    admin,
    allCrds.map((d) => crdManifest(d) as unknown as KubeObject),
  );
  const names = Array.from({ length: count }, (_, i) => `bench-${String(i).padStart(4, '0')}`);
  const t0 = performance.now();
  await mapLimit(names, 32, (name) =>
    admin.create(Resources.namespaces, { metadata: { name, labels: { bench: 'yes' } } }),
  );
  console.error(`created ${count} namespaces in ${Math.round(performance.now() - t0)} ms`);

  const role = (generateName: string, resource: string) => ({
    generateName,
    rules: [{ apiGroups: [''], resources: [resource], verbs: ['get', 'list', 'watch'] }],
    subjects: [{ kind: 'ServiceAccount', namespace: 'default', name: 'operator' }],
  });
  await admin.create(ScopeTemplateCrd.type, {
    metadata: { name: 'bench' },
    spec: {
      clusterRoles: [role('pods-', 'pods'), role('configmaps-', 'configmaps'), role('services-', 'services')],
    },
  } as KubeObject);

  const first = await startControllers();
  await waitFor(async () => first.manager.hasSynced());
  const writesBefore = first.client.writes;
  const rssBefore = process.memoryUsage().rss;
  const created = performance.now();
  await admin.create(ScopeInstanceCrd.type, {
    metadata: { name: 'bench' },
    spec: { scopeTemplateName: 'bench', namespaceSelector: { matchLabels: { bench: 'yes' } } },
  } as KubeObject);
  const expected = count * 3;
  let bindings = 0;
  await waitFor(async () => {
    const list = await admin.listAll(Resources.roleBindings, {
      labelSelector: 'app.kubernetes.io/managed-by=tenantkit-scopes',
    });
    bindings = list.items.length;
    return bindings >= expected;
  }, 100);
  const convergeMs = performance.now() - created;
  await waitFor(async () => {
    const i = await admin.get<ScopeInstance>(ScopeInstanceCrd.type, 'bench');
    return i?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  });
  await first.manager.idle();
  const readyMs = performance.now() - created;
  const convergeWrites = first.client.writes - writesBefore;

  const resyncStart = first.client.writes;
  first.manager.resync();
  await first.manager.idle();
  const resyncWrites = first.client.writes - resyncStart;
  const heapMb = process.memoryUsage().heapUsed / 1024 / 1024;
  const rssMb = (process.memoryUsage().rss - rssBefore) / 1024 / 1024;
  await first.stop();

  const second = await startControllers();
  await waitFor(async () => second.manager.hasSynced());
  await new Promise((r) => setTimeout(r, 200));
  await second.manager.idle();
  const restartWrites = second.client.writes;
  await second.stop();

  console.log(`scopes benchmark: 1 ScopeInstance x ${count} namespaces x 3 roles`);
  console.log(`  bindings present:            ${bindings} of ${expected}`);
  console.log(`  create -> all bindings:      ${Math.round(convergeMs)} ms`);
  console.log(`  create -> status Ready:      ${Math.round(readyMs)} ms`);
  console.log(
    `  API writes to converge:      ${convergeWrites} (${(convergeWrites / expected).toFixed(2)} per binding)`,
  );
  console.log(`  API writes, idle resync:     ${resyncWrites}`);
  console.log(`  API writes, restart resync:  ${restartWrites}`);
  console.log(`  heap used after convergence: ${heapMb.toFixed(1)} MiB (RSS growth ${rssMb.toFixed(1)} MiB)`);
} finally {
  await cp.stop();
  await rm(dir, { recursive: true, force: true });
}
