// NonAdminBackup end to end, as a tenant, through the real API server and a real Velero writing to a real
// S3 store: accepted backups run limited to the tenant's namespace with the admin's enforced fields;
// escapes and overrides are refused with the seed's messages; deleteBackup removes the data from the
// bucket; policy changes apply live.
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backup } from '../../src/backup/index.ts';
import { Labels, NabFinalizer } from '../../src/backup/model.ts';
import { nacObjectName } from '../../src/backup/velero/names.ts';
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
} from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import { type KubeClient, PatchType } from '../../src/kube/client.ts';
import { registry } from '../../src/kube/metrics.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { nabDeletedWithData, settledBackup, veleroNamespaceValue, veleroQueueMs } from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { grantControllerNamespace, type RunningCapability, runCapability } from '../harness/components.ts';
import { startTestVelero, type TestVelero, veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
let velero: TestVelero;
let ns: string;
let tenant: KubeClient;
let running: RunningCapability;
const nabType = NonAdminBackupCrd.type;
const apply = { fieldManager: 'backup-nab-test', force: true };

async function setPolicy(nonAdmin: Record<string, unknown>) {
  await cluster.admin.apply(
    NonAdminBackupConfigCrd.type,
    {
      metadata: { name: 'cluster' },
      spec: { nonAdmin: { enable: true, veleroNamespace: velero.namespace, ...nonAdmin } },
    } as NonAdminBackupConfig,
    apply,
  );
}

const nab = (name: string, namespace = ns) => cluster.admin.get<NonAdminBackup>(nabType, name, namespace);

/** The NAB once refused or its Velero Backup finished (a timeout says where Velero left it). */
const settled = (name: string, namespace = ns) => settledBackup(cluster, namespace, name);

beforeAll(async () => {
  velero = await startTestVelero(cluster);
  for (const role of backup.userClusterRoles!())
    await cluster.admin.apply(Resources.clusterRoles, role, apply);
  running = await runCapability(cluster, backup, {
    namespaces: { [veleroNamespaceValue]: velero.namespace },
  });
  await setPolicy({ enforceBackupSpec: { snapshotVolumes: false } });
  cluster.defer(() => cluster.admin.delete(NonAdminBackupConfigCrd.type, 'cluster'));
  ns = await cluster.namespace('shop');
  // The tenant administers its namespace through the default admin role, nothing more.
  tenant = await cluster.user(cluster.unique('alice'));
  await cluster.grant({ kind: 'User', name: tenant.userName }, { clusterRole: 'admin' }, ns);
  await cluster.aggregated('admin', 'nonadminbackups');
  await cluster.admin.create(Resources.configMaps, {
    metadata: { name: 'settings', namespace: ns },
    data: { color: 'blue' },
  } as KubeObject);
}, veleroStartTimeoutMs);

afterAll(async () => {
  await cluster.cleanup();
  await velero?.stop();
});

describe('NonAdminBackup', { timeout: veleroQueueMs + 30_000 }, () => {
  it("runs a tenant's backup in Velero, limited to its namespace, with enforced fields filled in", async () => {
    await tenant.create(nabType, {
      metadata: { name: 'nightly', namespace: ns },
      spec: { backupSpec: {} },
    } as KubeObject);
    const done = await settled('nightly');
    expect(done.status?.phase).toBe('Created');
    expect(done.status?.veleroBackup?.status?.phase).toBe('Completed');
    // Finished: nothing is ahead of it in Velero's queue any more.
    expect(done.status?.queueInfo).toEqual({ estimatedQueuePosition: 0 });
    const ref = done.status!.veleroBackup!;
    expect(ref.nacuuid).toMatch(new RegExp(`^${ns}-nightly-[0-9a-f-]{36}$`));
    const vb = await cluster.admin.get<KubeObject & { spec: Record<string, unknown> }>(
      VeleroResources.backups,
      ref.name!,
      velero.namespace,
    );
    expect(vb?.spec.includedNamespaces).toEqual([ns]);
    expect(vb?.spec.snapshotVolumes).toBe(false);
    // The operations themselves are never in a backup (restored, they would run again): the NAB was in
    // the namespace while Velero backed it up, and Velero's resource list has no NonAdmin* kind.
    // (Velero appends its own after them: VolumeSnapshots when snapshotVolumes is false.)
    expect(((vb?.spec.excludedResources as string[] | undefined) ?? []).slice(0, 3)).toEqual([
      'nonadminbackups.oadp.openshift.io',
      'nonadminrestores.oadp.openshift.io',
      'nonadmindownloadrequests.oadp.openshift.io',
    ]);
    const list = await velero.s3Fetch({
      method: 'GET',
      path: `/${velero.bucket}/backups/${ref.name}/${ref.name}-resource-list.json.gz`,
    });
    expect(list.ok).toBe(true);
    const resources = JSON.parse(gunzipSync(Buffer.from(await list.arrayBuffer())).toString('utf8'));
    expect(resources['v1/ConfigMap']).toContain(`${ns}/settings`);
    expect(Object.keys(resources).filter((k) => k.includes('NonAdmin'))).toEqual([]);
    expect(vb?.metadata.labels?.[Labels.nabUuid]).toBe(ref.nacuuid);
    expect(done.status?.conditions?.find((c) => c.type === 'Accepted')?.status).toBe('True');
    expect((await velero.listObjects(`backups/${ref.name}/`)).length).toBeGreaterThan(0);
  });

  it('refuses an override of an enforced field at admission, with the seed message', async () => {
    await expect(
      tenant.create(nabType, {
        metadata: { name: 'with-snapshots', namespace: ns },
        spec: { backupSpec: { snapshotVolumes: true } },
      } as KubeObject),
    ).rejects.toThrow(
      'NonAdminBackup spec.backupSpec.snapshotVolumes field value is enforced by admin user, can not override it',
    );
    expect(await nab('with-snapshots')).toBeUndefined();
  });

  it('refuses other namespaces and cluster-scoped resources at admission, saying what to change', async () => {
    const other = await cluster.namespace('victim');
    const error = await tenant
      .create(nabType, {
        metadata: { name: 'escape', namespace: ns },
        spec: { backupSpec: { includedNamespaces: [ns, other], includeClusterResources: true } },
      } as KubeObject)
      .then(
        () => undefined,
        (err: Error) => err,
      );
    expect(error?.message).toContain(`includedNamespaces may only name this namespace (${ns})`);
    expect(error?.message).toContain('includeClusterResources may not be true');
    expect(await nab('escape')).toBeUndefined();
  });

  it('refuses a label selector Velero would fail the backup for, at admission, naming the term', async () => {
    // The API server does not check the keys of a selector inside a custom resource; Velero would end the
    // backup FailedValidation minutes later, after the queue.
    await expect(
      tenant.create(nabType, {
        metadata: { name: 'bad-selector', namespace: ns },
        spec: { backupSpec: { labelSelector: { matchLabels: { 'app/': 'web' } } } },
      } as KubeObject),
    ).rejects.toThrow(
      /spec\.backupSpec\.labelSelector is invalid: matchLabels key "app\/" is not a label key/,
    );
    expect(await nab('bad-selector')).toBeUndefined();
  });

  it('refuses edits of the backup spec once it was accepted', async () => {
    await expect(
      tenant.patch(nabType, 'nightly', ns, { spec: { backupSpec: { ttl: '1h0m0s' } } }),
    ).rejects.toThrow(/cannot change after the backup was accepted/);
  });

  it('checks again in the controller: a policy tightened after admission refuses the backup', async () => {
    await running.stopControllers();
    await tenant.create(nabType, {
      metadata: { name: 'long-lived', namespace: ns },
      spec: { backupSpec: { ttl: '720h0m0s' } },
    } as KubeObject);
    await setPolicy({ enforceBackupSpec: { snapshotVolumes: false, ttl: '24h0m0s' } });
    running.startControllers();
    const refused = await settled('long-lived');
    expect(refused.status?.phase).toBe('BackingOff');
    const accepted = refused.status?.conditions?.find((c) => c.type === 'Accepted');
    expect(accepted).toMatchObject({ status: 'False', reason: 'InvalidBackupSpec' });
    expect(accepted?.message).toContain('spec.backupSpec.ttl field value is enforced by admin user');
    expect(refused.status?.veleroBackup).toBeUndefined();
    await setPolicy({ enforceBackupSpec: { snapshotVolumes: false } });
  });

  it('applies a policy change live to the next backups', async () => {
    await setPolicy({ enforceBackupSpec: { snapshotVolumes: false, ttl: '2h0m0s' } });
    await eventually(async () => {
      await tenant.create(nabType, {
        metadata: { name: cluster.unique('live'), namespace: ns },
        spec: { backupSpec: {} },
      } as KubeObject);
      return true;
    });
    const list = await cluster.admin.list<NonAdminBackup>(nabType, { namespace: ns });
    const live = list.items.find((n) => n.metadata.name!.startsWith('live-'))!;
    const done = await settled(live.metadata.name!);
    expect(done.status?.veleroBackup?.spec?.ttl).toBe('2h0m0s');
    await setPolicy({ enforceBackupSpec: { snapshotVolumes: false } });
  });

  it('names backups within 63 characters when namespace and name are at their maximum', async () => {
    const longNs = `l${cluster.unique('x').replace(/-/g, '')}${'n'.repeat(63)}`.slice(0, 63);
    await cluster.admin.create(Resources.namespaces, { metadata: { name: longNs } });
    cluster.defer(() => cluster.admin.delete(Resources.namespaces, longNs));
    await cluster.grant({ kind: 'User', name: tenant.userName }, { clusterRole: 'admin' }, longNs);
    const longName = 'b'.repeat(253);
    await eventually(async () => {
      await tenant.create(nabType, {
        metadata: { name: longName, namespace: longNs },
        spec: { backupSpec: {} },
      } as KubeObject);
      return true;
    });
    const done = await settled(longName, longNs);
    expect(done.status?.veleroBackup?.status?.phase).toBe('Completed');
    expect(done.status!.veleroBackup!.name!.length).toBeLessThanOrEqual(63);
  });

  it('deletes the backup data from the bucket on spec.deleteBackup, then the NonAdminBackup', async () => {
    await tenant.create(nabType, {
      metadata: { name: 'to-delete', namespace: ns },
      spec: { backupSpec: {} },
    } as KubeObject);
    const done = await settled('to-delete');
    const name = done.status!.veleroBackup!.name!;
    expect((await velero.listObjects(`backups/${name}/`)).length).toBeGreaterThan(0);
    await tenant.patch(nabType, 'to-delete', ns, { spec: { deleteBackup: true } });
    await nabDeletedWithData(cluster, velero, 'to-delete', ns);
    expect(await velero.listObjects(`backups/${name}/`)).toEqual([]);
  });

  it('tells the tenant why Velero refused to delete a backup, and asks Velero again until it is gone', async () => {
    await tenant.create(nabType, {
      metadata: { name: 'refused', namespace: ns },
      spec: { backupSpec: {} },
    } as KubeObject);
    const name = (await settled('refused')).status!.veleroBackup!.name!;
    // Velero processes a DeleteBackupRequest once and refuses it while the location is read-only.
    const accessMode = (mode: string) =>
      cluster.admin.patch(VeleroResources.backupStorageLocations, velero.storageLocation, velero.namespace, {
        spec: { accessMode: mode },
      });
    await accessMode('ReadOnly');
    try {
      await tenant.patch(nabType, 'refused', ns, { spec: { deleteBackup: true } });
      const refused = await eventually(
        async () => {
          const c = (await nab('refused'))?.status?.conditions?.find((c) => c.type === 'Deleting');
          if (c?.reason === 'VeleroRefused') return c;
          // Where it stands, for a timeout's message: the condition, the Backup's phase, Velero's requests.
          const backup = await cluster.admin.get<KubeObject & { status?: { phase?: string } }>(
            VeleroResources.backups,
            name,
            velero.namespace,
          );
          const requests = await cluster.admin.list<KubeObject & { status?: unknown }>(
            VeleroResources.deleteBackupRequests,
            { namespace: velero.namespace },
          );
          throw new Error(
            `Deleting condition ${JSON.stringify(c)}; Backup ${backup?.status?.phase}; DeleteBackupRequests ${JSON.stringify(requests.items.map((r) => [r.metadata.name, r.status]))}`,
          );
        },
        { what: "Velero's refusal in the NonAdminBackup's status", timeoutMs: 60_000 },
      );
      // Attempt 1, or 2 when Velero's tracker race held the finished backup first and tenantkit handed it
      // back to Velero's finalizer (backup-velero-held.test.ts).
      expect(refused.message).toMatch(new RegExp(`^Velero did not delete backup ${name} \\(attempt [12]\\)`));
      expect(refused.message).toContain('read-only mode');
      expect(refused.message).toMatch(/tenantkit asks again in \d+ s$/);
    } finally {
      await accessMode('ReadWrite');
    }
    await eventually(async () => (await nab('refused')) === undefined, {
      timeoutMs: veleroQueueMs,
      what: 'NAB gone after tenantkit asked again',
    });
    expect(await velero.listObjects(`backups/${name}/`)).toEqual([]);
  });

  it('never acts on a NACUUID or namespace it did not write: a forged status mirrors, makes and deletes nothing', async () => {
    // Statuses a restore of a crafted backup could write (velero.io/restore-status), with tenantkit's
    // finalizer: one naming this namespace's "nightly" Velero Backup, one naming another namespace.
    const victim = (await nab('nightly'))!.status!.veleroBackup!.name!;
    const elsewhere = await cluster.namespace('elsewhere');
    const own = nacObjectName(ns, 'forged-elsewhere', '00000000-0000-4000-8000-000000000001');
    await running.stopControllers();
    try {
      for (const [name, ref] of [
        ['forged-mirror', { nacuuid: victim, name: victim, namespace: velero.namespace }],
        ['forged-elsewhere', { nacuuid: own, name: own, namespace: elsewhere }],
      ] as const) {
        await tenant.create(nabType, {
          metadata: { name, namespace: ns },
          spec: { backupSpec: {} },
        } as KubeObject);
        await cluster.admin.patch(nabType, name, ns, { metadata: { finalizers: [NabFinalizer] } });
        await cluster.admin.patch(
          nabType,
          name,
          ns,
          { status: { phase: 'New', veleroBackup: ref } },
          PatchType.merge,
          'status',
        );
      }
    } finally {
      running.startControllers();
    }
    // Another NAB's Backup is neither mirrored nor deleted through it.
    const refused = await eventually(
      async () => {
        const o = await nab('forged-mirror');
        return o?.status?.phase === 'BackingOff' ? o : undefined;
      },
      { what: 'forged-mirror refused' },
    );
    expect(refused.status?.conditions?.find((c) => c.type === 'Accepted')).toMatchObject({
      status: 'False',
      reason: 'InvalidStatus',
    });
    expect(refused.status?.veleroBackup?.status).toBeUndefined();
    await tenant.patch(nabType, 'forged-mirror', ns, { spec: { deleteBackup: true } });
    await eventually(async () => (await nab('forged-mirror')) === undefined, { what: 'forged-mirror gone' });
    expect(await cluster.admin.get(VeleroResources.backups, victim, velero.namespace)).toBeDefined();
    expect(
      await cluster.admin.get(VeleroResources.deleteBackupRequests, victim, velero.namespace),
    ).toBeUndefined();
    expect((await velero.listObjects(`backups/${victim}/`)).length).toBeGreaterThan(0);
    // A well-formed NACUUID is used, but only in Velero's namespace, never the one status names.
    await eventually(
      async () => (await cluster.admin.get(VeleroResources.backups, own, velero.namespace)) !== undefined,
      { what: 'Velero Backup made in Velero namespace' },
    );
    expect(await cluster.admin.get(VeleroResources.backups, own, elsewhere)).toBeUndefined();
  });

  it('never runs a finished backup again when its Velero Backup is gone from the configured namespace', async () => {
    // The 'nightly' backup (first test) completed. Velero moves to an empty namespace, where the controllers
    // may write: nothing of 'nightly' is there, and making it again would back up a second time, unasked.
    const moved = await cluster.namespace('velero-moved');
    await grantControllerNamespace(cluster, backup, veleroNamespaceValue, moved);
    const before = (await nab('nightly'))!.status!.veleroBackup!.name!;
    await setPolicy({ veleroNamespace: moved });
    try {
      const missing = await eventually(
        async () => {
          const o = await nab('nightly');
          const queued = o?.status?.conditions?.find((c) => c.type === 'Queued');
          return queued?.reason === 'VeleroBackupMissing' ? queued : undefined;
        },
        { what: 'nightly reports its Velero Backup missing' },
      );
      expect(missing.status).toBe('False');
      expect(missing.message).toContain(`Velero Backup ${before} no longer exists in namespace ${moved}`);
      // A moment for a wrong create to show, then: nothing was made in the new namespace.
      await new Promise((r) => setTimeout(r, 1000));
      expect((await cluster.admin.list(VeleroResources.backups, { namespace: moved })).items).toEqual([]);
    } finally {
      await setPolicy({ enforceBackupSpec: { snapshotVolumes: false } });
    }
    // Back where the Backup is: mirrored again, the same Backup.
    const back = await eventually(
      async () => {
        const o = await nab('nightly');
        return o?.status?.conditions?.find((c) => c.type === 'Queued')?.reason === 'BackupScheduled'
          ? o
          : undefined;
      },
      { what: 'nightly mirrors its Velero Backup again' },
    );
    expect(back.status?.veleroBackup?.name).toBe(before);
  });

  it("tells the tenant when Velero's queue stops moving, and takes it back once Velero moves again", async () => {
    // A real stall: the Velero server process stopped (SIGSTOP) while the tenant's backup waits for it,
    // the state a panicked or hung Velero leaves (docs/faults.md). The warning time is cut to 3 s.
    await setPolicy({ enforceBackupSpec: { snapshotVolumes: false }, stalledQueueWarningAfter: '3s' });
    try {
      const seen = await velero.paused(async () => {
        const created = Date.now();
        await tenant.create(nabType, {
          metadata: { name: 'held', namespace: ns },
          spec: { backupSpec: {} },
        } as KubeObject);
        const queued = await eventually(
          async () => {
            const o = await tenant.get<NonAdminBackup>(nabType, 'held', ns);
            const c = o?.status?.conditions?.find((c) => c.type === 'Queued');
            return c?.reason === 'VeleroQueueStalled' ? c : undefined;
          },
          { timeoutMs: 30_000, what: 'held says the queue is stalled' },
        );
        const after = Date.now() - created;
        const event = await eventually(async () => {
          const list = await tenant.list<KubeObject & { reason?: string; regarding?: { name?: string } }>(
            Resources.events,
            { namespace: ns },
          );
          return list.items.find((e) => e.reason === 'VeleroQueueStalled' && e.regarding?.name === 'held');
        });
        const gauge = await registry.getSingleMetric('tenantkit_velero_backup_queue_stalled_seconds')!.get();
        const still = gauge.values.find((v) => v.labels.namespace === velero.namespace)?.value ?? 0;
        return { queued, after, event, still };
      });
      expect(seen.queued.status).toBe('True');
      expect(seen.queued.message).toMatch(
        /^Velero Backup \S+ is New, but nothing in Velero's backup queue has moved for over 3s .*Ask an admin to check Velero/,
      );
      // Not before the warning time, and soon after it.
      expect(seen.after).toBeGreaterThanOrEqual(3_000);
      expect(seen.after).toBeLessThan(15_000);
      expect(seen.still).toBeGreaterThanOrEqual(3);
      // Velero runs again: the backup completes and the NAB says so, not "stalled".
      const done = await settled('held');
      expect(done.status?.veleroBackup?.status?.phase).toBe('Completed');
      const queued = done.status?.conditions?.find((c) => c.type === 'Queued');
      expect(queued?.reason).toBe('BackupScheduled');
      const gauge = await registry.getSingleMetric('tenantkit_velero_backup_queue_stalled_seconds')!.get();
      expect(gauge.values.find((v) => v.labels.namespace === velero.namespace)?.value ?? 0).toBe(0);
    } finally {
      await setPolicy({ enforceBackupSpec: { snapshotVolumes: false } });
    }
  });

  it("keeps a stalled queue's clock when the controllers restart", async () => {
    // A controller that restarts has not seen the queue stand still: it reads how long from Velero's
    // objects. Before, its clock started again, and the tenant read "scheduled" until the warning time
    // had passed once more.
    await setPolicy({ enforceBackupSpec: { snapshotVolumes: false }, stalledQueueWarningAfter: '4s' });
    const queuedReason = async () =>
      (await tenant.get<NonAdminBackup>(nabType, 'held-over', ns))?.status?.conditions?.find(
        (c) => c.type === 'Queued',
      )?.reason;
    try {
      const seen = await velero.paused(async () => {
        await tenant.create(nabType, {
          metadata: { name: 'held-over', namespace: ns },
          spec: { backupSpec: {} },
        } as KubeObject);
        await eventually(async () => (await queuedReason()) === 'VeleroQueueStalled', {
          timeoutMs: 30_000,
          what: 'held-over says the queue is stalled',
        });
        // Two seconds more: the recorded times are whole seconds, and the clock read back rounds up.
        await new Promise((r) => setTimeout(r, 2_000));
        await running.stopControllers();
        running.startControllers();
        const restarted = Date.now();
        const reasons = new Set<string | undefined>();
        while (Date.now() - restarted < 3_000) {
          reasons.add(await queuedReason());
          await new Promise((r) => setTimeout(r, 100));
        }
        const gauge = await registry.getSingleMetric('tenantkit_velero_backup_queue_stalled_seconds')!.get();
        const events = await tenant.list<KubeObject & { reason?: string; regarding?: { name?: string } }>(
          Resources.events,
          { namespace: ns },
        );
        return {
          reasons: [...reasons],
          still: gauge.values.find((v) => v.labels.namespace === velero.namespace)?.value ?? 0,
          warnings: events.items.filter(
            (e) => e.reason === 'VeleroQueueStalled' && e.regarding?.name === 'held-over',
          ).length,
        };
      });
      // Stalled all along, as the restarted controller counts it too, and told once.
      expect(seen.reasons).toEqual(['VeleroQueueStalled']);
      expect(seen.still).toBeGreaterThanOrEqual(4);
      expect(seen.warnings).toBe(1);
      const done = await settled('held-over');
      expect(done.status?.veleroBackup?.status?.phase).toBe('Completed');
      expect(await queuedReason()).toBe('BackupScheduled');
    } finally {
      await setPolicy({ enforceBackupSpec: { snapshotVolumes: false } });
    }
  });

  it("keeps tenants out of each other's backups", async () => {
    const other = await cluster.user(cluster.unique('mallory'));
    const otherNs = await cluster.namespace('mallory');
    await cluster.grant({ kind: 'User', name: other.userName }, { clusterRole: 'admin' }, otherNs);
    await expect(other.get(nabType, 'nightly', ns)).rejects.toThrow(/forbidden/i);
    await expect(other.list(VeleroResources.backups, { namespace: velero.namespace })).rejects.toThrow(
      /forbidden/i,
    );
  });
});
