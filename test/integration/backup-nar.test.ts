// NonAdminRestore end to end, as a tenant, through the real API server and a real Velero reading from a
// real S3 store: a tenant backs up its namespace with a NonAdminBackup, loses its objects, and gets them
// back with their data from a NonAdminRestore naming that backup; restores from other namespaces' backups,
// into other namespaces or of cluster-scoped resources, and overrides of the admin's enforced fields are
// refused with a message that says what to change, and no Velero Restore is made for them. A controller
// stopped mid-way resumes without a second Restore, and a restore never runs twice unasked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../../src/api/backup.ts';
import { backup, backupUserClusterRoles } from '../../src/backup/index.ts';
import { Annotations, Labels } from '../../src/backup/names.ts';
import { NarFinalizer } from '../../src/backup/nar-controller.ts';
import { type KubeClient, PatchType } from '../../src/kube/client.ts';
import { type KubeObject, Resources, resourcePath } from '../../src/kube/resources.ts';
import { finishedPhases, VeleroResources } from '../../src/kube/velero.ts';
import { createShopApp, deleteShopApp, expectShopApp } from '../fixtures/shop-app.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { type RunningCapability, runCapability } from '../harness/components.ts';
import { startTestVelero, type TestVelero, veleroStartTimeoutMs } from '../harness/velero.ts';

type VeleroRestore = KubeObject & { spec: Record<string, unknown>; status?: { phase?: string } };

const cluster = await TestCluster.connect();
let velero: TestVelero;
let ns: string;
let otherNs: string;
let tenant: KubeClient;
let running: RunningCapability;
const nabType = NonAdminBackupCrd.type;
const narType = NonAdminRestoreCrd.type;
const apply = { fieldManager: 'backup-nar-test', force: true };
/** What the admin enforces on every restore in this file. */
const enforceRestoreSpec = { existingResourcePolicy: 'none' };

/**
 * Velero v1.18 now and then leaves a new Backup Queued until its queue's one-minute recheck (its
 * backup_queue_controller); every wait on Velero must outlast that.
 */
const veleroQueueMs = 150_000;

async function setPolicy(nonAdmin: Record<string, unknown>) {
  await cluster.admin.apply(
    NonAdminBackupConfigCrd.type,
    {
      metadata: { name: 'cluster' },
      spec: {
        nonAdmin: { enable: true, veleroNamespace: velero.namespace, enforceRestoreSpec, ...nonAdmin },
      },
    } as NonAdminBackupConfig,
    apply,
  );
}

const nar = (name: string) => cluster.admin.get<NonAdminRestore>(narType, name, ns);
const accepted = (o: NonAdminRestore | undefined) =>
  o?.status?.conditions?.find((c) => c.type === 'Accepted');
const veleroRestores = async () =>
  (await cluster.admin.list<VeleroRestore>(VeleroResources.restores, { namespace: velero.namespace })).items;

/**
 * A NAB (the tenant's unless told), once its Velero backup completed. Waited for, not left running:
 * Velero 1.18 queues a Backup created while another runs and may recheck its queue only after a minute.
 */
async function completedBackup(name: string, namespace = ns, client = tenant): Promise<NonAdminBackup> {
  await client.create(nabType, { metadata: { name, namespace }, spec: { backupSpec: {} } } as KubeObject);
  const done = await eventually(
    async () => {
      const o = await cluster.admin.get<NonAdminBackup>(nabType, name, namespace);
      const phase = o?.status?.veleroBackup?.status?.phase;
      return phase && (finishedPhases as readonly string[]).includes(phase) ? o : undefined;
    },
    { timeoutMs: veleroQueueMs, what: `NonAdminBackup ${namespace}/${name} finished` },
  );
  expect(done.status?.veleroBackup?.status?.phase).toBe('Completed');
  return done;
}

/** A NAR, once its Velero Restore finished or it was refused. */
async function settled(name: string): Promise<NonAdminRestore> {
  return eventually(
    async () => {
      const o = await nar(name);
      if (o?.status?.phase === 'BackingOff') return o;
      const phase = o?.status?.veleroRestore?.status?.phase;
      return phase && (finishedPhases as readonly string[]).includes(phase) ? o : undefined;
    },
    { timeoutMs: veleroQueueMs, what: `NonAdminRestore ${ns}/${name} settled` },
  );
}

beforeAll(async () => {
  velero = await startTestVelero(cluster);
  for (const role of backupUserClusterRoles()) await cluster.admin.apply(Resources.clusterRoles, role, apply);
  running = await runCapability(cluster, backup);
  await setPolicy({});
  cluster.defer(() => cluster.admin.delete(NonAdminBackupConfigCrd.type, 'cluster'));
  ns = await cluster.namespace('shop');
  otherNs = await cluster.namespace('victim');
  // The tenant administers its namespace through the default admin role, nothing more.
  tenant = await cluster.user(cluster.unique('alice'));
  await cluster.grant({ kind: 'User', name: tenant.userName }, { clusterRole: 'admin' }, ns);
  await cluster.aggregated('admin', 'nonadminrestores');
}, veleroStartTimeoutMs);

afterAll(async () => {
  // While the controllers still run to lift their finalizers, so that no namespace stays Terminating.
  for (const namespace of [ns, otherNs].filter(Boolean)) {
    for (const type of [narType, nabType]) {
      await cluster.admin.request('DELETE', resourcePath(type, namespace)).catch(() => {});
    }
  }
  await eventually(
    async () => {
      for (const namespace of [ns, otherNs].filter(Boolean)) {
        for (const type of [narType, nabType]) {
          if ((await cluster.admin.list(type, { namespace })).items.length > 0) return false;
        }
      }
      return true;
    },
    { what: 'NonAdminRestores and NonAdminBackups gone' },
  ).catch((err) => console.warn(err));
  await cluster.cleanup();
  await velero?.stop();
});

describe('NonAdminRestore', { timeout: veleroQueueMs + 30_000 }, () => {
  it("brings a tenant's deleted objects back with their data from its own backup", async () => {
    await createShopApp(tenant, ns);
    await tenant.create(Resources.configMaps, {
      metadata: { name: 'features', namespace: ns },
      data: { beta: 'on' },
    } as KubeObject);

    const started = Date.now();
    const nab = await completedBackup('nightly');
    const backupMs = Date.now() - started;

    // The tenant loses its objects.
    await tenant.delete(Resources.configMaps, 'features', ns);
    await deleteShopApp(tenant, ns);

    const restoreStarted = Date.now();
    await tenant.create(narType, {
      metadata: { name: 'undo', namespace: ns },
      spec: { restoreSpec: { backupName: 'nightly' } },
    } as KubeObject);
    const done = await settled('undo');
    const restoreMs = Date.now() - restoreStarted;
    expect(done.status?.phase).toBe('Created');
    expect(done.status?.veleroRestore?.status?.phase, JSON.stringify(done.status)).toBe('Completed');
    expect(done.metadata.finalizers).toContain(NarFinalizer);
    const generation = done.metadata.generation;
    expect(accepted(done)).toMatchObject({
      status: 'True',
      reason: 'RestoreAccepted',
      observedGeneration: generation,
    });
    expect(done.status?.conditions?.find((c) => c.type === 'Queued')).toMatchObject({
      status: 'True',
      reason: 'RestoreScheduled',
      observedGeneration: generation,
    });

    // The Velero Restore: named and labelled by the NACUUID, from the NAB's Velero backup (not the NAB
    // name the tenant wrote), into the tenant's namespace only, with the enforced field filled in.
    const ref = done.status!.veleroRestore!;
    expect(ref.nacuuid).toMatch(new RegExp(`^${ns}-undo-[0-9a-f-]{36}$`));
    expect(ref).toMatchObject({ name: ref.nacuuid, namespace: velero.namespace });
    const vr = await cluster.admin.get<VeleroRestore>(VeleroResources.restores, ref.name!, velero.namespace);
    expect(vr?.spec).toMatchObject({
      backupName: nab.status!.veleroBackup!.name,
      includedNamespaces: [ns],
      existingResourcePolicy: 'none',
    });
    expect(vr?.metadata.labels).toMatchObject({
      [Labels.narUuid]: ref.nacuuid,
      [Labels.managedBy]: 'tenantkit-backup',
      [Labels.oadp]: 'True',
    });
    expect(vr?.metadata.annotations).toMatchObject({
      [Annotations.narName]: 'undo',
      [Annotations.narNamespace]: ns,
    });

    // Everything is back, as the tenant sees it, with its data.
    await expectShopApp(tenant, ns);
    expect(
      (await tenant.get<KubeObject & { data?: Record<string, string> }>(Resources.configMaps, 'features', ns))
        ?.data,
    ).toEqual({ beta: 'on' });
    console.log(`[nar] backup completed in ${backupMs} ms, restore (NAR to Completed) in ${restoreMs} ms`);

    // Deleting the NAR deletes its Velero Restore (Velero lifts its own finalizer); the objects stay.
    await tenant.delete(narType, 'undo', ns);
    await eventually(
      async () =>
        (await nar('undo')) === undefined &&
        (await cluster.admin.get(VeleroResources.restores, ref.name!, velero.namespace)) === undefined,
      { timeoutMs: 20_000, what: 'NonAdminRestore and its Velero Restore gone' },
    );
    expect(await tenant.get(Resources.configMaps, 'settings', ns)).toBeDefined();
  });

  it('refuses restores that reach beyond the namespace or override the admin (at admission where it can), and makes no Velero Restore', async () => {
    // A completed backup of another tenant's namespace, by the same name as the tenant's own.
    await completedBackup('theirs', otherNs, cluster.admin);
    const refusals: [string, Record<string, unknown>, string][] = [
      [
        'other-ns-backup',
        { backupName: 'theirs' },
        `spec.restoreSpec.backupName "theirs" is not a NonAdminBackup in namespace ${ns}: name one of this namespace's NonAdminBackups`,
      ],
      [
        'missing-backup',
        { backupName: 'no-such-backup' },
        `spec.restoreSpec.backupName "no-such-backup" is not a NonAdminBackup in namespace ${ns}`,
      ],
      [
        'mapped',
        { backupName: 'nightly', namespaceMapping: { [ns]: otherNs } },
        `spec.restoreSpec.namespaceMapping is not allowed: a restore writes into this namespace (${ns}) only; leave it out`,
      ],
      [
        'included',
        { backupName: 'nightly', includedNamespaces: [ns, otherNs] },
        `spec.restoreSpec.includedNamespaces may only name this namespace (${ns}); leave it out, tenantkit sets it`,
      ],
      [
        'scheduled',
        { scheduleName: 'daily' },
        'spec.restoreSpec.scheduleName is not allowed: tenants restore from their own NonAdminBackups; leave it out and set backupName to a NonAdminBackup',
      ],
      [
        'cluster-wide',
        { backupName: 'nightly', includeClusterResources: true },
        'spec.restoreSpec.includeClusterResources may not be true: tenants cannot restore cluster-scoped resources',
      ],
      [
        'overriding',
        { backupName: 'nightly', existingResourcePolicy: 'update' },
        'NonAdminRestore spec.restoreSpec.existingResourcePolicy field value is enforced by admin user, can not override it',
      ],
    ];
    // Rules that do not depend on the NonAdminBackup are enforced at admission: kubectl prints them.
    const atController = new Set(['other-ns-backup', 'missing-backup']);
    for (const [name, restoreSpec, message] of refusals) {
      const created = tenant.create(narType, {
        metadata: { name, namespace: ns },
        spec: { restoreSpec },
      } as KubeObject);
      if (atController.has(name)) await created;
      else await expect(created, name).rejects.toThrow(message);
    }
    // scheduleName without backupName: both problems, in one message.
    await expect(
      tenant.create(narType, {
        metadata: { name: 'scheduled', namespace: ns },
        spec: { restoreSpec: { scheduleName: 'daily' } },
      } as KubeObject),
    ).rejects.toThrow('spec.restoreSpec.backupName is required');
    // Which NonAdminBackup a name means is the controller's to judge (it may still come): status and events.
    for (const [name, , message] of refusals.filter(([n]) => atController.has(n))) {
      const refused = await settled(name);
      expect(refused.status?.phase, name).toBe('BackingOff');
      expect(accepted(refused), name).toMatchObject({ status: 'False', reason: 'InvalidRestoreSpec' });
      expect(accepted(refused)?.message, name).toContain(message);
      expect(refused.status?.veleroRestore, name).toBeUndefined();
    }
    const events = await eventually(async () => {
      const list = await tenant.list<KubeObject & { reason?: string; regarding?: { name?: string } }>(
        Resources.events,
        { namespace: ns },
      );
      const found = list.items.filter((e) => e.reason === 'InvalidRestoreSpec');
      return found.length >= atController.size ? found : undefined;
    });
    expect(new Set(events.map((e) => e.regarding?.name))).toEqual(atController);
    const made = (await veleroRestores()).map((r) => r.metadata.annotations?.[Annotations.narName]);
    for (const [name] of refusals) expect(made).not.toContain(name);
  });

  it('goes on by itself once the backup it names exists and completed', async () => {
    await tenant.create(narType, {
      metadata: { name: 'early', namespace: ns },
      spec: { restoreSpec: { backupName: 'fresh' } },
    } as KubeObject);
    const waiting = await settled('early');
    expect(accepted(waiting)?.message).toContain(
      'spec.restoreSpec.backupName "fresh" is not a NonAdminBackup',
    );
    // Nothing but the NonAdminBackup changes from here on.
    await tenant.create(nabType, {
      metadata: { name: 'fresh', namespace: ns },
      spec: { backupSpec: {} },
    } as KubeObject);
    const done = await eventually(
      async () => {
        const o = await nar('early');
        if (o?.status?.veleroRestore?.status?.phase === 'Completed') return o;
        throw new Error(`status: ${JSON.stringify(o?.status)}`);
      },
      { timeoutMs: veleroQueueMs, what: 'NonAdminRestore early completed' },
    );
    expect(accepted(done)?.status).toBe('True');
    const fresh = await cluster.admin.get<NonAdminBackup>(nabType, 'fresh', ns);
    const vr = await cluster.admin.get<VeleroRestore>(
      VeleroResources.restores,
      done.status!.veleroRestore!.name!,
      velero.namespace,
    );
    expect(vr?.spec.backupName).toBe(fresh?.status?.veleroBackup?.name);
  });

  it('resumes after a crash at either step without making a second Velero Restore', async () => {
    const nightly = await cluster.admin.get<NonAdminBackup>(nabType, 'nightly', ns);
    await running.stopControllers();
    const uuids: Record<string, string> = {};
    try {
      for (const name of ['after-uuid', 'after-create']) {
        await tenant.create(narType, {
          metadata: { name, namespace: ns },
          spec: { restoreSpec: { backupName: 'nightly' } },
        } as KubeObject);
        // What the controller had done when it stopped: finalizer and NACUUID in status...
        const uuid = `${ns}-${name}-00000000-0000-4000-8000-${String(Object.keys(uuids).length).padStart(12, '0')}`;
        uuids[name] = uuid;
        await cluster.admin.patch(narType, name, ns, { metadata: { finalizers: [NarFinalizer] } });
        await cluster.admin.patch(
          narType,
          name,
          ns,
          {
            status: {
              phase: 'New',
              veleroRestore: { nacuuid: uuid, name: uuid, namespace: velero.namespace },
            },
          },
          PatchType.merge,
          'status',
        );
      }
      // ...and, for the second, the Velero Restore too, before its status said so.
      await cluster.admin.create(VeleroResources.restores, {
        metadata: {
          name: uuids['after-create']!,
          namespace: velero.namespace,
          labels: {
            [Labels.managedBy]: 'tenantkit-backup',
            [Labels.oadp]: 'True',
            [Labels.narUuid]: uuids['after-create']!,
          },
          annotations: { [Annotations.narName]: 'after-create', [Annotations.narNamespace]: ns },
        },
        spec: { backupName: nightly!.status!.veleroBackup!.name, includedNamespaces: [ns] },
      } as KubeObject);
    } finally {
      running.startControllers();
    }
    for (const name of ['after-uuid', 'after-create']) {
      const done = await eventually(
        async () => {
          const o = await nar(name);
          return o?.status?.veleroRestore?.status?.phase === 'Completed' ? o : undefined;
        },
        { timeoutMs: veleroQueueMs, what: `NonAdminRestore ${name} completed` },
      );
      expect(done.status?.veleroRestore?.nacuuid).toBe(uuids[name]);
      const made = (await veleroRestores()).filter(
        (r) => r.metadata.annotations?.[Annotations.narName] === name,
      );
      expect(made.map((r) => r.metadata.name)).toEqual([uuids[name]]);
    }
  });

  it('reports a Velero Restore deleted outside tenantkit instead of restoring a second time', async () => {
    const early = await nar('early');
    const name = early!.status!.veleroRestore!.name!;
    await cluster.admin.delete(VeleroResources.restores, name, velero.namespace);
    const reported = await eventually(
      async () => {
        const o = await nar('early');
        const queued = o?.status?.conditions?.find((c) => c.type === 'Queued');
        return queued?.status === 'False' ? queued : undefined;
      },
      { what: 'deleted Velero Restore reported' },
    );
    expect(reported).toMatchObject({ reason: 'VeleroRestoreDeleted' });
    expect(reported.message).toContain('create a new NonAdminRestore to restore again');
    expect(await cluster.admin.get(VeleroResources.restores, name, velero.namespace)).toBeUndefined();
  });

  it('holds restores while the admin has disabled the feature, and runs them once it is enabled again', async () => {
    await setPolicy({ enable: false });
    try {
      await tenant.create(narType, {
        metadata: { name: 'while-off', namespace: ns },
        spec: { restoreSpec: { backupName: 'nightly' } },
      } as KubeObject);
      const refused = await settled('while-off');
      expect(accepted(refused)).toMatchObject({ status: 'False', reason: 'NonAdminDisabled' });
      expect(accepted(refused)?.message).toContain('spec.nonAdmin.enable: true');
      expect(refused.status?.veleroRestore).toBeUndefined();
    } finally {
      await setPolicy({});
    }
    const done = await eventually(
      async () => {
        const o = await nar('while-off');
        return o?.status?.veleroRestore?.status?.phase === 'Completed' ? o : undefined;
      },
      { timeoutMs: veleroQueueMs, what: 'NonAdminRestore while-off completed once enabled' },
    );
    expect(done.status?.phase).toBe('Created');
    expect(accepted(done)?.status).toBe('True');
  });

  it("keeps tenants out of each other's restores and Velero's namespace", async () => {
    const other = await cluster.user(cluster.unique('mallory'));
    await cluster.grant({ kind: 'User', name: other.userName }, { clusterRole: 'admin' }, otherNs);
    await expect(other.get(narType, 'early', ns)).rejects.toThrow(/forbidden/i);
    await expect(other.list(VeleroResources.restores, { namespace: velero.namespace })).rejects.toThrow(
      /forbidden/i,
    );
    await expect(tenant.list(VeleroResources.restores, { namespace: velero.namespace })).rejects.toThrow(
      /forbidden/i,
    );
  });
});
