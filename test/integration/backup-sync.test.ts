// Backup sync end to end, on a real Velero with a real S3 store: a tenant's lost NonAdminBackup comes back
// (and restores), a Backup Velero's own bucket sync found gets its NonAdminBackup, and a sync label forged
// by a tenant to reach another tenant's backup is refused at admission and, with the webhook bypassed, by
// the controller.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Annotations, Labels, managedLabels } from '../../src/backup/model.ts';
import { OrganizationLabel } from '../../src/backup/velero/ownership.ts';
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  NonAdminDownloadRequestCrd,
  NonAdminRestoreCrd,
} from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import {
  type BackupEnvironment,
  completedBackup,
  completedRestore,
  condition,
  nabDeletedWithData,
  startBackupEnvironment,
  tenantIn,
  veleroQueueMs,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
let env: BackupEnvironment;
let ns: string;
let otherNs: string;
let tenant: KubeClient;
let other: KubeClient;
const nabType = NonAdminBackupCrd.type;
const narType = NonAdminRestoreCrd.type;

const nab = (name: string, namespace = ns) => cluster.admin.get<NonAdminBackup>(nabType, name, namespace);
const completed = (name: string) => completedBackup(cluster, ns, name);

/** Removes a NAB without its finalizer running: the Velero Backup stays (a "lost" NAB). */
async function loseNab(name: string) {
  await cluster.admin.patch(nabType, name, ns, { metadata: { finalizers: null } });
  await cluster.admin.delete(nabType, name, ns);
  await eventually(async () => (await nab(name)) === undefined, { what: `NAB ${name} gone` });
}

const synced = (backupName: string, namespace = ns) =>
  cluster.admin
    .list<NonAdminBackup>(nabType, { namespace, labelSelector: `${Labels.syncedFrom}=${backupName}` })
    .then((l) => l.items);

beforeAll(async () => {
  env = await startBackupEnvironment(cluster, { policy: { backupSyncPeriod: '3s' } });
  ({ namespace: ns, tenant } = await env.tenantNamespace('shop', 'alice'));
  ({ namespace: otherNs, tenant: other } = await env.tenantNamespace('mall', 'mallory'));
  await cluster.admin.create(Resources.configMaps, {
    metadata: { name: 'settings', namespace: ns },
    data: { color: 'blue' },
  } as KubeObject);
}, veleroStartTimeoutMs);

// stop() turns sync off first: otherwise the NABs it deletes would come back from their Backups.
afterAll(() => env?.stop());

describe('backup sync', { timeout: veleroQueueMs + 90_000 }, () => {
  let nightlyBackup: string;

  it('brings back a lost NonAdminBackup, which the tenant then restores from', async () => {
    await tenant.create(nabType, {
      metadata: { name: 'nightly', namespace: ns },
      spec: { backupSpec: {} },
    } as KubeObject);
    nightlyBackup = (await completed('nightly')).status!.veleroBackup!.name!;
    await loseNab('nightly');
    expect(
      await cluster.admin.get(VeleroResources.backups, nightlyBackup, env.velero.namespace),
    ).toBeDefined();

    // Sync finds the Backup without a NAB and makes one under the original name; the NAB controller adopts.
    const back = await completed('nightly');
    expect(back.metadata.labels?.[Labels.syncedFrom]).toBe(nightlyBackup);
    expect(back.status?.veleroBackup?.name).toBe(nightlyBackup);
    expect(condition(back, 'Accepted')).toMatchObject({
      status: 'True',
      reason: 'BackupAdopted',
    });
    // Adopted, not re-run: still the one Velero Backup of that NAB.
    const made = await cluster.admin.list<KubeObject>(VeleroResources.backups, {
      namespace: env.velero.namespace,
      labelSelector: `${Labels.nabUuid}=${nightlyBackup}`,
    });
    expect(made.items.map((b) => b.metadata.name)).toEqual([nightlyBackup]);

    await tenant.delete(Resources.configMaps, 'settings', ns);
    await tenant.create(narType, {
      metadata: { name: 'undo', namespace: ns },
      spec: { restoreSpec: { backupName: 'nightly' } },
    } as KubeObject);
    const restored = await eventually(
      () =>
        cluster.admin.get<KubeObject & { data?: Record<string, string> }>(
          Resources.configMaps,
          'settings',
          ns,
        ),
      { timeoutMs: veleroQueueMs, what: 'settings restored' },
    );
    expect(restored.data).toEqual({ color: 'blue' });
    const done = await completedRestore(cluster, ns, 'undo');
    expect(done.status?.veleroRestore?.name).toBeDefined();
  });

  it('never makes a second NonAdminBackup for one backup, across passes and restarts', async () => {
    await env.running.stopControllers();
    env.running.startControllers();
    // Several sync periods (3 s) with fresh caches.
    await new Promise((r) => setTimeout(r, 10_000));
    expect((await synced(nightlyBackup)).map((n) => n.metadata.name)).toEqual(['nightly']);
    const all = await cluster.admin.list<NonAdminBackup>(nabType, { namespace: ns });
    expect(all.items.filter((n) => n.status?.veleroBackup?.name === nightlyBackup)).toHaveLength(1);
  });

  it("makes a NonAdminBackup for a Backup that Velero's bucket sync brought back", async () => {
    await tenant.create(nabType, {
      metadata: { name: 'weekly', namespace: ns },
      spec: { backupSpec: {} },
    } as KubeObject);
    const name = (await completed('weekly')).status!.veleroBackup!.name!;
    // Both gone from the cluster, the data still in the bucket; controllers stopped so that neither the
    // NAB controller nor sync acts halfway through.
    await env.running.stopControllers();
    await loseNab('weekly');
    await cluster.admin.delete(VeleroResources.backups, name, env.velero.namespace);
    await eventually(
      async () => !(await cluster.admin.get(VeleroResources.backups, name, env.velero.namespace)),
      {
        what: 'Velero Backup deleted',
      },
    );
    expect((await env.velero.listObjects(`backups/${name}/`)).length).toBeGreaterThan(0);
    env.running.startControllers();
    // Velero re-creates the Backup from the bucket (its sync period is 5 s here), then tenantkit's sync.
    const back = await completed('weekly');
    expect(back.status?.veleroBackup?.name).toBe(name);
    expect(back.metadata.labels?.[Labels.syncedFrom]).toBe(name);
    const backup = await cluster.admin.get<KubeObject>(VeleroResources.backups, name, env.velero.namespace);
    expect(backup?.metadata.labels?.['velero.io/storage-location']).toBeDefined();
  });

  it('brings back a NonAdminBackup the tenant deleted without its data, as its Event told her; deleteBackup on it ends it for good', async () => {
    await tenant.create(nabType, {
      metadata: { name: 'monthly', namespace: ns },
      spec: { backupSpec: {} },
    } as KubeObject);
    const first = await completed('monthly');
    const name = first.status!.veleroBackup!.name!;
    // kubectl delete nab monthly, as the tenant.
    await tenant.delete(nabType, 'monthly', ns);
    const told = await eventually(async () => {
      const list = await tenant.list<
        KubeObject & { reason?: string; note?: string; regarding?: { uid?: string } }
      >(Resources.events, { namespace: ns });
      return list.items.find((e) => e.reason === 'BackupDataKept' && e.regarding?.uid === first.metadata.uid);
    });
    expect(told.note).toBe(
      `Velero Backup ${name} was removed but its data stays in object storage, so Velero's bucket sync brings the backup back and backup sync makes a NonAdminBackup for it again (labelled ${Labels.syncedFrom}=${name}); to be rid of a backup, set spec.deleteBackup: true (before deleting, or on the one that came back) to remove its data too`,
    );
    // It comes back: a new object, same name, adopting the same Backup.
    const back = await eventually(
      async () => {
        const o = await nab('monthly');
        return o && o.metadata.uid !== first.metadata.uid && o.status?.veleroBackup?.name ? o : undefined;
      },
      { timeoutMs: 60_000, what: 'monthly back by sync' },
    );
    expect(back.metadata.labels?.[Labels.syncedFrom]).toBe(name);
    expect(back.status?.veleroBackup?.name).toBe(name);
    // As the Event says: deleteBackup on the one that came back removes the data, and nothing comes back.
    await tenant.patch(nabType, 'monthly', ns, { spec: { deleteBackup: true } });
    await nabDeletedWithData(cluster, env.velero, 'monthly', ns);
    expect(await env.velero.listObjects(`backups/${name}/`)).toEqual([]);
    await new Promise((r) => setTimeout(r, 8_000));
    expect(await nab('monthly')).toBeUndefined();
    expect(await cluster.admin.get(VeleroResources.backups, name, env.velero.namespace)).toBeUndefined();
  });

  it('gives a namespace made again its backups at once, not at the next periodic sync', async () => {
    const { namespace: gone, tenant: owner } = await env.tenantNamespace('gone', 'gina');
    // Its organization: the namespace made again below is the same organization's, so it gets them back.
    const org = cluster.unique('gone-org');
    await cluster.admin.patch(Resources.namespaces, gone, undefined, {
      metadata: { labels: { [OrganizationLabel]: org } },
    });
    await owner.create(nabType, {
      metadata: { name: 'before', namespace: gone },
      spec: { backupSpec: {} },
    } as KubeObject);
    const name = (await completedBackup(cluster, gone, 'before')).status!.veleroBackup!.name!;
    // An hour between periodic passes: only the namespace's creation can bring the backup in now.
    await env.setPolicy({ backupSyncPeriod: '1h' });
    try {
      // The namespace deleted with its NAB, whose controller removes the Velero Backup object; Velero's
      // bucket sync brings it back while the namespace is gone, and tenantkit's sync has nowhere to put it.
      await cluster.admin.delete(Resources.namespaces, gone);
      await eventually(async () => !(await cluster.admin.get(Resources.namespaces, gone)), {
        what: `namespace ${gone} gone`,
        timeoutMs: 60_000,
      });
      await eventually(
        async () => {
          const b = await cluster.admin.get<KubeObject & { status?: { phase?: string } }>(
            VeleroResources.backups,
            name,
            env.velero.namespace,
          );
          return b?.status?.phase === 'Completed' ? b : undefined;
        },
        { what: "Velero's bucket sync bringing the Backup back", timeoutMs: 60_000 },
      );
      // Its sync pass saw no namespace and waits an hour; the namespace's creation does not wait.
      await new Promise((r) => setTimeout(r, 2_000));
      await cluster.admin.create(Resources.namespaces, {
        metadata: { name: gone, labels: { [OrganizationLabel]: org } },
      } as KubeObject);
      await eventually(async () => (await synced(name, gone)).length === 1, {
        what: 'the NonAdminBackup in the namespace made again',
        timeoutMs: 20_000,
      });
    } finally {
      await env.setPolicy();
    }
  });

  it("refuses a sync label pointing at another tenant's backup, at admission and in the controller", async () => {
    const forged = {
      metadata: { name: 'stolen', namespace: otherNs, labels: { [Labels.syncedFrom]: nightlyBackup } },
      spec: { backupSpec: {} },
    } as KubeObject;
    await expect(other.create(nabType, forged)).rejects.toThrow(
      `label ${Labels.syncedFrom}=${nightlyBackup} names a Velero Backup that does not exist or does not belong to namespace ${otherNs}`,
    );
    // A tenant cannot add the label later either: before the NAB is accepted (the controllers are held
    // so that it stays unaccepted; once accepted, the webhook gives the second message below) ...
    await env.running.stopControllers();
    try {
      await other.create(nabType, {
        metadata: { name: 'plain', namespace: otherNs },
        spec: { backupSpec: {} },
      } as KubeObject);
      await expect(
        other.patch(nabType, 'plain', otherNs, {
          metadata: { labels: { [Labels.syncedFrom]: nightlyBackup } },
        }),
      ).rejects.toThrow(`does not belong to namespace ${otherNs}`);
    } finally {
      env.running.startControllers();
    }
    // ... nor after.
    await eventually(async () => (await nab('plain', otherNs))?.status?.veleroBackup?.nacuuid, {
      what: 'plain accepted',
    });
    await expect(
      other.patch(nabType, 'plain', otherNs, {
        metadata: { labels: { [Labels.syncedFrom]: nightlyBackup } },
      }),
    ).rejects.toThrow(/cannot be added, changed or removed/);

    // With the webhook bypassed (a control-plane identity, which webhooks never see), the controller refuses.
    const bypass = await cluster.user(`system:serviceaccount:kube-system:${cluster.unique('bypass')}`, [
      'system:masters',
    ]);
    await bypass.create(nabType, forged);
    const refused = await eventually(
      async () => {
        const o = await nab('stolen', otherNs);
        return o?.status?.phase === 'BackingOff' ? o : undefined;
      },
      { what: 'forged NAB refused' },
    );
    const accepted = condition(refused, 'Accepted');
    expect(accepted).toMatchObject({ status: 'False', reason: 'NotAdoptable' });
    expect(accepted?.message).toContain(`does not belong to namespace ${otherNs}`);
    expect(refused.status?.veleroBackup).toBeUndefined();
    // Nothing was made for it in Velero, and the tenant's own NAB is untouched.
    const made = await cluster.admin.list<KubeObject>(VeleroResources.backups, {
      namespace: env.velero.namespace,
    });
    const theirs = made.items.filter(
      (b) => b.metadata.annotations?.['openshift.io/oadp-nab-origin-namespace'] === otherNs,
    );
    expect(theirs.map((b) => b.metadata.annotations?.['openshift.io/oadp-nab-origin-name'])).toEqual([
      'plain',
    ]);
    expect((await nab('nightly'))?.status?.veleroBackup?.name).toBe(nightlyBackup);
    // Events are sent after the status write, by the recorder's own queue: wait for it.
    await eventually(
      async () => {
        const events = await cluster.admin.list<
          KubeObject & { reason?: string; regarding?: { name?: string } }
        >(Resources.events, { namespace: otherNs });
        return events.items.some((e) => e.reason === 'NotAdoptable' && e.regarding?.name === 'stolen');
      },
      { what: 'a NotAdoptable Event on the forged NAB' },
    );
  });
});

/** A namespace of `name` in organization `org`, made by the admin, with `user` its admin. */
async function orgNamespace(name: string, org: string, user: string) {
  await cluster.admin.create(Resources.namespaces, {
    metadata: { name, labels: { [OrganizationLabel]: org } },
  } as KubeObject);
  cluster.defer(() => cluster.admin.delete(Resources.namespaces, name));
  return tenantIn(cluster, name, user);
}

async function deleteNamespace(name: string) {
  await cluster.admin.delete(Resources.namespaces, name);
  await eventually(async () => !(await cluster.admin.get(Resources.namespaces, name)), {
    what: `namespace ${name} gone`,
    timeoutMs: 60_000,
  });
}

type VeleroBackupObject = KubeObject & { status?: { phase?: string } };
const completedVelero = (name: string) =>
  eventually(
    async () => {
      const b = await cluster.admin.get<VeleroBackupObject>(
        VeleroResources.backups,
        name,
        env.velero.namespace,
      );
      return b?.status?.phase === 'Completed' ? b : undefined;
    },
    { what: `Velero Backup ${name} Completed (Velero's bucket sync brings it back)`, timeoutMs: 90_000 },
  );

/** Several sync passes (period 3s): what sync would give, it has given by then. */
const severalPasses = () => new Promise((r) => setTimeout(r, 10_000));

describe('backups follow the namespace instance and its organization, not its name', {
  timeout: veleroQueueMs + 240_000,
}, () => {
  it("gives a namespace re-created under another organization nothing of the old one's, and the same organization everything", async () => {
    const name = cluster.unique('r1x');
    const teamA = cluster.unique('team-a');
    const alice = await orgNamespace(name, teamA, 'alice');
    await cluster.admin.create(Resources.secrets, {
      metadata: { name: 'db', namespace: name },
      stringData: { password: 'alice-only' },
    } as KubeObject);
    await alice.create(nabType, {
      metadata: { name: 'r1', namespace: name },
      spec: { backupSpec: {} },
    } as KubeObject);
    const backup = (await completedBackup(cluster, name, 'r1')).status!.veleroBackup!.name!;
    await deleteNamespace(name);
    await completedVelero(backup);

    // bob, of another organization, makes a namespace of the same name.
    const bob = await orgNamespace(name, cluster.unique('team-b'), 'bob');
    await bob.create(narType, {
      metadata: { name: 'steal', namespace: name },
      spec: { restoreSpec: { backupName: 'r1' } },
    } as KubeObject);
    await bob.create(NonAdminDownloadRequestCrd.type, {
      metadata: { name: 'peek', namespace: name },
      spec: { target: { kind: 'BackupLog', name: 'r1' } },
    } as KubeObject);
    await severalPasses();
    // No NonAdminBackup, so nothing to restore or download; no Velero view of alice's Backup.
    expect(await synced(backup, name)).toEqual([]);
    expect((await bob.list(nabType, { namespace: name })).items).toEqual([]);
    const restores = await cluster.admin.list<KubeObject>(VeleroResources.restores, {
      namespace: env.velero.namespace,
    });
    expect(restores.items.filter((r) => r.metadata.annotations?.[Annotations.narNamespace] === name)).toEqual(
      [],
    );
    const nar = await bob.get<KubeObject & { status?: { phase?: string } }>(narType, 'steal', name);
    expect(nar?.status?.phase).toBe('BackingOff');
    const nadr = await bob.get<KubeObject & { status?: { phase?: string; velero?: unknown } }>(
      NonAdminDownloadRequestCrd.type,
      'peek',
      name,
    );
    expect(nadr?.status?.velero).toBeUndefined();
    await expect(bob.get(VeleroResources.backups, backup, env.velero.namespace)).rejects.toThrow(
      /forbidden/i,
    );
    expect(await bob.get(Resources.secrets, 'db', name)).toBeUndefined();

    // The same organization makes it again: its members get the backup back, and restore from it.
    await deleteNamespace(name);
    const again = await orgNamespace(name, teamA, 'alice');
    const back = await eventually(async () => (await synced(backup, name))[0], {
      what: 'the backup synced into the namespace its organization made again',
      timeoutMs: 30_000,
    });
    await completedBackup(cluster, name, back.metadata.name!);
    await again.create(narType, {
      metadata: { name: 'back', namespace: name },
      spec: { restoreSpec: { backupName: back.metadata.name } },
    } as KubeObject);
    await completedRestore(cluster, name, 'back');
    const secret = await again.get<KubeObject & { data?: Record<string, string> }>(
      Resources.secrets,
      'db',
      name,
    );
    expect(Buffer.from(secret?.data?.password ?? '', 'base64').toString()).toBe('alice-only');
  });

  it('syncs a backup made before owners were recorded to no one, until the admin assigns it', async () => {
    const name = cluster.unique('old');
    const org = cluster.unique('team-old');
    await orgNamespace(name, org, 'olga');
    // What tenantkit made before it recorded owners: its labels and origin, no owner record.
    const backup = cluster.unique('old-backup');
    await cluster.admin.create(VeleroResources.backups, {
      metadata: {
        name: backup,
        namespace: env.velero.namespace,
        labels: { ...managedLabels, [Labels.nabUuid]: backup },
        annotations: { [Annotations.nabName]: 'old', [Annotations.nabNamespace]: name },
      },
      spec: { includedNamespaces: [name] },
    } as KubeObject);
    cluster.defer(() => cluster.admin.delete(VeleroResources.backups, backup, env.velero.namespace));
    await completedVelero(backup);
    await deleteNamespace(name);
    // The namespace, older than the backup, had it (and its synced NonAdminBackup removed the object on
    // the way out): Velero's bucket sync brings it back, still without a record.
    await completedVelero(backup);
    // Made again, even by the same organization: nothing says which namespace the backup was taken from.
    await orgNamespace(name, org, 'olga');
    await severalPasses();
    expect(await synced(backup, name)).toEqual([]);
    // The admin assigns it (docs/backup.md): to the organization, as a tenant cannot.
    await cluster.admin.patch(VeleroResources.backups, backup, env.velero.namespace, {
      metadata: { annotations: { [Annotations.originOrganization]: org } },
    });
    await eventually(async () => (await synced(backup, name)).length === 1, {
      what: 'the assigned backup synced into its namespace',
      timeoutMs: 30_000,
    });
  });
});
