// The controller runtime against the real API server: convergence, crash safety (real SIGKILL of a
// controller process), garbage collection of owned objects, and Lease-based leader election.
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { crdManifest } from '../../src/crds/schema.ts';
import { installCrds } from '../../src/kube/crds.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { reconciledByAnnotation, type Sample, SampleCrd, sampleLabel } from '../fixtures/sample.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';

const cluster = await TestCluster.connect();
const fixture = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/sample-controller.ts');
const children = new Set<ChildProcess>();

interface Controller {
  child: ChildProcess;
  exited: Promise<number | null>;
  output: () => string;
}

function startController(identity: string, extra: string[] = []): Controller {
  const child = spawn(
    process.execPath,
    [fixture, `--kubeconfig=${inject.adminKubeconfigPath}`, `--identity=${identity}`, ...extra],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'info' } },
  );
  children.add(child);
  let output = '';
  child.stdout?.on('data', (c) => {
    output += c;
  });
  child.stderr?.on('data', (c) => {
    output += c;
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  return { child, exited, output: () => output };
}

const inject = { adminKubeconfigPath: join(cluster.dir, 'admin.kubeconfig') };

beforeAll(async () => {
  // Normally installed by the global setup already; repeating it is a no-op.
  await installCrds(cluster.admin, [crdManifest(SampleCrd) as unknown as KubeObject]);
});
afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
});
afterAll(() => cluster.cleanup());

const createSample = (namespace: string, name: string, data: Record<string, string>) =>
  cluster.admin.create<Sample>(SampleCrd.type, { metadata: { name, namespace }, spec: { data } } as Sample);

async function configMapsOf(namespace: string) {
  return (
    await cluster.admin.list<KubeObject & { data?: Record<string, string> }>(Resources.configMaps, {
      namespace,
      labelSelector: sampleLabel,
    })
  ).items;
}

async function ready(namespace: string, name: string) {
  const sample = await cluster.admin.get<Sample>(SampleCrd.type, name, namespace);
  const condition = sample?.status?.conditions?.find((c) => c.type === 'Ready');
  return condition?.status === 'True' && condition.observedGeneration === sample?.metadata.generation
    ? sample
    : undefined;
}

describe('reconciler runtime', () => {
  it('converges owned objects from the source and follows spec changes', async () => {
    const ns = await cluster.namespace('rt');
    startController('solo');
    await createSample(ns, 'one', { greeting: 'hello' });
    await eventually(() => ready(ns, 'one'), { what: 'sample one ready' });
    expect((await configMapsOf(ns)).map((c) => c.data)).toEqual([{ greeting: 'hello' }]);

    await cluster.admin.patch(SampleCrd.type, 'one', ns, { spec: { data: { greeting: 'bye', extra: '1' } } });
    await eventually(
      async () => {
        const [cm] = await configMapsOf(ns);
        return cm?.data?.greeting === 'bye' && cm.data.extra === '1' && (await ready(ns, 'one'));
      },
      { what: 'spec change propagated' },
    );

    // Drift repair: a deleted owned object comes back.
    await cluster.admin.delete(Resources.configMaps, 'one-data', ns);
    await eventually(async () => (await configMapsOf(ns)).length === 1, { what: 'ConfigMap recreated' });
  });

  it('ends in the same state, without duplicates, after being killed mid-reconcile', async () => {
    const ns = await cluster.namespace('crash');
    const names = Array.from({ length: 12 }, (_, i) => `s${i}`);
    for (const name of names) await createSample(ns, name, { name });
    // The first process kills itself (SIGKILL) after its 5th ConfigMap apply, before writing that status.
    const first = startController('crashy', ['--crash-after-apply=5']);
    expect(await first.exited).toBe(null);
    expect(first.child.signalCode).toBe('SIGKILL');
    const half = await Promise.all(names.map((n) => ready(ns, n)));
    expect(half.filter(Boolean).length).toBeLessThan(names.length);

    startController('restarted');
    for (const name of names) await eventually(() => ready(ns, name), { what: `sample ${name} ready` });
    const configMaps = await configMapsOf(ns);
    expect(configMaps.map((c) => c.metadata.name).sort()).toEqual(names.map((n) => `${n}-data`).sort());
    for (const cm of configMaps) expect(cm.data?.name).toBe(cm.metadata.name!.replace(/-data$/, ''));
  });

  it('lets the garbage collector remove owned objects when the owner is deleted', async () => {
    const ns = await cluster.namespace('gc');
    startController('gc');
    await createSample(ns, 'owner', { a: 'b' });
    await eventually(async () => (await configMapsOf(ns)).length === 1, { what: 'ConfigMap created' });
    await cluster.admin.delete(SampleCrd.type, 'owner', ns, { propagationPolicy: 'Background' });
    // The garbage collector learns new resource types by re-reading discovery every 30 s.
    await eventually(async () => (await configMapsOf(ns)).length === 0, {
      what: 'ConfigMap collected',
      timeoutMs: 75_000,
    });
  }, 90_000);

  it('runs only the elected replica and hands over within 20 s when the leader is killed', async () => {
    const ns = await cluster.namespace('le');
    const lease = `--lease=${ns}/sample-leader`;
    const a = startController('replica-a', [lease]);
    await eventually(() => a.output().includes('became leader'), { what: 'replica-a leads' });
    const b = startController('replica-b', [lease]);
    // b has synced its caches and is campaigning; it must not reconcile while a leads.
    await eventually(() => b.output().includes('caches synced'), { what: 'replica-b standing by' });
    for (const name of ['x', 'y', 'z']) await createSample(ns, name, { name });
    for (const name of ['x', 'y', 'z']) await eventually(() => ready(ns, name), { what: `${name} ready` });
    for (const cm of await configMapsOf(ns))
      expect(cm.metadata.annotations?.[reconciledByAnnotation]).toBe('replica-a');
    expect(b.output()).not.toContain('became leader');

    a.child.kill('SIGKILL');
    const killedAt = Date.now();
    await eventually(() => b.output().includes('became leader'), {
      what: 'replica-b takes over',
      timeoutMs: 25_000,
      intervalMs: 200,
    });
    const handover = Date.now() - killedAt;
    expect(handover).toBeLessThan(20_000);
    await createSample(ns, 'after', { name: 'after' });
    await eventually(() => ready(ns, 'after'), { what: 'reconciled by the new leader' });
    const after = (await configMapsOf(ns)).find((c) => c.metadata.name === 'after-data');
    expect(after?.metadata.annotations?.[reconciledByAnnotation]).toBe('replica-b');
    console.log(`leader handover took ${handover} ms`);
  }, 60_000);
});
