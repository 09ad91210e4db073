// The garbage collector's rules, one pass at a time, against the real API server under the backup
// capability's own rules (what the chart grants). Every test gets its own namespace standing in for
// Velero's, where no Velero works, so only the collector deletes anything. What an informer cannot be made
// to do on demand (lag behind a write) is made deterministic with frozen cache snapshots: the collector
// reads its caches from plain maps the test fills, and the API server for everything else. The objects'
// phases are written here as admin on purpose: these tests judge the rules on each state; the ones made by
// a real Velero are in backup-gc.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cache, GarbageCollector, type GcApi } from '../../src/backup/controllers/gc/pass.ts';
import {
  type OriginKind,
  Origins,
  type PassResult,
  processedDeleteRequestMaxAgeMs,
} from '../../src/backup/controllers/gc/rules.ts';
import { backup } from '../../src/backup/index.ts';
import { GcReasonAnnotation, Labels, managedLabels } from '../../src/backup/model.ts';
import { baseControllerRules } from '../../src/capabilities.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { type KubeObject, Resources, type ResourceType } from '../../src/kube/resources.ts';
import { veleroNamespaceValue } from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { componentKubeconfig, grantControllerNamespace } from '../harness/components.ts';

const cluster = await TestCluster.connect();
const admin = cluster.admin;
type Obj = KubeObject & { status?: Record<string, unknown>; spec?: Record<string, unknown> };

/** The backup capability's rules under an identity of this file's own (other files run the capability). */
const collector = { ...backup, name: 'backup-gc-rules' };
/** The collector's client: the capability's identity; `afterList` runs once a list has been answered. */
let collectorClient: KubeClient;
let afterList: ((type: ResourceType) => Promise<void>) | undefined;
let listed: string[] = [];
const api: GcApi = {
  listAll: (async (type: ResourceType, options?: Parameters<KubeClient['listAll']>[1]) => {
    listed.push(type.plural);
    const page = await collectorClient.listAll(type, options);
    await afterList?.(type);
    return page;
  }) as GcApi['listAll'],
  get: ((type: ResourceType, name: string, namespace?: string) =>
    collectorClient.get(type, name, namespace)) as GcApi['get'],
  delete: ((...args: Parameters<KubeClient['delete']>) => collectorClient.delete(...args)) as GcApi['delete'],
  create: ((...args: Parameters<KubeClient['create']>) => collectorClient.create(...args)) as GcApi['create'],
  patch: ((...args: Parameters<KubeClient['patch']>) => collectorClient.patch(...args)) as GcApi['patch'],
};

beforeAll(async () => {
  const kubeconfig = await componentKubeconfig(cluster, `${collector.name}-controllers`, [
    ...baseControllerRules,
    ...backup.controllerRules,
  ]);
  collectorClient = KubeClient.fromKubeconfig({ path: kubeconfig });
});
afterAll(() => cluster.cleanup());

/** A frozen cache snapshot: what the collector's informer would hold, filled by the test. */
const cache = (): Cache & { objects: Map<string, KubeObject> } => {
  const objects = new Map<string, KubeObject>();
  return { objects, get: (key: string) => objects.get(key) };
};

const originSpecs: Record<string, Record<string, unknown>> = {
  NonAdminBackup: { backupSpec: {} },
  NonAdminRestore: { restoreSpec: { backupName: 'any' } },
  NonAdminBackupStorageLocation: {
    backupStorageLocationSpec: { provider: 'aws', objectStorage: { bucket: 'b' } },
  },
  NonAdminDownloadRequest: { target: { kind: 'BackupLog', name: 'any' } },
};

interface World {
  /** Stands in for Velero's namespace (nothing works there but the collector). */
  veleroNs: string;
  /** The tenant namespace origins live in. */
  shop: string;
  originCaches: Map<OriginKind, ReturnType<typeof cache>>;
  namespaces: ReturnType<typeof cache>;
  events: string[];
  clock: { offsetMs: number };
  run(): Promise<PassResult>;
  /** Metadata of a Velero-side object tenantkit made for origin `mine` (in `originNs`) with NACUUID `uuid`. */
  meta(name: string, origin: OriginKind, uuid: string, originNs?: string): KubeObject['metadata'];
  put(type: ResourceType, object: Obj): Promise<Obj>;
  /** The tenant object `mine` in the shop, whose status names `uuid` (none: no status yet). */
  origin(origin: OriginKind, uuid?: string): Promise<Obj>;
  has(type: ResourceType, name: string): Promise<boolean>;
}

async function world(): Promise<World> {
  const veleroNs = await cluster.namespace('gc-rules-velero');
  const shop = await cluster.namespace('gc-rules-shop');
  await grantControllerNamespace(cluster, collector, veleroNamespaceValue, veleroNs);
  const originCaches = new Map(Object.values(Origins).map((o) => [o, cache()]));
  const namespaces = cache();
  const events: string[] = [];
  const clock = { offsetMs: 0 };
  const gc = new GarbageCollector(api, silentLogger, {
    originCache: (o) => originCaches.get(o)!,
    namespaces,
    missingSince: new Map(),
    record: (_o, reason) => events.push(reason),
    now: () => Date.now() + clock.offsetMs,
  });
  let pass = 0;
  afterList = undefined;
  listed = [];
  return {
    veleroNs,
    shop,
    originCaches,
    namespaces,
    events,
    clock,
    run: () => gc.pass(veleroNs, ++pass, new AbortController().signal),
    meta: (name, origin, uuid, originNs = shop) => ({
      name,
      namespace: veleroNs,
      labels: { ...managedLabels, [origin.uuidLabel]: uuid },
      annotations: { [origin.nameAnnotation]: 'mine', [origin.namespaceAnnotation]: originNs },
    }),
    put: (type, object) => admin.create(type, object),
    async origin(origin, uuid) {
      const made = await admin.create<Obj>(origin.type, {
        metadata: { name: 'mine', namespace: shop },
        spec: originSpecs[origin.kind],
      } as Obj);
      if (!uuid) return made;
      return admin.patch<Obj>(
        origin.type,
        'mine',
        shop,
        { status: { [origin.statusRef]: { nacuuid: uuid } } },
        undefined,
        'status',
      );
    },
    has: async (type, name) => (await admin.get(type, name, veleroNs)) !== undefined,
  };
}

const restore = (w: World, uuid: string) =>
  w.put(VeleroResources.restores, {
    metadata: w.meta(`r-${uuid}`, Origins.nar, uuid),
    spec: { backupName: 'x' },
  });

describe('garbage collection of orphans', { timeout: 60_000 }, () => {
  it("keeps an object whose origin's status names it even when the cache has not seen that status yet", async () => {
    const w = await world();
    await restore(w, 'u1');
    const live = await w.origin(Origins.nar, 'u1');
    // The cache lags: it holds the NonAdminRestore from before its status was written, or not at all.
    w.originCaches.get(Origins.nar)!.objects.set(`${w.shop}/mine`, { ...live, status: {} } as Obj);
    expect((await w.run()).collected).toEqual({});
    w.originCaches.get(Origins.nar)!.objects.clear();
    expect((await w.run()).collected).toEqual({});
    expect(await w.has(VeleroResources.restores, 'r-u1')).toBe(true);
  });

  it('removes an object whose origin is gone, or names another object, once the API server agrees', async () => {
    const w = await world();
    await restore(w, 'gone');
    expect((await w.run()).collected).toEqual({ Restore: 1 });
    expect(await w.has(VeleroResources.restores, 'r-gone')).toBe(false);

    await restore(w, 'old');
    const live = await w.origin(Origins.nar, 'new');
    w.originCaches.get(Origins.nar)!.objects.set(`${w.shop}/mine`, live);
    expect((await w.run()).collected).toEqual({ Restore: 1 });
    expect(await w.has(VeleroResources.restores, 'r-old')).toBe(false);
  });

  it('keeps an object while the cache still shows its origin naming it (a lag the other way is safe)', async () => {
    const w = await world();
    await restore(w, 'u2');
    w.originCaches.get(Origins.nar)!.objects.set(`${w.shop}/mine`, {
      metadata: { name: 'mine', namespace: w.shop },
      status: { veleroRestore: { nacuuid: 'u2' } },
    } as Obj);
    expect((await w.run()).collected).toEqual({});
    expect(await w.has(VeleroResources.restores, 'r-u2')).toBe(true);
  });

  it('never deletes a newer object of the same name (uid precondition)', async () => {
    const w = await world();
    const listedOne = await restore(w, 'u3');
    // The list hands out the object as it was; right after, the server replaces it with another.
    afterList = async (type) => {
      if (type.plural !== 'restores') return;
      afterList = undefined;
      await admin.delete(VeleroResources.restores, listedOne.metadata.name!, w.veleroNs);
      await admin.create(VeleroResources.restores, {
        metadata: { ...w.meta('r-u3', Origins.nar, 'u3') },
        spec: { backupName: 'x' },
      } as Obj);
    };
    const result = await w.run();
    expect(result.errors).toEqual([]);
    expect(result.collected).toEqual({});
    const now = await admin.get(VeleroResources.restores, 'r-u3', w.veleroNs);
    expect(now?.metadata.uid).toBeDefined();
    expect(now?.metadata.uid).not.toBe(listedOne.metadata.uid);
    // The newer one is an orphan too (no origin): judged on its own on the next pass.
    expect((await w.run()).collected).toEqual({ Restore: 1 });
  });

  it('keeps unprocessed DeleteBackupRequests; removes processed orphans and ones processed over a day ago', async () => {
    const w = await world();
    const dbr = (name: string, uuid: string, phase: string) =>
      w.put(VeleroResources.deleteBackupRequests, {
        metadata: w.meta(name, Origins.nab, uuid),
        spec: { backupName: name },
        status: { phase },
      });
    await dbr('pending', 'a', 'InProgress');
    await dbr('done', 'b', 'Processed');
    const nab = await w.origin(Origins.nab, 'c');
    w.originCaches.get(Origins.nab)!.objects.set(`${w.shop}/mine`, nab);
    const old = await dbr('old', 'c', 'Processed');
    // creationTimestamp has whole seconds: the next one is made at least two seconds later.
    await new Promise((r) => setTimeout(r, 2_100));
    const recent = await dbr('recent', 'c', 'Processed');
    expect(Date.parse(recent.metadata.creationTimestamp!)).toBeGreaterThanOrEqual(
      Date.parse(old.metadata.creationTimestamp!) + 2_000,
    );
    // Today: only the processed orphan goes.
    expect((await w.run()).collected).toEqual({ DeleteBackupRequest: 1 });
    // A day and a second after `old` was made: `old` is over a day old, `recent` not yet.
    w.clock.offsetMs =
      Date.parse(old.metadata.creationTimestamp!) + processedDeleteRequestMaxAgeMs + 1_000 - Date.now();
    expect((await w.run()).collected).toEqual({ DeleteBackupRequest: 1 });
    const left = [];
    for (const n of ['pending', 'done', 'recent', 'old'])
      if (await w.has(VeleroResources.deleteBackupRequests, n)) left.push(n);
    expect(left).toEqual(['pending', 'recent']);
  });

  it('finds Secret copies by the NACUUIDs of storage locations, never by listing Secrets', async () => {
    const w = await world();
    const location = (uuid: string) =>
      w.put(VeleroResources.backupStorageLocations, {
        metadata: w.meta(uuid, Origins.nabsl, uuid),
        spec: { provider: 'aws', objectStorage: { bucket: 'b' } },
      });
    const secret = (uuid: string) =>
      w.put(Resources.secrets, {
        metadata: w.meta(uuid, Origins.nabsl, uuid),
        stringData: { cloud: 'x' },
      } as Obj);
    // An orphaned location and its Secret copy; a location in use and its copy.
    await location('gone-uuid');
    await secret('gone-uuid');
    const nabsl = await w.origin(Origins.nabsl, 'live-uuid');
    w.originCaches.get(Origins.nabsl)!.objects.set(`${w.shop}/mine`, nabsl);
    await location('live-uuid');
    await secret('live-uuid');
    expect((await w.run()).collected).toEqual({ BackupStorageLocation: 1, Secret: 1 });
    expect(await w.has(Resources.secrets, 'gone-uuid')).toBe(false);
    expect(await w.has(Resources.secrets, 'live-uuid')).toBe(true);
    expect(listed).not.toContain('secrets');
    // The kept copy is looked at again later, even once its location and origin are gone; then it goes.
    await admin.delete(VeleroResources.backupStorageLocations, 'live-uuid', w.veleroNs);
    await admin.delete(Origins.nabsl.type, 'mine', w.shop);
    w.originCaches.get(Origins.nabsl)!.objects.clear();
    expect((await w.run()).collected).toEqual({ Secret: 1 });
    expect(listed).not.toContain('secrets');
  });

  it('removes expired DownloadRequests whatever their origin says', async () => {
    const w = await world();
    const nadr = await w.origin(Origins.nadr, 'd');
    w.originCaches.get(Origins.nadr)!.objects.set(`${w.shop}/mine`, nadr);
    const request = (name: string, expiresInMs: number) =>
      w.put(VeleroResources.downloadRequests, {
        metadata: w.meta(name, Origins.nadr, 'd'),
        spec: { target: { kind: 'BackupLog', name: 'x' } },
        status: { phase: 'Processed', expiration: new Date(Date.now() + expiresInMs).toISOString() },
      });
    await request('expired', -1_000);
    await request('fresh', 600_000);
    expect((await w.run()).collected).toEqual({ DownloadRequest: 1 });
    expect(await w.has(VeleroResources.downloadRequests, 'expired')).toBe(false);
    expect(await w.has(VeleroResources.downloadRequests, 'fresh')).toBe(true);
  });
});

describe('garbage collection of Backups', { timeout: 120_000 }, () => {
  /** Velero's own default location (an admin's), and a tenant's own location. */
  async function locations(w: World) {
    await w.put(VeleroResources.backupStorageLocations, {
      metadata: { name: 'default', namespace: w.veleroNs },
      spec: { provider: 'aws', objectStorage: { bucket: 'b' }, default: true },
    });
    // Without its origin name the collector leaves the location itself alone (nothing to judge it by),
    // so the Backup in it is judged while the tenant location still exists.
    const tenant = w.meta('tenant-bsl', Origins.nabsl, 'l', 'deleted');
    await w.put(VeleroResources.backupStorageLocations, {
      metadata: { ...tenant, annotations: { [Origins.nabsl.namespaceAnnotation]: 'deleted' } },
      spec: { provider: 'aws', objectStorage: { bucket: 'b' } },
    });
  }
  const backupIn = (
    w: World,
    uuid: string,
    originNs: string,
    options: { phase?: string; location?: string; covers?: string; schedule?: string } = {},
  ) =>
    w.put(VeleroResources.backups, {
      // A schedule's run carries its NonAdminSchedule's labels and annotations, not a NonAdminBackup's.
      metadata: options.schedule
        ? w.meta(uuid, Origins.nas, options.schedule, originNs)
        : w.meta(uuid, Origins.nab, uuid, originNs),
      spec: {
        includedNamespaces: [options.covers ?? originNs],
        ...(options.location ? { storageLocation: options.location } : {}),
      },
      status: { phase: options.phase ?? 'Completed' },
    });
  const requests = async (w: World) =>
    (await admin.list<Obj>(VeleroResources.deleteBackupRequests, { namespace: w.veleroNs })).items;
  const backups = async (w: World) =>
    (await admin.list(VeleroResources.backups, { namespace: w.veleroNs })).items.map((b) => b.metadata.name);

  it('never deletes a Backup object; leaves it alone while its namespace exists', async () => {
    const w = await world();
    await locations(w);
    await backupIn(w, 'b1', w.shop);
    // In the namespace cache: kept without asking.
    w.namespaces.objects.set(w.shop, { metadata: { name: w.shop } });
    await w.run();
    // Not in the cache, but the API server has it: still kept.
    w.namespaces.objects.clear();
    await w.run();
    await w.run();
    expect(await backups(w)).toEqual(['b1']);
    expect(await requests(w)).toEqual([]);
  });

  it('asks Velero to delete the data once the namespace was gone on two passes, and only once', async () => {
    const w = await world();
    await locations(w);
    const gone = cluster.unique('never-made');
    const made = await backupIn(w, 'b2', gone);
    await backupIn(w, 'b3', gone, { phase: 'InProgress' });
    expect((await w.run()).dataDeletions).toBe(0);
    const second = await w.run();
    expect(second.dataDeletions).toBe(1);
    expect(w.events).toEqual(['BackupDataDeletionRequested']);
    const request = (await admin.get<Obj>(VeleroResources.deleteBackupRequests, 'b2', w.veleroNs))!;
    expect(request.spec).toEqual({ backupName: 'b2' });
    expect(request.metadata.labels).toMatchObject({
      ...managedLabels,
      [Labels.nabUuid]: 'b2',
      [Labels.backupName]: 'b2',
      [Labels.backupUid]: made.metadata.uid,
    });
    expect(request.metadata.annotations).toMatchObject({
      [Origins.nab.nameAnnotation]: 'mine',
      [Origins.nab.namespaceAnnotation]: gone,
    });
    // While Velero has not processed it (none works here), no second request; the unfinished Backup waits.
    expect((await w.run()).dataDeletions).toBe(0);
    expect((await requests(w)).map((r) => r.metadata.name)).toEqual(['b2']);
    expect(await backups(w)).toEqual(['b2', 'b3']);
  });

  it("never asks for the data of a backup in a tenant's own location, or of one that belongs to nobody", async () => {
    const w = await world();
    await locations(w);
    await backupIn(w, 'b5', 'deleted', { location: 'tenant-bsl' });
    // Claims namespace "deleted" but covers another one: not provably anybody's.
    await backupIn(w, 'b6', 'deleted', { covers: 'elsewhere' });
    for (let i = 0; i < 3; i++) expect((await w.run()).dataDeletions).toBe(0);
    expect(await requests(w)).toEqual([]);
    expect(await backups(w)).toEqual(['b5', 'b6']);
  });

  it('hands a Backup Velero refused as "still in progress" back to its finalizer, asks again once it finished, and at most five times', async () => {
    const w = await world();
    await locations(w);
    const gone = cluster.unique('held');
    await backupIn(w, 'b8', gone);
    await w.run();
    expect((await w.run()).dataDeletions).toBe(1);
    // Velero refuses: its tracker race (held.ts) holds the finished Backup as running.
    const refuse = async () => {
      const request = (await admin.get<Obj>(VeleroResources.deleteBackupRequests, 'b8', w.veleroNs))!;
      await admin.patch(VeleroResources.deleteBackupRequests, 'b8', w.veleroNs, {
        status: { phase: 'Processed', errors: ['backup is still in progress'] },
      });
      return request.metadata.uid;
    };
    const refusedUid = await refuse();
    const pass = w.run();
    // The pass hands the Backup back (phase Finalizing again, the attempt recorded); this test stands in
    // for Velero's finalizer, which finishes it again.
    const handed = await eventually(
      async () => {
        const b = await admin.get<Obj>(VeleroResources.backups, 'b8', w.veleroNs);
        return b?.status?.phase === 'Finalizing' ? b : undefined;
      },
      { timeoutMs: 15_000, what: 'Backup b8 handed back (phase Finalizing)' },
    );
    expect(handed.metadata.annotations?.['tenantkit.io/refinalized-at-attempt']).toBe('1');
    await admin.patch(VeleroResources.backups, 'b8', w.veleroNs, { status: { phase: 'Completed' } });
    expect((await pass).dataDeletions).toBe(1);
    const again = (await admin.get<Obj>(VeleroResources.deleteBackupRequests, 'b8', w.veleroNs))!;
    expect(again.metadata.uid).not.toBe(refusedUid);
    expect(again.status?.phase).toBeUndefined();
    expect(w.events).toEqual([
      'BackupDataDeletionRequested',
      'BackupHandedBackToVelero',
      'BackupDataDeletionRequested',
    ]);

    // Handed back five times already: not again (only a restart of Velero ends it, as the Event says).
    await admin.patch(VeleroResources.backups, 'b8', w.veleroNs, {
      metadata: { annotations: { 'tenantkit.io/refinalized-at-attempt': '5' } },
    });
    await refuse();
    w.events.length = 0;
    expect((await w.run()).dataDeletions).toBe(0);
    expect(w.events).toEqual(['VeleroHoldsBackupAsRunning']);
    const b8 = (await admin.get<Obj>(VeleroResources.backups, 'b8', w.veleroNs))!;
    expect(b8.status?.phase).toBe('Completed');
  });

  it('asks again on the next pass when Velero refused a request and the Backup stayed, for a schedule run too', async () => {
    const w = await world();
    await locations(w);
    const gone = cluster.unique('refused');
    await backupIn(w, 'b10', gone);
    await backupIn(w, 'b11', gone, { schedule: 'nightly-uuid' });
    await w.run();
    expect((await w.run()).dataDeletions).toBe(2);
    // Velero refuses both (as it does while the location is read-only) and keeps the Backups.
    const refused = new Map<string, string | undefined>();
    for (const name of ['b10', 'b11']) {
      const request = (await admin.get<Obj>(VeleroResources.deleteBackupRequests, name, w.veleroNs))!;
      expect(request.metadata.annotations?.[GcReasonAnnotation]).toMatch(/^namespace refused-.* is gone$/);
      await admin.patch(VeleroResources.deleteBackupRequests, name, w.veleroNs, {
        status: {
          phase: 'Processed',
          errors: [
            'cannot delete backup because backup storage location default is currently in read-only mode',
          ],
        },
      });
      refused.set(name, request.metadata.uid);
    }
    // The next pass asks again for both. Before, the schedule run's refused request (it names no
    // NonAdminBackup) was kept for a day, and no new one could be made under its name until then.
    expect((await w.run()).dataDeletions).toBe(2);
    for (const name of ['b10', 'b11']) {
      const again = (await admin.get<Obj>(VeleroResources.deleteBackupRequests, name, w.veleroNs))!;
      expect(again.metadata.uid, name).not.toBe(refused.get(name));
      expect(again.status?.phase, name).toBeUndefined();
    }
    const run = (await admin.get<Obj>(VeleroResources.deleteBackupRequests, 'b11', w.veleroNs))!;
    expect(run.metadata.annotations).toMatchObject({ [Origins.nas.namespaceAnnotation]: gone });
    // While Velero has not processed them, nothing more.
    expect((await w.run()).dataDeletions).toBe(0);
  });

  it('starts the wait again when the namespace comes back in between', async () => {
    const w = await world();
    await locations(w);
    const flaky = cluster.unique('flaky');
    await backupIn(w, 'b4', flaky);
    await w.run();
    await admin.create(Resources.namespaces, { metadata: { name: flaky } });
    await w.run();
    await admin.delete(Resources.namespaces, flaky);
    await eventually(async () => !(await admin.get(Resources.namespaces, flaky)), {
      timeoutMs: 60_000,
      what: `namespace ${flaky} gone`,
    });
    expect((await w.run()).dataDeletions).toBe(0);
    expect((await w.run()).dataDeletions).toBe(1);
  });
});
