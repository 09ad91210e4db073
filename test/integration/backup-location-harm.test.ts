// What one tenant's storage location can do to everyone else's backups, bounded, tried as tenants through
// the real API server with a real Velero: a store that accepts connections and never answers is caught by
// tenantkit's probe (no Velero BSL, the tenant's backups wait, another tenant's backup completes); an admin's
// endpoint allow-list and the link-local rule refuse at admission; a namespace holds at most the admin's
// number of places in Velero's queue; a location is not removed from Velero while a backup to it runs.
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Annotations } from '../../src/backup/model.ts';
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  type NonAdminBackupStorageLocation,
  NonAdminBackupStorageLocationCrd,
} from '../../src/crds/backup.ts';
import { type Backup, finishedPhases, VeleroResources } from '../../src/crds/velero.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import {
  type BackupEnvironment,
  condition,
  settledBackup,
  startBackupEnvironment,
  veleroQueueMs,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
const nabslType = NonAdminBackupStorageLocationCrd.type;
const nabType = NonAdminBackupCrd.type;
const tenantBucket = 'harm-bucket';

let env: BackupEnvironment;
let ns: string;
let tenant: KubeClient;
let otherNs: string;
let other: KubeClient;

// A store that accepts every connection and never says a word.
const held: Socket[] = [];
const silent = createServer((socket) => held.push(socket));
let silentUrl = '';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const locationSpec = (s3Url: string) => ({
  provider: 'aws',
  objectStorage: { bucket: tenantBucket },
  credential: { name: 's3-creds', key: 'cloud' },
  config: { region: 'minio', s3ForcePathStyle: 'true', s3Url },
});
const createLocation = (name: string, s3Url: string, client = tenant, namespace = ns) =>
  client.create(nabslType, {
    metadata: { name, namespace },
    spec: { backupStorageLocationSpec: locationSpec(s3Url) },
  } as KubeObject);
const createBackup = (
  name: string,
  backupSpec: Record<string, unknown> = {},
  client = tenant,
  namespace = ns,
) => client.create(nabType, { metadata: { name, namespace }, spec: { backupSpec } } as KubeObject);
const nab = (name: string, namespace = ns) => cluster.admin.get<NonAdminBackup>(nabType, name, namespace);
const nabsl = (name: string) => cluster.admin.get<NonAdminBackupStorageLocation>(nabslType, name, ns);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: Error) => err.message,
  );
/** tenantkit's Velero Backups made for NABs of `namespace`. */
const veleroBackupsOf = async (namespace: string) =>
  (
    await cluster.admin.list<Backup>(VeleroResources.backups, { namespace: env.velero.namespace })
  ).items.filter((b) => b.metadata.annotations?.[Annotations.nabNamespace] === namespace);

beforeAll(async () => {
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
  env = await startBackupEnvironment(cluster);
  const made = await env.velero.s3Fetch({ method: 'PUT', path: `/${tenantBucket}` });
  // The store answers only keys it was given: the one the tenant's locations use here.
  await env.velero.addKey({ accessKeyId: 'k', secretAccessKey: 's' });
  expect(made.ok, await made.text()).toBe(true);
  ({ namespace: ns, tenant } = await env.tenantNamespace('hang'));
  ({ namespace: otherNs, tenant: other } = await env.tenantNamespace('bystander', 'bob'));
  await tenant.create(Resources.secrets, {
    metadata: { name: 's3-creds', namespace: ns },
    data: { cloud: b64('[default]\naws_access_key_id = k\naws_secret_access_key = s\n') },
  } as KubeObject);
}, veleroStartTimeoutMs);

afterAll(async () => {
  await env?.stop();
  for (const s of held) s.destroy();
  silent.close();
});

describe('a tenant storage location', { timeout: 3 * veleroQueueMs }, () => {
  it("whose store never answers gets no Velero BSL, its backups wait, and another tenant's backup completes", async () => {
    const started = Date.now();
    await createLocation('silent', silentUrl);
    const caught = await eventually(
      async () => {
        const o = await nabsl('silent');
        const c = condition(o, 'EndpointReachable');
        if (c?.status === 'False') return o!;
        throw new Error(JSON.stringify(o?.status));
      },
      { timeoutMs: 30_000, what: 'EndpointReachable=False' },
    );
    console.log(`[figures] silent store caught ${Date.now() - started} ms after the location was created`);
    expect(condition(caught, 'EndpointReachable')).toMatchObject({
      reason: 'EndpointUnreachable',
      message: expect.stringContaining(`${silentUrl} did not answer within 5s`),
    });
    const uuid = caught.status?.veleroBackupStorageLocation?.nacuuid;
    expect(uuid).toBeTruthy();
    expect(
      await cluster.admin.get(VeleroResources.backupStorageLocations, uuid!, env.velero.namespace),
    ).toBeUndefined();

    await createBackup('to-silent', { storageLocation: 'silent' });
    const waiting = await eventually(
      async () => {
        const o = await nab('to-silent');
        if (condition(o, 'Queued')?.reason === 'StorageLocationNotReady') return o!;
        throw new Error(JSON.stringify(o?.status));
      },
      { what: 'the NAB waiting for its location' },
    );
    expect(condition(waiting, 'Queued')?.message).toContain('did not answer within 5s');

    await createBackup('bystander', {}, other, otherNs);
    const done = await settledBackup(cluster, otherNs, 'bystander');
    expect(done.status?.veleroBackup?.status?.phase).toBe('Completed');
    expect(await veleroBackupsOf(ns)).toEqual([]);
  });

  it("is refused at admission outside the admin's endpoint list, and at link-local addresses always", async () => {
    expect(await refusal(createLocation('metadata', 'http://169.254.169.254'))).toContain(
      'link-local address (169.254.169.254)',
    );
    await env.setPolicy({ allowedStorageEndpoints: ['s3.example.com', '*.storage.corp:9000'] });
    try {
      const refused = await eventually(
        async () => {
          const message = await refusal(createLocation('own', env.velero.s3Url));
          if (!message) throw new Error('allowed');
          return message;
        },
        { what: 'the allow-list applied' },
      );
      expect(refused).toContain('is not an endpoint tenants may use on this cluster');
      expect(refused).toContain('allowed: s3.example.com, *.storage.corp:9000');
    } finally {
      await env.setPolicy({});
    }
  });

  it("holds a namespace's backups beyond the admin's share of Velero's queue, and runs them in order", async () => {
    await env.setPolicy({ maxQueuedBackupsPerNamespace: 1 });
    try {
      // Velero paused while both are handed on: the first one's Velero Backup cannot finish before the
      // second is placed (a small backup completes in well under a second, quicker than a loaded
      // controller may come to the second).
      const held = await env.velero.paused(async () => {
        await createBackup('first');
        await createBackup('second');
        return eventually(
          async () => {
            const o = await nab('second');
            if (condition(o, 'Queued')?.reason === 'NamespaceQueueLimit') return o!;
            throw new Error(JSON.stringify(o?.status));
          },
          { timeoutMs: 30_000, what: 'the second NAB held by the namespace limit' },
        );
      });
      expect(condition(held, 'Queued')?.message).toContain('the admin allows 1 at once');
      // Never two unfinished Velero Backups of the namespace at once, while both run to the end.
      let most = 0;
      await eventually(
        async () => {
          const backups = await veleroBackupsOf(ns);
          const running = backups.filter(
            (b) => !(finishedPhases as readonly string[]).includes(String(b.status?.phase ?? '')),
          );
          most = Math.max(most, running.length);
          if (backups.length === 2 && running.length === 0) return true;
          throw new Error(`${backups.length} backups, ${running.length} unfinished`);
        },
        { timeoutMs: 3 * veleroQueueMs - 30_000, intervalMs: 200, what: 'both backups finished' },
      );
      expect(most).toBe(1);
      // The NonAdminBackups mirror their Velero Backups' status a moment after Velero writes it.
      const [first, second] = await eventually(
        async () => {
          const both = [await nab('first'), await nab('second')];
          const phases = both.map((n) => n?.status?.veleroBackup?.status?.phase);
          if (phases.every((p) => p === 'Completed')) return both;
          throw new Error(`mirrored phases: ${phases.join(', ')}`);
        },
        { timeoutMs: 30_000, what: 'both NonAdminBackups showing Completed' },
      );
      const startOf = (n: NonAdminBackup | undefined) =>
        String((n?.status?.veleroBackup?.status as { startTimestamp?: string } | undefined)?.startTimestamp);
      expect(startOf(first) <= startOf(second)).toBe(true);
    } finally {
      await env.setPolicy({});
    }
  });

  it('stays in Velero while a backup to it runs, so Velero never fails that backup for a missing location', async () => {
    await createLocation('busy', env.velero.s3Url);
    await eventually(
      async () => {
        const o = await nabsl('busy');
        if (o?.status?.veleroBackupStorageLocation?.status?.phase === 'Available') return o;
        throw new Error(JSON.stringify(o?.status));
      },
      { timeoutMs: 60_000, what: 'location Available' },
    );
    await createBackup('to-busy', { storageLocation: 'busy' });
    await eventually(
      async () =>
        (await veleroBackupsOf(ns)).find((b) => b.metadata.annotations?.[Annotations.nabName] === 'to-busy'),
      { what: 'the Velero Backup to the location' },
    );
    await tenant.delete(nabslType, 'busy', ns);
    const done = await settledBackup(cluster, ns, 'to-busy');
    expect(done.status?.veleroBackup?.status?.phase).toBe('Completed');
    await eventually(async () => (await nabsl('busy')) === undefined, {
      timeoutMs: 60_000,
      what: 'the location gone once its backup finished',
    });
  });

  it('takes a backup naming a location created a moment before it (one kubectl apply of both)', async () => {
    await createLocation('quick', env.velero.s3Url);
    // Straight after: the webhook's cache may not have seen the location yet, the API server has.
    await createBackup('to-quick', { storageLocation: 'quick' });
    const done = await settledBackup(cluster, ns, 'to-quick');
    expect(done.status?.veleroBackup?.status?.phase).toBe('Completed');
  });
});
