// The garbage collector's rules on a stand-in API server and stand-in caches, so that what an informer
// cannot be made to do on demand (lag behind a write) is tested deterministically.
import { describe, expect, it } from 'vitest';
import {
  type Cache,
  GarbageCollector,
  type GcApi,
  gcCondition,
  Origins,
  type PassResult,
  precheck,
  processedDeleteRequestMaxAgeMs,
  Targets,
} from '../../src/backup/gc-controller.ts';
import { Labels, managedLabels } from '../../src/backup/names.ts';
import { ApiError } from '../../src/kube/client.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { type KubeObject, Resources, type ResourceType } from '../../src/kube/resources.ts';
import { VeleroResources } from '../../src/kube/velero.ts';

const veleroNs = 'velero';
type Obj = KubeObject & { status?: Record<string, unknown>; spec?: Record<string, unknown> };

/** An API server in memory: objects by resource, namespace and name; uid preconditions honoured. */
class FakeApi implements GcApi {
  readonly objects = new Map<string, Obj>();
  readonly deleted: string[] = [];
  private uids = 0;
  private key = (type: ResourceType, namespace: string | undefined, name: string) =>
    `${type.plural}/${namespace ?? ''}/${name}`;

  put(type: ResourceType, object: Obj): Obj {
    const stored = { ...object, metadata: { uid: `uid-${++this.uids}`, ...object.metadata } };
    this.objects.set(this.key(type, object.metadata.namespace, object.metadata.name!), stored);
    return stored;
  }

  async listAll<T extends KubeObject>(
    type: ResourceType,
    options: { namespace?: string; labelSelector?: string } = {},
  ) {
    const prefix = `${type.plural}/${options.namespace ?? ''}/`;
    // The only selector GC uses is tenantkit's managed labels.
    const selected = (o: Obj) =>
      !options.labelSelector || o.metadata.labels?.[Labels.managedBy] === 'tenantkit-backup';
    const items = [...this.objects.entries()]
      .filter(([k, o]) => k.startsWith(prefix) && selected(o))
      .map(([, o]) => o as unknown as T);
    return { metadata: {}, items };
  }

  async get<T extends KubeObject>(type: ResourceType, name: string, namespace?: string) {
    return this.objects.get(this.key(type, namespace, name)) as T | undefined;
  }

  async delete(
    type: ResourceType,
    name: string,
    namespace?: string,
    options: { preconditions?: { uid?: string } } = {},
  ) {
    const k = this.key(type, namespace, name);
    const o = this.objects.get(k);
    if (!o) return false;
    if (options.preconditions?.uid && options.preconditions.uid !== o.metadata.uid) {
      throw new ApiError(409, 'Conflict', 'Precondition failed: UID in precondition', {});
    }
    this.objects.delete(k);
    this.deleted.push(k);
    return true;
  }

  async create<T extends KubeObject>(type: ResourceType, object: T) {
    const k = this.key(type, object.metadata.namespace, object.metadata.name!);
    if (this.objects.has(k)) throw new ApiError(409, 'AlreadyExists', 'already exists', {});
    return this.put(type, object) as unknown as T;
  }
}

const cache = (objects: Obj[] = []): Cache & { objects: Map<string, Obj> } => {
  const map = new Map(
    objects.map((o) => [
      o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name!,
      o,
    ]),
  );
  return { objects: map, get: (key: string) => map.get(key) as KubeObject | undefined };
};

function setup() {
  const api = new FakeApi();
  const originCaches = new Map(Object.values(Origins).map((o) => [o, cache()]));
  const namespaces = cache();
  const events: string[] = [];
  const gc = new GarbageCollector(api, silentLogger, {
    originCache: (o) => originCaches.get(o)!,
    namespaces,
    missingSince: new Map(),
    record: (_o, reason) => events.push(reason),
  });
  let pass = 0;
  const run = async (): Promise<PassResult> => gc.pass(veleroNs, ++pass, new AbortController().signal);
  return { api, originCaches, namespaces, events, run };
}

const meta = (
  name: string,
  origin: (typeof Origins)[keyof typeof Origins],
  uuid: string,
  originNs = 'shop',
) => ({
  name,
  namespace: veleroNs,
  labels: { ...managedLabels, [origin.uuidLabel]: uuid },
  annotations: { [origin.nameAnnotation]: 'mine', [origin.namespaceAnnotation]: originNs },
});
const nar = (uuid?: string): Obj => ({
  metadata: { name: 'mine', namespace: 'shop' },
  ...(uuid ? { status: { veleroRestore: { nacuuid: uuid } } } : {}),
});
const restoreAt = (api: FakeApi, uuid: string) =>
  api.put(VeleroResources.restores, { metadata: meta(`r-${uuid}`, Origins.nar, uuid) });
const has = (api: FakeApi, type: ResourceType, name: string) =>
  api.objects.has(`${type.plural}/${veleroNs}/${name}`);

describe('garbage collection of orphans', () => {
  it("keeps an object whose origin's status names it even when the cache has not seen that status yet", async () => {
    const { api, originCaches, run } = setup();
    restoreAt(api, 'u1');
    api.put(Origins.nar.type, nar('u1'));
    // The cache lags: it has the NonAdminRestore from before its status was written, or not at all.
    originCaches.get(Origins.nar)!.objects.set('shop/mine', nar());
    expect((await run()).collected).toEqual({});
    originCaches.get(Origins.nar)!.objects.clear();
    expect((await run()).collected).toEqual({});
    expect(has(api, VeleroResources.restores, 'r-u1')).toBe(true);
  });

  it('removes an object whose origin is gone, or names another object, once the API server agrees', async () => {
    const { api, originCaches, run } = setup();
    restoreAt(api, 'gone');
    const result = await run();
    expect(result.collected).toEqual({ Restore: 1 });
    expect(has(api, VeleroResources.restores, 'r-gone')).toBe(false);

    restoreAt(api, 'old');
    api.put(Origins.nar.type, nar('new'));
    originCaches.get(Origins.nar)!.objects.set('shop/mine', nar('new'));
    expect((await run()).collected).toEqual({ Restore: 1 });
    expect(has(api, VeleroResources.restores, 'r-old')).toBe(false);
  });

  it('keeps an object while the cache still shows its origin naming it (a lag the other way is safe)', async () => {
    const { api, originCaches, run } = setup();
    restoreAt(api, 'u2');
    originCaches.get(Origins.nar)!.objects.set('shop/mine', nar('u2'));
    expect((await run()).collected).toEqual({});
  });

  it('never deletes a newer object of the same name (uid precondition)', async () => {
    const { api, run } = setup();
    const listed = restoreAt(api, 'u3');
    const real = api.listAll.bind(api);
    // The list hands out the object as it was; the server has since replaced it with another.
    api.listAll = (async (type: ResourceType, options?: { namespace?: string }) => {
      const page = await real(type, options);
      if (type.plural === 'restores')
        api.put(VeleroResources.restores, { ...listed, metadata: { ...listed.metadata, uid: 'uid-newer' } });
      return page;
    }) as typeof api.listAll;
    const result = await run();
    expect(result.errors).toEqual([]);
    expect(result.collected).toEqual({});
    expect(has(api, VeleroResources.restores, 'r-u3')).toBe(true);
  });

  it('keeps unprocessed DeleteBackupRequests; removes processed orphans and ones processed over a day ago', async () => {
    const { api, originCaches, run } = setup();
    const dbr = (name: string, uuid: string, phase: string, created = new Date()) =>
      api.put(VeleroResources.deleteBackupRequests, {
        metadata: { ...meta(name, Origins.nab, uuid), creationTimestamp: created.toISOString() },
        status: { phase },
      });
    dbr('pending', 'a', 'InProgress');
    dbr('done', 'b', 'Processed');
    const nab = { metadata: { name: 'mine', namespace: 'shop' }, status: { veleroBackup: { nacuuid: 'c' } } };
    api.put(Origins.nab.type, nab);
    originCaches.get(Origins.nab)!.objects.set('shop/mine', nab);
    dbr('recent', 'c', 'Processed');
    dbr('old', 'c', 'Processed', new Date(Date.now() - processedDeleteRequestMaxAgeMs - 60_000));
    expect((await run()).collected).toEqual({ DeleteBackupRequest: 2 });
    const left = ['pending', 'done', 'recent', 'old'].filter((n) =>
      has(api, VeleroResources.deleteBackupRequests, n),
    );
    expect(left).toEqual(['pending', 'recent']);
  });

  it('finds Secret copies by the NACUUIDs of storage locations, never by listing Secrets', async () => {
    const { api, originCaches, run } = setup();
    const listed: string[] = [];
    const list = api.listAll.bind(api);
    api.listAll = (async (type: ResourceType, options?: { namespace?: string }) => {
      listed.push(type.plural);
      return list(type, options);
    }) as typeof api.listAll;
    // An orphaned location and its Secret copy; a location in use and its copy.
    api.put(VeleroResources.backupStorageLocations, {
      metadata: meta('gone-uuid', Origins.nabsl, 'gone-uuid'),
    });
    api.put(Resources.secrets, { metadata: meta('gone-uuid', Origins.nabsl, 'gone-uuid') });
    const nabsl = {
      metadata: { name: 'mine', namespace: 'shop' },
      status: { veleroBackupStorageLocation: { nacuuid: 'live-uuid' } },
    };
    originCaches.get(Origins.nabsl)!.objects.set('shop/mine', nabsl);
    api.put(VeleroResources.backupStorageLocations, {
      metadata: meta('live-uuid', Origins.nabsl, 'live-uuid'),
    });
    api.put(Resources.secrets, { metadata: meta('live-uuid', Origins.nabsl, 'live-uuid') });
    expect((await run()).collected).toEqual({ BackupStorageLocation: 1, Secret: 1 });
    expect(has(api, Resources.secrets, 'gone-uuid')).toBe(false);
    expect(has(api, Resources.secrets, 'live-uuid')).toBe(true);
    expect(listed).not.toContain('secrets');
    // The kept copy is looked at again later, even once its location is gone; then it goes too.
    api.objects.delete(`backupstoragelocations/${veleroNs}/live-uuid`);
    originCaches.get(Origins.nabsl)!.objects.clear();
    expect((await run()).collected).toEqual({ Secret: 1 });
  });

  it('removes expired DownloadRequests whatever their origin says', async () => {
    const { api, originCaches, run } = setup();
    const nadr = { metadata: { name: 'mine', namespace: 'shop' }, status: { velero: { nacuuid: 'd' } } };
    originCaches.get(Origins.nadr)!.objects.set('shop/mine', nadr);
    api.put(VeleroResources.downloadRequests, {
      metadata: meta('expired', Origins.nadr, 'd'),
      status: { phase: 'Processed', expiration: new Date(Date.now() - 1000).toISOString() },
    });
    api.put(VeleroResources.downloadRequests, {
      metadata: meta('fresh', Origins.nadr, 'd'),
      status: { phase: 'Processed', expiration: new Date(Date.now() + 600_000).toISOString() },
    });
    expect((await run()).collected).toEqual({ DownloadRequest: 1 });
    expect(has(api, VeleroResources.downloadRequests, 'fresh')).toBe(true);
  });
});

describe('garbage collection of Backups', () => {
  // Velero's own default location (an admin's), and a tenant's own location.
  const locations = (api: FakeApi) => {
    api.put(VeleroResources.backupStorageLocations, {
      metadata: { name: 'default', namespace: veleroNs },
      spec: { default: true },
    });
    // Without its origin name GC leaves the location itself alone (nothing to judge it by), so the
    // Backup below is judged while its tenant location still exists.
    const tenant = meta('tenant-bsl', Origins.nabsl, 'l', 'deleted');
    api.put(VeleroResources.backupStorageLocations, {
      metadata: { ...tenant, annotations: { [Origins.nabsl.namespaceAnnotation]: 'deleted' } },
    });
  };
  const backupIn = (api: FakeApi, uuid: string, originNs: string, phase = 'Completed', location?: string) => {
    if (!api.objects.has(`backupstoragelocations/${veleroNs}/default`)) locations(api);
    return api.put(VeleroResources.backups, {
      metadata: meta(uuid, Origins.nab, uuid, originNs),
      spec: { includedNamespaces: [originNs], ...(location ? { storageLocation: location } : {}) },
      status: { phase },
    });
  };

  it('never deletes a Backup object; leaves it alone while its namespace exists', async () => {
    const { api, namespaces, run } = setup();
    backupIn(api, 'b1', 'shop');
    namespaces.objects.set('shop', { metadata: { name: 'shop' } });
    await run();
    // Not in the cache, but the API server has it: still there.
    namespaces.objects.clear();
    api.put(Resources.namespaces, { metadata: { name: 'shop' } });
    await run();
    expect(api.deleted.filter((k) => !k.startsWith('backupstoragelocations/'))).toEqual([]);
    expect([...api.objects.keys()].some((k) => k.startsWith('deletebackuprequests/'))).toBe(false);
  });

  it('asks Velero to delete the data once the namespace was gone on two passes, and only once', async () => {
    const { api, events, run } = setup();
    const backup = backupIn(api, 'b2', 'deleted');
    backupIn(api, 'b3', 'deleted', 'InProgress');
    expect((await run()).dataDeletions).toBe(0);
    const second = await run();
    expect(second.dataDeletions).toBe(1);
    expect(events).toEqual(['BackupDataDeletionRequested']);
    const request = (await api.get<Obj>(VeleroResources.deleteBackupRequests, 'b2', veleroNs))!;
    expect(request.spec).toEqual({ backupName: 'b2' });
    expect(request.metadata.labels).toMatchObject({
      ...managedLabels,
      [Labels.nabUuid]: 'b2',
      [Labels.backupName]: 'b2',
      [Labels.backupUid]: backup.metadata.uid,
    });
    expect(request.metadata.annotations).toMatchObject({
      [Origins.nab.nameAnnotation]: 'mine',
      [Origins.nab.namespaceAnnotation]: 'deleted',
    });
    // While Velero has not processed it, no second request; the unfinished Backup waits.
    expect((await run()).dataDeletions).toBe(0);
    expect(api.deleted.filter((k) => !k.startsWith('backupstoragelocations/'))).toEqual([]);
    expect(await api.get(VeleroResources.deleteBackupRequests, 'b3', veleroNs)).toBeUndefined();
  });

  it("never asks for the data of a backup in a tenant's own location, or of one that belongs to nobody", async () => {
    const { api, run } = setup();
    backupIn(api, 'b5', 'deleted', 'Completed', 'tenant-bsl');
    // Claims namespace "deleted" but covers another one: not provably anybody's.
    const b6 = backupIn(api, 'b6', 'deleted');
    b6.spec = { includedNamespaces: ['elsewhere'] };
    for (let i = 0; i < 3; i++) expect((await run()).dataDeletions).toBe(0);
    expect(api.deleted.filter((k) => !k.startsWith('backupstoragelocations/'))).toEqual([]);
  });

  it('starts the wait again when the namespace comes back in between', async () => {
    const { api, run } = setup();
    backupIn(api, 'b4', 'flaky');
    await run();
    api.put(Resources.namespaces, { metadata: { name: 'flaky' } });
    await run();
    api.objects.delete('namespaces//flaky');
    expect((await run()).dataDeletions).toBe(0);
    expect((await run()).dataDeletions).toBe(1);
  });
});

describe('precheck', () => {
  const restores = Targets.find((t) => t.kind === 'Restore')!;
  it("looks only at tenantkit's objects in Velero's namespace that carry a full identity", () => {
    const now = Date.now();
    const m = meta('x', Origins.nar, 'u');
    expect(
      precheck(restores, { metadata: { ...m, labels: { [Labels.narUuid]: 'u' } } }, veleroNs, now).verdict,
    ).toBe('keep');
    expect(precheck(restores, { metadata: { ...m, namespace: 'shop' } }, veleroNs, now).verdict).toBe('keep');
    expect(precheck(restores, { metadata: { ...m, annotations: {} } }, veleroNs, now).verdict).toBe('keep');
    expect(precheck(restores, { metadata: { ...m, deletionTimestamp: 'x' } }, veleroNs, now).verdict).toBe(
      'keep',
    );
    expect(precheck(restores, { metadata: m }, veleroNs, now).verdict).toBe('origin');
  });
});

describe('the config condition', () => {
  it('says what the last pass removed, and that GC is off at 0', () => {
    expect(gcCondition({ collected: {}, dataDeletions: 0, errors: [] }, 3)).toMatchObject({
      status: 'True',
      reason: 'Collected',
      message: 'the last pass found no orphaned Velero-side objects',
      observedGeneration: 3,
    });
    expect(
      gcCondition({ collected: { Secret: 2, Restore: 1 }, dataDeletions: 1, errors: [] }, 3).message,
    ).toBe("the last pass removed 1 Restore, 2 Secret; asked Velero to delete 1 backups' data");
    expect(
      gcCondition({ collected: {}, dataDeletions: 0, errors: ['list Secret: forbidden'] }, 3),
    ).toMatchObject({
      status: 'False',
      reason: 'Failed',
    });
    expect(gcCondition('disabled', 3)).toMatchObject({ status: 'False', reason: 'Disabled' });
  });
});
