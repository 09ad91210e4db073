// Transparency, as tenants through the real API server, with the whole backup capability and a real
// Velero: a namespace's admins can `get` the Velero Backups and Restores tenantkit made for that namespace
// (for its NonAdminBackups, NonAdminRestores and NonAdminSchedules, run by Velero), and nothing else in
// Velero's namespace (no other tenant's, no list, no DownloadRequests); the grant follows the objects and
// the namespace's admins, and nothing a tenant can write changes it: not its objects' labels, and not the
// contents of its own bucket, which Velero's bucket sync turns into Backups in Velero's namespace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Origins } from '../../src/backup/controllers/gc/rules.ts';
import { viewObjectName } from '../../src/backup/controllers/transparency/reconciler.ts';
import { backup } from '../../src/backup/index.ts';
import { Annotations, Labels, ManagedByValue, TenantNamespaceLabel } from '../../src/backup/model.ts';
import { type NonAdminBackup, NonAdminBackupCrd, NonAdminRestoreCrd } from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import {
  type BackupEnvironment,
  completedBackup,
  nabDeletedWithData,
  ownLocation,
  settledRestore,
  startBackupEnvironment,
  veleroNamespaceValue,
  veleroQueueMs,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { grantControllerNamespace } from '../harness/components.ts';
import { startTestVelero, type TestVelero, veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
let env: BackupEnvironment;
let veleroNs: string;
let aliceNs: string;
let bobNs: string;
let alice: KubeClient;
let bob: KubeClient;
let aliceAdmin: string;
/** Bob's own bucket on the test's S3 server. */
const bobBucket = 'transparency-bob';

type Role = KubeObject & { rules?: { resources?: string[]; verbs?: string[]; resourceNames?: string[] }[] };

/** The tenant's NonAdminBackup `name`, once Velero completed it: the name of its Velero Backup. */
async function backedUp(
  client: KubeClient,
  namespace: string,
  name: string,
  spec: Record<string, unknown> = {},
) {
  await client.create(NonAdminBackupCrd.type, {
    metadata: { name, namespace },
    spec: { backupSpec: spec },
  } as KubeObject);
  return (await completedBackup(cluster, namespace, name)).status!.veleroBackup!.name!;
}

/** The tenant's NonAdminRestore `name` of its backup `backupName`, once Velero ran it: its Restore's name. */
async function restored(client: KubeClient, namespace: string, name: string, backupName: string) {
  await client.create(NonAdminRestoreCrd.type, {
    metadata: { name, namespace },
    spec: { restoreSpec: { backupName } },
  } as KubeObject);
  const done = await settledRestore(cluster, namespace, name);
  expect(['Completed', 'PartiallyFailed']).toContain(done.status?.veleroRestore?.status?.phase);
  return done.status!.veleroRestore!.name!;
}

/** The tenant deletes its NonAdminBackup with its data (Velero deletes the Backup and the bucket's copy). */
async function deletedWithData(client: KubeClient, namespace: string, name: string) {
  await client.patch(NonAdminBackupCrd.type, name, namespace, { spec: { deleteBackup: true } });
  await nabDeletedWithData(cluster, env.velero, name, namespace);
}

const getBackup = (client: KubeClient, name: string, namespace = veleroNs) =>
  client.get(VeleroResources.backups, name, namespace);
const status = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (err: { status?: number }) => err.status ?? 0,
  );
/** Waits until `client` gets `name` with HTTP `code` (RBAC changes reach the authorizer within moments). */
const expectGet = (client: KubeClient, name: string, code: number, namespace = veleroNs) =>
  eventually(async () => (await status(getBackup(client, name, namespace))) === code, {
    what: `get backup ${name} answers ${code}`,
  });
const role = (tenantNs: string, namespace = veleroNs) =>
  cluster.admin.get<Role>(Resources.roles, viewObjectName(tenantNs), namespace);
const namesIn = (r: Role | undefined, resource: string) =>
  r?.rules?.find((x) => x.resources?.includes(resource))?.resourceNames ?? [];

beforeAll(async () => {
  // Schedules may run every minute here, so that a test sees a run.
  env = await startBackupEnvironment(cluster, { policy: { minimumScheduleInterval: '1m' } });
  veleroNs = env.velero.namespace;
  aliceNs = await env.namespace('alice');
  ({ namespace: bobNs, tenant: bob } = await env.tenantNamespace('bob', 'bob'));
  alice = await cluster.user(cluster.unique('alice'));
  // Alice's admin grant is her own binding, which a test takes away.
  aliceAdmin = cluster.unique('grant-admin');
  await cluster.admin.create(Resources.roleBindings, {
    metadata: { name: aliceAdmin, namespace: aliceNs },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: alice.userName }],
  } as KubeObject);
}, veleroStartTimeoutMs);

afterAll(() => env?.stop());

describe('Velero objects a tenant may read', { timeout: 2 * veleroQueueMs }, () => {
  let aliceBackup: string;
  let aliceRestore: string;
  let bobBackup: string;

  it("lets a namespace's admin get its own Backups and Restores, and nothing else there", async () => {
    await eventually(async () => {
      await alice.create(Resources.configMaps, {
        metadata: { name: 'settings', namespace: aliceNs },
        data: { a: '1' },
      } as KubeObject);
      return true;
    });
    aliceBackup = await backedUp(alice, aliceNs, 'nightly');
    aliceRestore = await restored(alice, aliceNs, 'first', 'nightly');
    bobBackup = await backedUp(bob, bobNs, 'nightly');

    await expectGet(alice, aliceBackup, 200);
    await expectGet(bob, bobBackup, 200);
    const got = await getBackup(alice, aliceBackup);
    expect(got?.metadata.annotations?.[Annotations.nabNamespace]).toBe(aliceNs);
    await eventually(
      async () => (await status(alice.get(VeleroResources.restores, aliceRestore, veleroNs))) === 200,
    );

    expect(await status(getBackup(alice, bobBackup))).toBe(403);
    expect(await status(getBackup(bob, aliceBackup))).toBe(403);
    expect(await status(alice.list(VeleroResources.backups, { namespace: veleroNs }))).toBe(403);
    expect(await status(alice.list(VeleroResources.restores, { namespace: veleroNs }))).toBe(403);
    expect(
      await status(
        alice.create(VeleroResources.downloadRequests, {
          metadata: { name: 'mine', namespace: veleroNs },
          spec: { target: { kind: 'BackupLog', name: aliceBackup } },
        } as KubeObject),
      ),
    ).toBe(403);

    const r = await role(aliceNs);
    expect(r?.metadata.labels?.[TenantNamespaceLabel]).toBe(aliceNs);
    expect(r?.rules).toEqual([
      { apiGroups: ['velero.io'], resources: ['backups'], verbs: ['get'], resourceNames: [aliceBackup] },
      { apiGroups: ['velero.io'], resources: ['restores'], verbs: ['get'], resourceNames: [aliceRestore] },
    ]);
    const binding = await cluster.admin.get<KubeObject & { subjects?: unknown[] }>(
      Resources.roleBindings,
      viewObjectName(aliceNs),
      veleroNs,
    );
    expect(binding?.subjects).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: alice.userName },
    ]);
  });

  it("cannot be widened by anything a tenant writes: another tenant's backup stays out of reach", async () => {
    // Forged claims on what the tenant can write: a NAB carrying bob's NACUUID and origin. Admitted or
    // not, it must not reach bob's backup (if admitted, Velero backs up alice's namespace under its own name).
    const forged = await alice
      .create(NonAdminBackupCrd.type, {
        metadata: {
          name: 'forged',
          namespace: aliceNs,
          labels: { [Labels.nabUuid]: bobBackup, [Labels.managedBy]: ManagedByValue, [Labels.oadp]: 'True' },
          annotations: { [Annotations.nabNamespace]: bobNs, [Annotations.nabName]: 'nightly' },
        },
        spec: { backupSpec: {} },
      } as KubeObject)
      .then(
        () => true,
        () => false,
      );
    // Nor can the tenant write in Velero's namespace, to make or relabel a Velero object.
    expect(
      await status(
        alice.create(VeleroResources.backups, {
          metadata: {
            name: 'forged',
            namespace: veleroNs,
            labels: { [Labels.managedBy]: ManagedByValue, [Labels.oadp]: 'True' },
            annotations: { [Annotations.nabNamespace]: aliceNs },
          },
          spec: {},
        } as KubeObject),
      ),
    ).toBe(403);
    expect(
      await status(
        alice.patch(VeleroResources.backups, bobBackup, veleroNs, {
          metadata: { annotations: { [Annotations.nabNamespace]: aliceNs } },
        }),
      ),
    ).toBe(403);
    // A later change to alice's objects is processed after the forgeries, and still leaves bob's out.
    const second = await backedUp(alice, aliceNs, 'second');
    await expectGet(alice, second, 200);
    const names = namesIn(await role(aliceNs), 'backups');
    expect(names).toEqual(expect.arrayContaining([aliceBackup, second]));
    expect(names).not.toContain(bobBackup);
    expect(await status(getBackup(alice, bobBackup))).toBe(403);
    await deletedWithData(alice, aliceNs, 'second');
    if (forged) {
      await completedBackup(cluster, aliceNs, 'forged').catch(() => undefined);
      await deletedWithData(alice, aliceNs, 'forged');
    }
    // Bob's backup is still there: the forged NAB's deletion did not reach it.
    expect(await cluster.admin.get(VeleroResources.backups, bobBackup, veleroNs)).toBeDefined();
  });

  it("removes a deleted restore's and backup's names, and the Role and binding once nothing is left", async () => {
    // The tenant deletes its restore: tenantkit removes the Velero Restore, and its name leaves the Role.
    await alice.delete(NonAdminRestoreCrd.type, 'first', aliceNs);
    await eventually(async () => namesIn(await role(aliceNs), 'restores').length === 0, {
      what: 'deleted restore out of the Role',
    });
    expect(namesIn(await role(aliceNs), 'backups')).toEqual([aliceBackup]);
    await expectGet(alice, aliceBackup, 200);
    // Then its backup, with the data: Velero deletes the Backup, and the last name goes.
    await deletedWithData(alice, aliceNs, 'nightly');
    await expectGet(alice, aliceBackup, 403);
    await eventually(async () => (await role(aliceNs)) === undefined, { what: 'Role removed' });
    await eventually(
      async () =>
        (await cluster.admin.get(Resources.roleBindings, viewObjectName(aliceNs), veleroNs)) === undefined,
      { what: 'RoleBinding removed' },
    );
  });

  it('follows the namespace admins: losing admin there loses the Velero view within seconds', async () => {
    aliceBackup = await backedUp(alice, aliceNs, 'third');
    await expectGet(alice, aliceBackup, 200);
    await cluster.admin.delete(Resources.roleBindings, aliceAdmin, aliceNs);
    await eventually(async () => (await status(getBackup(alice, aliceBackup))) === 403, {
      timeoutMs: 10_000,
      what: 'view revoked with admin',
    });
    // Back as an editor of the namespace: the view comes back.
    await cluster.grant({ kind: 'User', name: alice.userName }, { clusterRole: 'edit' }, aliceNs);
    await expectGet(alice, aliceBackup, 200);
  });

  it('names its objects within 63 characters and binds namespace-local ServiceAccounts there', async () => {
    const longNs = `l${cluster.unique('x').replace(/-/g, '')}${'n'.repeat(63)}`.slice(0, 63);
    await cluster.admin.create(Resources.namespaces, { metadata: { name: longNs } });
    cluster.defer(() => cluster.admin.delete(Resources.namespaces, longNs));
    // A ServiceAccount subject without a namespace means one in the binding's namespace.
    await cluster.admin.create(Resources.roleBindings, {
      metadata: { name: 'robots', namespace: longNs },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'deployer' }],
    } as KubeObject);
    const longName = 'b'.repeat(200);
    const name = await backedUp(cluster.admin, longNs, longName);
    expect(name.length).toBeLessThanOrEqual(63);
    expect(viewObjectName(longNs).length).toBeLessThanOrEqual(63);
    const binding = await eventually(() =>
      cluster.admin.get<KubeObject & { subjects?: unknown[] }>(
        Resources.roleBindings,
        viewObjectName(longNs),
        veleroNs,
      ),
    );
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'deployer', namespace: longNs }]);
    expect(namesIn(await role(longNs), 'backups')).toEqual([name]);
    await deletedWithData(cluster.admin, longNs, longName);
    await eventually(async () => (await role(longNs)) === undefined, { what: 'Role removed' });
  });

  it("lets a tenant read its schedule runs, and its own location's backups only, whatever they claim", async () => {
    // A schedule run: Velero makes it from the Schedule (a minute after, at its next check), with the
    // NonAdminSchedule's origin on it.
    await alice.create(Origins.nas.type, {
      metadata: { name: 'daily', namespace: aliceNs },
      spec: { schedule: '@every 1m', template: { backupSpec: {} } },
    } as KubeObject);
    const run = await eventually(
      async () =>
        (
          await cluster.admin.list(VeleroResources.backups, {
            namespace: veleroNs,
            labelSelector: `${Labels.nasUuid}`,
          })
        ).items.find((b) => b.metadata.annotations?.[Annotations.nasNamespace] === aliceNs)?.metadata.name,
      { timeoutMs: 150_000, what: "the schedule's first run" },
    );
    await expectGet(alice, run, 200);
    expect(namesIn(await role(aliceNs), 'backups')).toContain(run);
    await alice.patch(Origins.nas.type, 'daily', aliceNs, { spec: { paused: true } });

    // Bob's own storage location: bob writes that bucket, so Velero's bucket sync may bring in Backups
    // that claim any origin, or carry no tenantkit label at all.
    await ownLocation(env, bob, bobNs, bobBucket);
    const location = await eventually(
      async () => {
        const nabsl = await cluster.admin.get<KubeObject & { status?: Record<string, { nacuuid?: string }> }>(
          Origins.nabsl.type,
          'own',
          bobNs,
        );
        const uuid = nabsl?.status?.veleroBackupStorageLocation?.nacuuid;
        const bsl = uuid
          ? await cluster.admin.get<
              KubeObject & { spec?: { objectStorage?: { prefix?: string } }; status?: { phase?: string } }
            >(VeleroResources.backupStorageLocations, uuid, veleroNs)
          : undefined;
        return bsl?.status?.phase === 'Available' ? bsl : undefined;
      },
      { timeoutMs: 60_000, what: "bob's location Available" },
    );
    const own = await backedUp(bob, bobNs, 'in-own-bucket', { storageLocation: 'own' });
    // Bob, as the bucket's owner, copies his backup's metadata under two new names: one claiming to be
    // alice's (tenantkit's labels, alice's namespace), one with no tenantkit label at all.
    const prefix = location.spec?.objectStorage?.prefix ?? '';
    const key = (name: string) => `${prefix ? `${prefix}/` : ''}backups/${name}/velero-backup.json`;
    const original = await env.velero.s3Fetch({ method: 'GET', path: `/${bobBucket}/${key(own)}` });
    expect(original.ok, `${key(own)}: ${original.status}`).toBe(true);
    const metadata = (await original.json()) as NonAdminBackup & { spec: Record<string, unknown> };
    const claimed = cluster.unique('claims-alice');
    const bare = cluster.unique('bare');
    for (const [name, claims] of [
      [claimed, true],
      [bare, false],
    ] as const) {
      const copy = structuredClone(metadata);
      copy.metadata = {
        name,
        namespace: veleroNs,
        ...(claims
          ? {
              labels: { [Labels.managedBy]: ManagedByValue, [Labels.oadp]: 'True', [Labels.nabUuid]: name },
              annotations: { [Annotations.nabNamespace]: aliceNs, [Annotations.nabName]: 'nightly' },
            }
          : {}),
      };
      copy.spec = { ...copy.spec, includedNamespaces: [claims ? aliceNs : bobNs] };
      const put = await env.velero.s3Fetch({
        method: 'PUT',
        path: `/${bobBucket}/${key(name)}`,
        body: Buffer.from(JSON.stringify(copy)),
      });
      expect(put.ok, await put.text()).toBe(true);
    }
    // Velero's bucket sync makes both Backups in its namespace, on bob's location. It runs every 5 s
    // here, yet under a loaded CI machine it once took longer than 60 s (cause not found): 120 s each.
    for (const name of [claimed, bare])
      await eventually(() => cluster.admin.get(VeleroResources.backups, name, veleroNs), {
        timeoutMs: 120_000,
        what: `Backup ${name} synced from bob's bucket`,
      });
    await expectGet(bob, claimed, 200);
    await expectGet(bob, bare, 200);
    expect(await status(getBackup(alice, claimed))).toBe(403);
    expect(namesIn(await role(aliceNs), 'backups')).not.toContain(claimed);
  });

  it("moves with Velero's namespace and cleans up the old one", async () => {
    // A second Velero in a namespace of its own; the admin moves tenantkit there with the chart, which
    // grants the controllers their Role in the new namespace first.
    const next: TestVelero = await startTestVelero(cluster);
    try {
      await grantControllerNamespace(cluster, backup, veleroNamespaceValue, next.namespace);
      await env.setPolicy({ veleroNamespace: next.namespace });
      const moved = await backedUp(bob, bobNs, 'moved');
      await expectGet(bob, moved, 200, next.namespace);
      await eventually(async () => (await role(bobNs)) === undefined && (await role(aliceNs)) === undefined, {
        what: 'old Roles removed',
      });
      expect(await status(getBackup(bob, bobBackup))).toBe(403);
      expect(namesIn(await role(bobNs, next.namespace), 'backups')).toEqual([moved]);
    } finally {
      await env.setPolicy({ veleroNamespace: veleroNs });
      await next.stop();
    }
  });
});
