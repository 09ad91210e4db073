// Transparency, as tenants through the real API server: a namespace's admins can `get` the Velero Backups
// and Restores tenantkit made for that namespace, and nothing else in Velero's namespace (no other
// tenant's, no list, no DownloadRequests); the grant follows the objects and the namespace's admins, and
// nothing a tenant can write changes it. No Velero server is needed: the Velero objects are made here as
// tenantkit makes them (labels and origin annotations).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type NonAdminBackupConfig,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
} from '../../src/api/backup.ts';
import { backup, backupUserClusterRoles } from '../../src/backup/index.ts';
import { Annotations, Labels, ManagedByValue, nacObjectName } from '../../src/backup/names.ts';
import {
  registerTransparencyController,
  TenantNamespaceLabel,
  viewObjectName,
} from '../../src/backup/transparency-controller.ts';
import type { Capability } from '../../src/capability.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { VeleroResources } from '../../src/kube/velero.ts';
import { veleroNamespaceValue } from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { grantControllerNamespace, runCapability } from '../harness/components.ts';

const cluster = await TestCluster.connect();
const apply = { fieldManager: 'backup-transparency-test', force: true };
let veleroNs: string;
let aliceNs: string;
let bobNs: string;
let alice: KubeClient;
let bob: KubeClient;
let aliceAdmin: string;

type Role = KubeObject & { rules?: { resources?: string[]; verbs?: string[]; resourceNames?: string[] }[] };

// Only the transparency controller runs, under the backup capability's exact rules (the chart's RBAC).
const transparency: Capability = {
  name: 'backup-transparency',
  controllerRules: backup.controllerRules,
  controllerNamespacedRules: backup.controllerNamespacedRules,
  webhookRules: [],
  controllers: ({ manager }) => registerTransparencyController(manager),
};

async function setVeleroNamespace(namespace: string) {
  await cluster.admin.apply(
    NonAdminBackupConfigCrd.type,
    {
      metadata: { name: 'cluster' },
      spec: { nonAdmin: { enable: true, veleroNamespace: namespace } },
    } as NonAdminBackupConfig,
    apply,
  );
}

/** A Velero Backup (or Restore) as tenantkit's controllers make one for `namespace`. */
async function veleroObject(kind: 'backup' | 'restore', namespace: string, name: string, where = veleroNs) {
  const objectName = nacObjectName(namespace, name);
  const b = kind === 'backup';
  await cluster.admin.create(b ? VeleroResources.backups : VeleroResources.restores, {
    metadata: {
      name: objectName,
      namespace: where,
      labels: {
        [Labels.managedBy]: ManagedByValue,
        [Labels.oadp]: 'True',
        [b ? Labels.nabUuid : Labels.narUuid]: objectName,
      },
      annotations: {
        [b ? Annotations.nabName : Annotations.narName]: name,
        [b ? Annotations.nabNamespace : Annotations.narNamespace]: namespace,
      },
    },
    spec: b ? { includedNamespaces: [namespace] } : { backupName: 'x' },
  } as KubeObject);
  return objectName;
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
  for (const r of backupUserClusterRoles()) await cluster.admin.apply(Resources.clusterRoles, r, apply);
  veleroNs = await cluster.namespace('velero');
  await setVeleroNamespace(veleroNs);
  cluster.defer(() => cluster.admin.delete(NonAdminBackupConfigCrd.type, 'cluster'));
  aliceNs = await cluster.namespace('alice');
  bobNs = await cluster.namespace('bob');
  alice = await cluster.user(cluster.unique('alice'));
  bob = await cluster.user(cluster.unique('bob'));
  aliceAdmin = cluster.unique('grant-admin');
  await cluster.admin.create(Resources.roleBindings, {
    metadata: { name: aliceAdmin, namespace: aliceNs },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: alice.userName }],
  } as KubeObject);
  await cluster.grant({ kind: 'User', name: bob.userName }, { clusterRole: 'admin' }, bobNs);
  await runCapability(cluster, transparency, { namespaces: { [veleroNamespaceValue]: veleroNs } });
});

afterAll(async () => {
  await cluster.cleanup();
});

describe('Velero objects a tenant may read', () => {
  let aliceBackup: string;
  let bobBackup: string;

  it("lets a namespace's admin get its own Backups and Restores, and nothing else there", async () => {
    aliceBackup = await veleroObject('backup', aliceNs, 'nightly');
    const aliceRestore = await veleroObject('restore', aliceNs, 'first');
    bobBackup = await veleroObject('backup', bobNs, 'nightly');

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
    // Forged claims on what the tenant can write: a NAB carrying bob's NACUUID and origin.
    await eventually(async () => {
      await alice.create(NonAdminBackupCrd.type, {
        metadata: {
          name: 'forged',
          namespace: aliceNs,
          labels: { [Labels.nabUuid]: bobBackup, [Labels.managedBy]: ManagedByValue, [Labels.oadp]: 'True' },
          annotations: { [Annotations.nabNamespace]: bobNs, [Annotations.nabName]: 'nightly' },
        },
        spec: { backupSpec: {} },
      } as KubeObject);
      return true;
    });
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
    const second = await veleroObject('backup', aliceNs, 'second');
    await expectGet(alice, second, 200);
    expect(namesIn(await role(aliceNs), 'backups')).toEqual([aliceBackup, second].sort());
    expect(await status(getBackup(alice, bobBackup))).toBe(403);
    await cluster.admin.delete(VeleroResources.backups, second, veleroNs);
  });

  it("removes a deleted backup's name, and the Role and binding once nothing is left", async () => {
    await cluster.admin.delete(VeleroResources.backups, aliceBackup, veleroNs);
    await eventually(async () => !namesIn(await role(aliceNs), 'backups').includes(aliceBackup), {
      what: 'deleted backup out of the Role',
    });
    expect(namesIn(await role(aliceNs), 'restores')).toHaveLength(1);
    await expectGet(alice, aliceBackup, 403);
    await cluster.admin.delete(
      VeleroResources.restores,
      namesIn(await role(aliceNs), 'restores')[0]!,
      veleroNs,
    );
    await eventually(async () => (await role(aliceNs)) === undefined, { what: 'Role removed' });
    await eventually(
      async () =>
        (await cluster.admin.get(Resources.roleBindings, viewObjectName(aliceNs), veleroNs)) === undefined,
      { what: 'RoleBinding removed' },
    );
  });

  it('follows the namespace admins: losing admin there loses the Velero view within seconds', async () => {
    aliceBackup = await veleroObject('backup', aliceNs, 'third');
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
    const name = await veleroObject('backup', longNs, 'b'.repeat(200));
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
    await cluster.admin.delete(VeleroResources.backups, name, veleroNs);
    await eventually(async () => (await role(longNs)) === undefined, { what: 'Role removed' });
  });

  it("lets a tenant read its schedule runs, and its own location's backups only, whatever they claim", async () => {
    // A schedule run: Velero gives it the Schedule's labels and annotations (a NonAdminSchedule's origin).
    const run = `${nacObjectName(aliceNs, 'daily').slice(0, 40)}-20260101030000`;
    await cluster.admin.create(VeleroResources.backups, {
      metadata: {
        name: run,
        namespace: veleroNs,
        labels: { [Labels.managedBy]: ManagedByValue, [Labels.oadp]: 'True', [Labels.nasUuid]: 'x' },
        annotations: { [Annotations.nasName]: 'daily', [Annotations.nasNamespace]: aliceNs },
      },
      spec: { includedNamespaces: [aliceNs] },
    } as KubeObject);
    await expectGet(alice, run, 200);

    // Bob's own storage location (as tenantkit makes one for a NonAdminBackupStorageLocation): bob writes
    // that bucket, so a Backup synced from it may claim any origin, or carry no tenantkit label at all.
    const location = cluster.unique('bob-location');
    await cluster.admin.create(VeleroResources.backupStorageLocations, {
      metadata: {
        name: location,
        namespace: veleroNs,
        labels: { [Labels.nabslUuid]: location },
        annotations: { [Annotations.nabslNamespace]: bobNs, [Annotations.nabslName]: 'mine' },
      },
      spec: { provider: 'aws', default: false, objectStorage: { bucket: 'bob' } },
    } as KubeObject);
    const claimed = cluster.unique('claims-alice');
    const bare = cluster.unique('bare');
    for (const [name, claims] of [
      [claimed, true],
      [bare, false],
    ] as const) {
      await cluster.admin.create(VeleroResources.backups, {
        metadata: {
          name,
          namespace: veleroNs,
          ...(claims
            ? {
                labels: { [Labels.managedBy]: ManagedByValue, [Labels.oadp]: 'True', [Labels.nabUuid]: name },
                annotations: { [Annotations.nabNamespace]: aliceNs, [Annotations.nabName]: 'nightly' },
              }
            : {}),
        },
        spec: { storageLocation: location, includedNamespaces: [claims ? aliceNs : bobNs] },
      } as KubeObject);
    }
    await expectGet(bob, claimed, 200);
    await expectGet(bob, bare, 200);
    expect(await status(getBackup(alice, claimed))).toBe(403);
    expect(namesIn(await role(aliceNs), 'backups')).toContain(run);
    expect(namesIn(await role(aliceNs), 'backups')).not.toContain(claimed);
    for (const name of [run, claimed, bare])
      await cluster.admin.delete(VeleroResources.backups, name, veleroNs);
    await cluster.admin.delete(VeleroResources.backupStorageLocations, location, veleroNs);
  });

  it("moves with Velero's namespace and cleans up the old one", async () => {
    const next = await cluster.namespace('velero2');
    // What the admin does with the chart: the controllers' Role in the new namespace (the old one stays
    // until the move is done, so the old Roles can be removed).
    await grantControllerNamespace(cluster, transparency, veleroNamespaceValue, next);
    const moved = await veleroObject('backup', bobNs, 'moved', next);
    await setVeleroNamespace(next);
    await expectGet(bob, moved, 200, next);
    await eventually(async () => (await role(bobNs)) === undefined && (await role(aliceNs)) === undefined, {
      what: 'old Roles removed',
    });
    expect(await status(getBackup(bob, bobBackup))).toBe(403);
    expect(namesIn(await role(bobNs, next), 'backups')).toEqual([moved]);
  });
});
