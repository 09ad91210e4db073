// NonAdminRestore end to end, as a tenant, through the real API server and a real Velero reading from a
// real S3 store: a tenant backs up its namespace with a NonAdminBackup, loses its objects, and gets them
// back with their data from a NonAdminRestore naming that backup; restores from other namespaces' backups,
// into other namespaces or of cluster-scoped resources, and overrides of the admin's enforced fields are
// refused with a message that says what to change, and no Velero Restore is made for them. A controller
// stopped mid-way resumes without a second Restore, and a restore never runs twice unasked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerNarController } from '../../src/backup/controllers/restore/reconciler.ts';
import { backup } from '../../src/backup/index.ts';
import { Annotations, Labels, managedLabels, NarFinalizer } from '../../src/backup/model.ts';
import { nonAdminKinds, rbacKinds } from '../../src/backup/policy/velero-filters.ts';
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../../src/crds/backup.ts';
import { finishedPhases, VeleroResources } from '../../src/crds/velero.ts';
import { type KubeClient, PatchType } from '../../src/kube/client.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { Manager } from '../../src/kube/manager.ts';
import { type KubeObject, Resources, resourcePath, resourceType } from '../../src/kube/resources.ts';
import { createShopApp, deleteShopApp, expectShopApp } from '../fixtures/shop-app.ts';
import { settledRestore, veleroNamespaceValue, veleroQueueMs } from '../harness/backup.ts';
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

/** A NAR, once its Velero Restore finished or it was refused (a timeout says where Velero left it). */
const settled = (name: string) => settledRestore(cluster, ns, name);

beforeAll(async () => {
  velero = await startTestVelero(cluster);
  for (const role of backup.userClusterRoles!())
    await cluster.admin.apply(Resources.clusterRoles, role, apply);
  running = await runCapability(cluster, backup, {
    namespaces: { [veleroNamespaceValue]: velero.namespace },
  });
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
    // The outcome as an Event too, which the tenant may read, as a NonAdminBackup's is.
    const outcome = await eventually(async () => {
      const list = await tenant.list<
        KubeObject & { reason?: string; note?: string; regarding?: { name?: string } }
      >(Resources.events, { namespace: ns });
      return list.items.find((e) => e.reason === 'RestoreCompleted' && e.regarding?.name === 'undo');
    });
    expect(outcome?.note).toBe(`Velero Restore ${done.status?.veleroRestore?.name} is Completed`);

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
      // Never a cluster-scoped object, not even a restored PVC's PV (Velero skips those only on false).
      includeClusterResources: false,
    });
    // tenantkit's exclusions (Velero appends its own non-restorable kinds after them).
    expect((vr!.spec.excludedResources as string[]).slice(0, nonAdminKinds.length + 1)).toEqual([
      ...nonAdminKinds,
      '*.velero.io',
    ]);
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

  it("waits while the backup's storage location is not Available (Velero would fail the restore), then restores", async () => {
    await completedBackup('before-outage');
    const bsls = VeleroResources.backupStorageLocations;
    const location = velero.storageLocation;
    const phase = async () =>
      (
        await cluster.admin.get<KubeObject & { status?: { phase?: string } }>(
          bsls,
          location,
          velero.namespace,
        )
      )?.status?.phase;
    // The admin points the default location at a bucket that does not exist: Velero marks it Unavailable.
    await cluster.admin.patch(bsls, location, velero.namespace, {
      spec: { objectStorage: { bucket: 'gone' } },
    });
    try {
      await eventually(async () => (await phase()) === 'Unavailable', {
        timeoutMs: 60_000,
        what: 'location Unavailable',
      });
      await tenant.create(narType, {
        metadata: { name: 'during-outage', namespace: ns },
        spec: { restoreSpec: { backupName: 'before-outage' } },
      } as KubeObject);
      const waiting = await eventually(
        async () => {
          const queued = (await nar('during-outage'))?.status?.conditions?.find((c) => c.type === 'Queued');
          return queued?.reason === 'StorageLocationUnavailable' ? queued : undefined;
        },
        { what: 'NonAdminRestore waiting for the location' },
      );
      expect(waiting.status).toBe('False');
      expect(waiting.message).toContain(`the backup's storage location ${location} is Unavailable`);
      const uuid = (await nar('during-outage'))?.status?.veleroRestore?.nacuuid;
      expect(uuid).toBeDefined();
      expect(await cluster.admin.get(VeleroResources.restores, uuid!, velero.namespace)).toBeUndefined();
    } finally {
      await cluster.admin.patch(bsls, location, velero.namespace, {
        spec: { objectStorage: { bucket: velero.bucket } },
      });
    }
    // Available again: the restore goes on by itself and completes.
    const done = await settled('during-outage');
    expect(done.status?.veleroRestore?.status?.phase).toBe('Completed');
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

  it(
    "never recreates cluster-scoped objects, non-admin or velero.io kinds, nor, from a tenant's own location, RBAC",
    async () => {
      // What a backup can hold when the tenant writes its contents (its own bucket), or when it was made
      // before tenantkit excluded these kinds: a PriorityClass (a cluster-scoped "additional item" of a
      // pod), a NonAdminBackup, a velero.io Schedule and a RoleBinding of the namespace.
      const priorityClasses = resourceType(
        'scheduling.k8s.io',
        'v1',
        'priorityclasses',
        'PriorityClass',
        false,
      );
      const priority = cluster.unique('forged-priority');
      cluster.defer(() => cluster.admin.delete(priorityClasses, priority));
      await cluster.admin.create(priorityClasses, {
        metadata: { name: priority },
        value: 1000,
      } as KubeObject);
      // The API server's Priority admission reads PriorityClasses from its own cache, which may not hold
      // the one made a moment ago: it refuses the Pod until then (seen in a full run).
      await eventually(
        () =>
          cluster.admin.create(Resources.pods, {
            metadata: { name: 'prioritized', namespace: ns },
            spec: { priorityClassName: priority, containers: [{ name: 'main', image: 'busybox' }] },
          } as KubeObject),
        { what: `a Pod of PriorityClass ${priority}` },
      );
      await cluster.admin.create(VeleroResources.schedules, {
        metadata: { name: 'forged-schedule', namespace: ns },
        spec: { schedule: '@every 1h', paused: true, template: { includedNamespaces: ['*'] } },
      } as KubeObject);
      const rbac = (name: string) => ({
        metadata: { name, namespace: ns },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'User', name: 'someone-else', apiGroup: 'rbac.authorization.k8s.io' }],
      });
      await tenant.create(Resources.roleBindings, rbac('extra-view') as KubeObject);
      // Finished before the next backup starts (a Backup deleted while Velero runs it can hold its queue).
      await completedBackup('marker');
      const included = [
        'nonadminbackups.oadp.openshift.io',
        'rolebindings.rbac.authorization.k8s.io',
        'pods',
        'priorityclasses.scheduling.k8s.io',
        'schedules.velero.io',
      ];

      /** A Velero Backup of this namespace made past tenantkit (the admin's here), once backup sync adopted it. */
      async function forged(name: string, storageLocation?: string): Promise<NonAdminBackup> {
        await cluster.admin.create(VeleroResources.backups, {
          metadata: {
            name,
            namespace: velero.namespace,
            labels: { ...managedLabels },
            annotations: { [Annotations.nabNamespace]: ns, [Annotations.nabName]: name },
          },
          spec: {
            includedNamespaces: [ns],
            includedResources: included,
            includeClusterResources: true,
            ...(storageLocation ? { storageLocation } : {}),
          },
        } as KubeObject);
        const done = await velero.finished<VeleroRestore>(VeleroResources.backups, name, veleroQueueMs);
        expect(done.status?.phase, JSON.stringify(done.status)).toBe('Completed');
        return eventually(
          async () => {
            const list = await cluster.admin.list<NonAdminBackup>(nabType, {
              namespace: ns,
              labelSelector: `${Labels.syncedFrom}=${name}`,
            });
            const synced = list.items[0];
            return synced?.status?.veleroBackup?.status?.phase === 'Completed' ? synced : undefined;
          },
          { timeoutMs: veleroQueueMs, what: `NonAdminBackup synced for ${name}` },
        );
      }
      async function restoreFrom(nab: NonAdminBackup, name: string) {
        await tenant.create(narType, {
          metadata: { name, namespace: ns },
          spec: { restoreSpec: { backupName: nab.metadata.name } },
        } as KubeObject);
        const done = await settled(name);
        expect(['Completed', 'PartiallyFailed'], JSON.stringify(done.status)).toContain(
          done.status?.veleroRestore?.status?.phase,
        );
        const vr = await cluster.admin.get<VeleroRestore>(
          VeleroResources.restores,
          done.status!.veleroRestore!.name!,
          velero.namespace,
        );
        return vr!;
      }
      const restoredBy = (o: KubeObject | undefined, vr: VeleroRestore) =>
        o?.metadata.labels?.['velero.io/restore-name'] === vr.metadata.name;
      const byRestore = async <T extends KubeObject>(type: typeof nabType, vr: VeleroRestore) =>
        (await cluster.admin.list<T>(type, { namespace: ns })).items.filter((o) => restoredBy(o, vr));

      // 1. An admin's location: the backup holds all of it.
      const adminCopy = await forged(cluster.unique('forged-a'));
      const removeAll = async () => {
        await tenant.delete(Resources.roleBindings, 'extra-view', ns);
        await cluster.admin.delete(VeleroResources.schedules, 'forged-schedule', ns);
        await cluster.admin.delete(Resources.pods, 'prioritized', ns);
        await cluster.admin.delete(priorityClasses, priority);
      };
      await removeAll();
      await tenant.delete(nabType, 'marker', ns);
      await eventually(async () => (await cluster.admin.get(nabType, 'marker', ns)) === undefined, {
        what: 'NonAdminBackup marker gone',
      });
      const fromAdmin = await restoreFrom(adminCopy, 'forged-admin');
      expect(fromAdmin.spec.includeClusterResources).toBe(false);
      // The Velero object names the kinds fully qualified, and Velero really matched them:
      // the RoleBinding (allowed from an admin's location) is back, the rest is not.
      expect(restoredBy(await cluster.admin.get(Resources.roleBindings, 'extra-view', ns), fromAdmin)).toBe(
        true,
      );
      expect(await cluster.admin.get(priorityClasses, priority)).toBeUndefined();
      expect(await byRestore(nabType, fromAdmin)).toEqual([]);
      expect(await cluster.admin.get(VeleroResources.schedules, 'forged-schedule', ns)).toBeUndefined();

      // 2. A tenant's own location (a BSL tenantkit made for a NABSL: label and origin annotation; its
      // contents are the tenant's to write): no Roles or RoleBindings either.
      const defaultBsl = await cluster.admin.get<KubeObject & { spec: Record<string, unknown> }>(
        VeleroResources.backupStorageLocations,
        'default',
        velero.namespace,
      );
      const location = cluster.unique('tenant-location');
      const bucket = await velero.s3Fetch({ method: 'PUT', path: `/${location}` });
      expect(bucket.ok, await bucket.text()).toBe(true);
      cluster.defer(() =>
        cluster.admin.delete(VeleroResources.backupStorageLocations, location, velero.namespace),
      );
      await cluster.admin.create(VeleroResources.backupStorageLocations, {
        metadata: {
          name: location,
          namespace: velero.namespace,
          labels: { [Labels.nabslUuid]: location },
          annotations: { [Annotations.nabslNamespace]: ns, [Annotations.nabslName]: 'mine' },
        },
        spec: {
          ...defaultBsl!.spec,
          default: false,
          // A bucket of its own: Velero marks a location unavailable whose bucket holds unknown top-level
          // prefixes, so sharing the default location's bucket would take that one down.
          objectStorage: { bucket: location },
        },
      } as KubeObject);
      await eventually(
        async () =>
          (
            await cluster.admin.get<KubeObject & { status?: { phase?: string } }>(
              VeleroResources.backupStorageLocations,
              location,
              velero.namespace,
            )
          )?.status?.phase === 'Available',
        { timeoutMs: veleroQueueMs, what: `BackupStorageLocation ${location} Available` },
      );
      const tenantCopy = await forged(cluster.unique('forged-t'), location);
      await tenant.delete(Resources.roleBindings, 'extra-view', ns);
      const fromTenant = await restoreFrom(tenantCopy, 'forged-tenant');
      expect(fromTenant.spec.excludedResources).toEqual(
        expect.arrayContaining([...nonAdminKinds, '*.velero.io', ...rbacKinds]),
      );
      expect(await cluster.admin.get(Resources.roleBindings, 'extra-view', ns)).toBeUndefined();
      expect(await byRestore(nabType, fromTenant)).toEqual([]);
    },
    6 * veleroQueueMs,
  );

  it('writes one NACUUID and makes one Velero Restore while several controllers race for each restore', async () => {
    // Three more NonAdminRestore controllers, each with its own cache (as a rolling update or a
    // split-brain leader may run): one that has not seen another's first status write yet must not
    // write a second NACUUID (a second Velero Restore, restoring twice, would follow).
    const extra = [1, 2, 3].map(() => {
      const manager = new Manager({
        client: running.controllerClient,
        logger: silentLogger,
        component: 'test-controllers-racing',
      });
      registerNarController(manager);
      const stop = new AbortController();
      return { stop, run: manager.start(stop.signal) };
    });
    try {
      const names = ['race-a', 'race-b', 'race-c', 'race-d'];
      for (const name of names) {
        await tenant.create(narType, {
          metadata: { name, namespace: ns },
          spec: { restoreSpec: { backupName: 'nightly' } },
        } as KubeObject);
      }
      for (const name of names) {
        const done = await settled(name);
        const made = (await veleroRestores()).filter(
          (r) =>
            r.metadata.annotations?.[Annotations.narName] === name &&
            r.metadata.annotations?.[Annotations.narNamespace] === ns,
        );
        // One Velero Restore, the one the status names (the race this test is about)...
        expect(
          made.map((r) => r.metadata.name),
          name,
        ).toEqual([done.status!.veleroRestore!.nacuuid]);
        // ...and it restored. Velero's own account first in the message (a long status is cut short).
        expect(
          done.status?.veleroRestore?.status?.phase,
          `${name}: ${JSON.stringify(made[0]?.status)} ${JSON.stringify(done.status?.conditions?.map((c) => c.message))}`,
        ).toBe('Completed');
      }
    } finally {
      for (const e of extra) e.stop.abort();
      await Promise.all(extra.map((e) => e.run.catch(() => {})));
    }
  });

  it('never acts on a NACUUID or namespace it did not write: a forged status creates and deletes nothing', async () => {
    // An admin's Velero Restore in Velero's namespace (unlabelled: garbage collection leaves it alone),
    // and a velero.io Restore in another namespace.
    const theirs = `${otherNs}-theirs-00000000-0000-4000-8000-000000000001`;
    const victims: [string, string][] = [
      [theirs, velero.namespace],
      ['victim', otherNs],
    ];
    for (const [name, namespace] of victims) {
      await cluster.admin.create(VeleroResources.restores, {
        metadata: { name, namespace },
        spec: { backupName: 'no-such-backup', includedNamespaces: [otherNs] },
      } as KubeObject);
    }
    // NARs whose status names them, as a restore of a crafted backup (velero.io/restore-status) could
    // write it, with tenantkit's finalizer; made while the controllers are stopped.
    await running.stopControllers();
    try {
      for (const [i, [name, namespace]] of victims.entries()) {
        await tenant.create(narType, {
          metadata: { name: `forged-${i}`, namespace: ns },
          spec: { restoreSpec: { backupName: 'nightly' } },
        } as KubeObject);
        await cluster.admin.patch(narType, `forged-${i}`, ns, { metadata: { finalizers: [NarFinalizer] } });
        await cluster.admin.patch(
          narType,
          `forged-${i}`,
          ns,
          { status: { phase: 'New', veleroRestore: { nacuuid: name, name, namespace } } },
          PatchType.merge,
          'status',
        );
      }
    } finally {
      running.startControllers();
    }
    for (const i of [0, 1]) {
      const refused = await settled(`forged-${i}`);
      expect(accepted(refused)).toMatchObject({ status: 'False', reason: 'InvalidStatus' });
      expect(accepted(refused)?.message).toContain('was not written by tenantkit');
    }
    // Deleting them deletes neither victim, and nothing was made for them.
    for (const i of [0, 1]) await tenant.delete(narType, `forged-${i}`, ns);
    await eventually(
      async () => (await nar('forged-0')) === undefined && (await nar('forged-1')) === undefined,
      { what: 'forged NonAdminRestores gone' },
    );
    for (const [name, namespace] of victims) {
      expect(await cluster.admin.get(VeleroResources.restores, name, namespace), name).toBeDefined();
    }
    const made = (await veleroRestores()).filter(
      (r) => r.metadata.annotations?.[Annotations.narNamespace] === ns,
    );
    expect(made.map((r) => r.metadata.annotations?.[Annotations.narName])).not.toContain('forged-0');
    expect(made.map((r) => r.metadata.annotations?.[Annotations.narName])).not.toContain('forged-1');
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
