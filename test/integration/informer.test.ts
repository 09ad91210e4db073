// The informer against the real API server: initial list, watch events and indexes.
import { afterAll, describe, expect, it } from 'vitest';
import { isConflict } from '../../src/kube/client.ts';
import { ensureFinalizer, removeFinalizer } from '../../src/kube/finalizers.ts';
import { ByLabel, ByNamespace, ByOwner, cacheDigest, Informer } from '../../src/kube/informer.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { Manager } from '../../src/kube/manager.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { keepFields } from '../../src/kube/slim.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { afterEachBreak, apiServerRelay } from '../harness/relay.ts';

const cluster = await TestCluster.connect();
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e,
  );
afterAll(() => cluster.cleanup());

/** A running, synced informer on the ConfigMaps of `ns`; `stop` ends it. */
async function configMapInformer(ns: string) {
  const informer = new Informer<KubeObject & { data?: Record<string, string> }>(
    cluster.admin,
    Resources.configMaps,
    { namespace: ns },
  );
  const signal = new AbortController();
  const run = informer.run(signal.signal);
  await informer.waitForSync();
  const stop = async () => {
    signal.abort();
    await run;
  };
  return { informer, stop };
}

describe('informer', () => {
  it('resumes within 2 s after each of many broken watches in a row, each one after it worked', async () => {
    // Every break here comes after the watch worked again, as when the API server restarts now and
    // then: each is a first failure. Before, the delay doubled with every break since the informer
    // started (0.4, 0.8, 1.6, 3.2, 6.4, 12.8 s...), as the bench's repeated restarts showed.
    const ns = await cluster.namespace('inf-cut');
    const { client, relay } = await apiServerRelay(cluster.adminKubeconfigPath);
    const informer = new Informer<KubeObject>(client, Resources.configMaps, { namespace: ns });
    const stop = new AbortController();
    const run = informer.run(stop.signal);
    try {
      await informer.waitForSync();
      // The watch is open (it delivered the last object) at each break.
      const took = await afterEachBreak(relay, 7, async (i) => {
        await cluster.admin.create(Resources.configMaps, {
          metadata: { name: `after-cut-${i}`, namespace: ns },
        });
        await eventually(async () => informer.get(`${ns}/after-cut-${i}`) !== undefined, {
          timeoutMs: 60_000,
          intervalMs: 20,
          what: `the informer sees after-cut-${i}`,
        });
      });
      // Each resumes after the shortest delay (0.4 s) plus a reconnect, never 12.8 s as the seventh did.
      expect(Math.max(...took), `resumed after ${took.map((t) => Math.round(t)).join(', ')} ms`).toBeLessThan(
        2_000,
      );
    } finally {
      stop.abort();
      await run;
      await relay.close();
    }
  });

  it('lists, follows watch events, and keeps its indexes in step', async () => {
    const ns = await cluster.namespace('inf');
    await cluster.admin.create(Resources.configMaps, {
      metadata: { name: 'before', namespace: ns, labels: { app: 'a' } },
    });
    const informer = new Informer<KubeObject>(cluster.admin, Resources.configMaps, { namespace: ns });
    const seen: string[] = [];
    informer.addHandlers({
      onAdd: (o) => seen.push(`add ${o.metadata.name}`),
      onUpdate: (_, o) => seen.push(`update ${o.metadata.name}`),
      onDelete: (o) => seen.push(`delete ${o.metadata.name}`),
    });
    const stop = new AbortController();
    const run = informer.run(stop.signal);
    await informer.waitForSync();
    expect(informer.byIndex(ByLabel, 'app=a').map((o) => o.metadata.name)).toEqual(['before']);

    const owner = await cluster.admin.create<KubeObject>(Resources.configMaps, {
      metadata: { name: 'owner', namespace: ns },
    });
    await cluster.admin.create(Resources.configMaps, {
      metadata: {
        name: 'owned',
        namespace: ns,
        labels: { app: 'b' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid! }],
      },
    });
    await eventually(() => informer.byIndex(ByOwner, owner.metadata.uid!).length === 1, {
      what: 'owner index',
    });
    await cluster.admin.patch(Resources.configMaps, 'before', ns, { metadata: { labels: { app: 'b' } } });
    await eventually(
      () =>
        informer.byIndex(ByLabel, 'app=b').length === 2 && informer.byIndex(ByLabel, 'app=a').length === 0,
      {
        what: 'label index follows an update',
      },
    );
    await cluster.admin.delete(Resources.configMaps, 'owned', ns);
    await eventually(() => informer.byIndex(ByOwner, owner.metadata.uid!).length === 0, {
      what: 'delete removes from indexes',
    });
    expect(
      informer
        .byIndex(ByNamespace, ns)
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(expect.arrayContaining(['before', 'owner']));
    expect(informer.get(`${ns}/owned`)).toBeUndefined();
    expect(seen).toEqual(
      expect.arrayContaining(['add before', 'add owner', 'add owned', 'update before', 'delete owned']),
    );
    stop.abort();
    await run;
  });

  it('keeps objects without managedFields and the last-applied annotation, from list and from watch', async () => {
    const ns = await cluster.namespace('inf-slim');
    const lastApplied = 'kubectl.kubernetes.io/last-applied-configuration';
    const object = (name: string) => ({
      metadata: {
        name,
        namespace: ns,
        labels: { team: 'a' },
        annotations: { [lastApplied]: '{"big":"copy"}', note: 'kept' },
      },
      data: { key: 'value' },
    });
    // Server-side apply: the API server records managedFields for the bench's field manager.
    await cluster.admin.apply(Resources.configMaps, object('listed'), { fieldManager: 'inf', force: true });
    const { informer, stop } = await configMapInformer(ns);
    await cluster.admin.apply(Resources.configMaps, object('watched'), { fieldManager: 'inf', force: true });
    await eventually(() => informer.get(`${ns}/watched`) !== undefined, { what: 'watch event' });
    const fromServer = await cluster.admin.get<KubeObject>(Resources.configMaps, 'watched', ns);
    expect((fromServer!.metadata as { managedFields?: unknown[] }).managedFields?.length).toBeGreaterThan(0);
    for (const name of ['listed', 'watched']) {
      const cached = informer.get(`${ns}/${name}`)!;
      expect(cached.metadata).not.toHaveProperty('managedFields');
      expect(cached.metadata.annotations).toEqual({ note: 'kept' });
      expect(cached.metadata.labels).toEqual({ team: 'a' });
      expect(cached.data).toEqual({ key: 'value' });
      expect(cached.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    }
    await stop();
  });

  it('caches metadata alone when asked (PartialObjectMetadata), through list and watch, and an empty list', async () => {
    const ns = await cluster.namespace('inf-meta');
    const manager = new Manager({ client: cluster.admin, logger: silentLogger, component: 'test' });
    // Selected by name, so the first list is empty (kube-root-ca.crt is in every namespace).
    const type = {
      ...Resources.configMaps,
      watchNamespace: ns,
      fieldSelector: 'metadata.name=big',
      metadataOnly: true,
    };
    const informer = manager.informer<KubeObject & { data?: Record<string, string> }>(type);
    expect(manager.informer({ ...type, metadataOnly: false })).not.toBe(informer);
    const stop = new AbortController();
    const run = informer.run(stop.signal);
    await informer.waitForSync();
    expect(informer.list()).toEqual([]);
    await cluster.admin.create(Resources.configMaps, {
      metadata: { name: 'big', namespace: ns, labels: { team: 'a' } },
      data: { payload: 'x'.repeat(10_000) },
    } as KubeObject);
    await eventually(() => informer.get(`${ns}/big`) !== undefined, { what: 'watch event' });
    const cached = informer.get(`${ns}/big`)!;
    expect(cached.kind).toBe('PartialObjectMetadata');
    expect(cached.data).toBeUndefined();
    expect(cached.metadata.labels).toEqual({ team: 'a' });
    stop.abort();
    await run;
  });

  it('caches through a view: refused objects are never seen, kept ones hold only the projected fields', async () => {
    const ns = await cluster.namespace('inf-view');
    const binding = (name: string, role: string) =>
      ({
        metadata: { name, namespace: ns, labels: { team: 'a' }, annotations: { note: 'x' } },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }],
      }) as KubeObject;
    await cluster.admin.create(Resources.roleBindings, binding('listed-admin', 'admin'));
    await cluster.admin.create(Resources.roleBindings, binding('listed-view', 'view'));
    const manager = new Manager({ client: cluster.admin, logger: silentLogger, component: 'test' });
    const type = {
      ...Resources.roleBindings,
      watchNamespace: ns,
      view: {
        name: 'admins',
        keep: (b: KubeObject) => (b as { roleRef?: { name: string } }).roleRef?.name === 'admin',
        project: keepFields(['roleRef', 'subjects']),
      },
    };
    const informer = manager.informer<KubeObject & { roleRef?: unknown; subjects?: unknown[] }>(type);
    expect(manager.informer({ ...type, view: undefined })).not.toBe(informer);
    const seen: string[] = [];
    informer.addHandlers({ onAdd: (o) => seen.push(`add ${o.metadata.name}`) });
    const stop = new AbortController();
    const run = informer.run(stop.signal);
    await informer.waitForSync();
    await cluster.admin.create(Resources.roleBindings, binding('watched-view', 'view'));
    await cluster.admin.create(Resources.roleBindings, binding('watched-admin', 'admin'));
    await eventually(() => informer.get(`${ns}/watched-admin`) !== undefined, { what: 'watch event' });
    expect(
      informer
        .list()
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['listed-admin', 'watched-admin']);
    expect(seen.sort()).toEqual(['add listed-admin', 'add watched-admin']);
    const cached = informer.get(`${ns}/listed-admin`)!;
    expect(Object.keys(cached).sort()).toEqual(['metadata', 'roleRef', 'subjects']);
    expect(Object.keys(cached.metadata).sort()).toEqual(['name', 'namespace', 'resourceVersion']);
    expect(cached.subjects).toEqual([{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }]);
    await cluster.admin.delete(Resources.roleBindings, 'listed-admin', ns);
    await eventually(() => informer.get(`${ns}/listed-admin`) === undefined, { what: 'delete event' });
    stop.abort();
    await run;
  });

  it('caches only what a field selector matches, through list and watch', async () => {
    const ns = await cluster.namespace('inf-field');
    for (const name of ['wanted', 'other'])
      await cluster.admin.create(Resources.configMaps, { metadata: { name, namespace: ns } });
    const manager = new Manager({ client: cluster.admin, logger: silentLogger, component: 'test' });
    const informer = manager.informer<KubeObject & { data?: Record<string, string> }>({
      ...Resources.configMaps,
      watchNamespace: ns,
      fieldSelector: 'metadata.name=wanted',
    });
    // A manager keeps one informer per selector: the unselected type is another cache.
    expect(manager.informer(Resources.configMaps)).not.toBe(informer);
    const stop = new AbortController();
    const run = informer.run(stop.signal);
    await informer.waitForSync();
    expect(informer.list().map((o) => o.metadata.name)).toEqual(['wanted']);
    await cluster.admin.patch(Resources.configMaps, 'other', ns, { data: { a: '1' } });
    await cluster.admin.patch(Resources.configMaps, 'wanted', ns, { data: { a: '1' } });
    await eventually(() => informer.get(`${ns}/wanted`)?.data?.a === '1', { what: 'watch event' });
    expect(informer.list().map((o) => o.metadata.name)).toEqual(['wanted']);
    stop.abort();
    await run;
  });

  it('describes its cache with the digest a fresh list of the same objects gives, through changes', async () => {
    const ns = await cluster.namespace('inf-digest');
    // kube-controller-manager publishes kube-root-ca.crt into a new namespace on its own time: wait for it,
    // so that the informer's list and the fresh lists below see the same three objects.
    await eventually(
      async () => (await cluster.admin.get(Resources.configMaps, 'kube-root-ca.crt', ns)) !== undefined,
      {
        what: 'kube-root-ca.crt published',
      },
    );
    for (const name of ['a', 'b']) {
      await cluster.admin.create(Resources.configMaps, { metadata: { name, namespace: ns } });
    }
    const { informer, stop } = await configMapInformer(ns);
    const fresh = async () =>
      cacheDigest((await cluster.admin.list(Resources.configMaps, { namespace: ns })).items);
    try {
      // kube-root-ca.crt is there too.
      expect(informer.describe()).toMatchObject({
        resource: '/v1/configmaps',
        namespace: ns,
        filtered: false,
        synced: true,
        ...(await fresh()),
        objects: 3,
      });
      await cluster.admin.patch(Resources.configMaps, 'a', ns, { data: { k: 'v' } });
      await cluster.admin.delete(Resources.configMaps, 'b', ns);
      const expected = await fresh();
      expect(expected.objects).toBe(2);
      await eventually(() => informer.describe().digest === expected.digest, { what: 'the cache caught up' });
      expect(informer.describe().objects).toBe(2);
    } finally {
      await stop();
    }
  });

  it('builds an index added after sync from what it holds, and refuses a second function under its name', async () => {
    const ns = await cluster.namespace('inf-index');
    for (const [name, team] of [
      ['a', 'red'],
      ['b', 'blue'],
    ]) {
      await cluster.admin.create(Resources.configMaps, { metadata: { name, namespace: ns }, data: { team } });
    }
    const { informer, stop } = await configMapInformer(ns);
    const teamOf = (o: KubeObject & { data?: Record<string, string> }) => (o.data?.team ? [o.data.team] : []);
    informer.addIndex('team', teamOf);
    expect(informer.byIndex('team', 'red').map((o) => o.metadata.name)).toEqual(['a']);
    // The same function again (a second controller declaring the shared index) changes nothing.
    informer.addIndex('team', teamOf);
    expect(informer.byIndex('team', 'blue').map((o) => o.metadata.name)).toEqual(['b']);
    // Another function under that name would make one caller read the other's index: refused.
    expect(() => informer.addIndex('team', (o) => [o.metadata.name!])).toThrow(
      /index team already exists with another function/,
    );
    expect(() => informer.addIndex(ByNamespace, (o) => [o.metadata.name!])).toThrow(/already exists/);
    expect(informer.byIndex('team', 'red').map((o) => o.metadata.name)).toEqual(['a']);
    await stop();
  });
});

describe('finalizer helpers', () => {
  it('add and remove a finalizer, and refuse to work from a stale copy', async () => {
    const ns = await cluster.namespace('fin');
    const created = await cluster.admin.create<KubeObject>(Resources.configMaps, {
      metadata: { name: 'guarded', namespace: ns, finalizers: ['example.com/other'] },
    });
    const guarded = await ensureFinalizer(cluster.admin, Resources.configMaps, created, 'tenantkit.io/test');
    expect(guarded.metadata.finalizers).toEqual(['example.com/other', 'tenantkit.io/test']);
    expect(await ensureFinalizer(cluster.admin, Resources.configMaps, guarded, 'tenantkit.io/test')).toBe(
      guarded,
    );
    // A copy older than the last write must not overwrite someone else's finalizer list.
    const stale = await rejection(
      removeFinalizer(
        cluster.admin,
        Resources.configMaps,
        { ...created, metadata: { ...created.metadata, finalizers: ['tenantkit.io/test'] } },
        'tenantkit.io/test',
      ),
    );
    expect(isConflict(stale)).toBe(true);
    const released = await removeFinalizer(cluster.admin, Resources.configMaps, guarded, 'tenantkit.io/test');
    expect(released.metadata.finalizers).toEqual(['example.com/other']);
    await removeFinalizer(cluster.admin, Resources.configMaps, released, 'example.com/other');
  });
});

describe('controller watches', () => {
  it('reconciles every primary object again when a resource it watchesAll changes, and not on a filtered update', async () => {
    const ns = await cluster.namespace('watch-all');
    for (const name of ['a', 'b', 'c']) {
      await cluster.admin.create(Resources.configMaps, { metadata: { name, namespace: ns } });
    }
    const seen: string[] = [];
    const manager = new Manager({ client: cluster.admin, logger: silentLogger, component: 'watch-all-test' });
    manager
      .controller('watch-all')
      .for(Resources.configMaps)
      .watchesAll(
        Resources.secrets,
        (previous, current) => previous?.metadata.labels?.v !== current.metadata.labels?.v,
      )
      .complete(async (key) => {
        // The namespace's own kube-root-ca.crt is a primary too, and not ours.
        if (key.startsWith(`${ns}/`) && !key.endsWith('/kube-root-ca.crt')) seen.push(key);
        return undefined;
      });
    const stop = new AbortController();
    const run = manager.start(stop.signal);
    try {
      const ours = () => [...new Set(seen)].sort();
      await eventually(() => ours().length === 3, { what: 'first reconcile of every primary' });
      seen.length = 0;
      await cluster.admin.create(Resources.secrets, {
        metadata: { name: 'policy', namespace: ns, labels: { v: '1' } },
      });
      await eventually(() => ours().join() === [`${ns}/a`, `${ns}/b`, `${ns}/c`].join(), {
        what: 'every primary again after the watched object appeared',
      });
      seen.length = 0;
      // An update the predicate filters out (the label stays) reconciles nothing.
      await cluster.admin.patch(Resources.secrets, 'policy', ns, { metadata: { annotations: { x: 'y' } } });
      await new Promise((r) => setTimeout(r, 1000));
      expect(seen).toEqual([]);
      await cluster.admin.patch(Resources.secrets, 'policy', ns, { metadata: { labels: { v: '2' } } });
      await eventually(() => ours().length === 3, { what: 'every primary again after a relevant update' });
    } finally {
      stop.abort();
      await run.catch(() => {});
    }
  });
});
