// A NonAdminRestore writes only what its requester could have written with their own credentials: the
// real Velero (which restores with admin rights) runs tenantkit's restore guard plugin, which repeats
// every write as a server-side dry run impersonating the requester. Tested as tenants through the real
// API server: revoked RBAC does not come back, an admin's quota is not overwritten under
// existingResourcePolicy: update, and over a catalog of object kinds the set a restore writes equals,
// object by object, the set the same user's own `kubectl create --dry-run=server` accepts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backup } from '../../src/backup/index.ts';
import { Labels, RequesterAnnotation } from '../../src/backup/model.ts';
import { NonAdminBackupCrd, type NonAdminRestore, NonAdminRestoreCrd } from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import { isAlreadyExists, type KubeClient, PatchType } from '../../src/kube/client.ts';
import {
  type KubeObject,
  Resources,
  type ResourceType,
  resourcePath,
  resourceType,
} from '../../src/kube/resources.ts';
import {
  type BackupEnvironment,
  completedBackup,
  ownLocation,
  settledRestore,
  startBackupEnvironment,
  veleroNamespaceValue,
  veleroQueueMs,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { grantControllerNamespace } from '../harness/components.ts';
import { startTestVelero, veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
let env: BackupEnvironment;
const narType = NonAdminRestoreCrd.type;
const nabType = NonAdminBackupCrd.type;

const types = {
  ...Resources,
  services: resourceType('', 'v1', 'services', 'Service'),
  pvcs: resourceType('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim'),
  deployments: resourceType('apps', 'v1', 'deployments', 'Deployment'),
  cronJobs: resourceType('batch', 'v1', 'cronjobs', 'CronJob'),
  networkPolicies: resourceType('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy'),
  pdbs: resourceType('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget'),
  vaps: resourceType(
    'admissionregistration.k8s.io',
    'v1',
    'validatingadmissionpolicies',
    'ValidatingAdmissionPolicy',
    false,
  ),
  vapBindings: resourceType(
    'admissionregistration.k8s.io',
    'v1',
    'validatingadmissionpolicybindings',
    'ValidatingAdmissionPolicyBinding',
    false,
  ),
};

beforeAll(async () => {
  env = await startBackupEnvironment(cluster);
}, veleroStartTimeoutMs);
afterAll(() => env?.stop());

/** A tenant's NAB of its whole namespace, completed. */
async function backupOf(ns: string, client: KubeClient): Promise<string> {
  const name = cluster.unique('nab');
  await client.create(nabType, { metadata: { name, namespace: ns }, spec: { backupSpec: {} } } as KubeObject);
  await completedBackup(cluster, ns, name);
  return name;
}

/** A NonAdminRestore by `client` from NAB `backupName`, once Velero finished it. */
async function restoreAs(
  client: KubeClient,
  ns: string,
  backupName: string,
  restoreSpec: Record<string, unknown> = {},
): Promise<NonAdminRestore> {
  const name = cluster.unique('nar');
  await client.create(narType, {
    metadata: { name, namespace: ns },
    spec: { restoreSpec: { backupName, ...restoreSpec } },
  } as KubeObject);
  const nar = await settledRestore(cluster, ns, name);
  expect(nar.status?.phase, JSON.stringify(nar.status?.conditions)).toBe('Created');
  // The refusals are reported once the restore finished.
  return eventually(
    async () => {
      const o = await cluster.admin.get<NonAdminRestore>(narType, name, ns);
      return o?.status?.refusedItems ? o : undefined;
    },
    { what: `NonAdminRestore ${ns}/${name} reports refusals` },
  );
}

/** NonAdminRestore `name`, once Velero finished it and its refusals are reported. */
async function finishedWithRefusals(ns: string, name: string): Promise<NonAdminRestore> {
  return eventually(
    async () => {
      const o = await cluster.admin.get<NonAdminRestore>(narType, name, ns);
      return o?.status?.refusedItems ? o : undefined;
    },
    { what: `NonAdminRestore ${ns}/${name} reports refusals`, timeoutMs: veleroQueueMs },
  );
}

const refused = (nar: NonAdminRestore) =>
  new Map((nar.status?.refusedItems?.items ?? []).map((i) => [`${i.kind}/${i.name}`, i]));
const condition = (nar: NonAdminRestore, type: string) =>
  nar.status?.conditions?.find((c) => c.type === type);

/** A NonAdminRestore by `client` from NAB `backupName` that the controller holds back with `reason`. */
async function heldRestore(
  client: KubeClient,
  ns: string,
  backupName: string,
  reason: string,
): Promise<NonAdminRestore> {
  const name = cluster.unique('nar');
  await client.create(narType, {
    metadata: { name, namespace: ns },
    spec: { restoreSpec: { backupName } },
  } as KubeObject);
  return eventually(
    async () => {
      const o = await cluster.admin.get<NonAdminRestore>(narType, name, ns);
      return o && condition(o, 'Accepted')?.reason === reason ? o : undefined;
    },
    { what: `NonAdminRestore ${ns}/${name} held back (${reason})`, timeoutMs: 60_000 },
  );
}

/** A new user who may run restores in `ns` and nothing else: every object restored there is beyond them. */
async function restoresOnly(ns: string) {
  const restorer = await cluster.user(cluster.unique('restorer'));
  await cluster.grant(
    { kind: 'User', name: restorer.userName },
    {
      rules: [
        {
          apiGroups: [narType.group],
          resources: ['nonadminrestores', 'nonadminbackups'],
          verbs: ['get', 'list', 'create'],
        },
      ],
    },
    ns,
  );
  return restorer;
}

/** Whether `client` may create `object` right now, by the API server's own answer to a dry run. */
async function mayCreate(client: KubeClient, type: ResourceType, object: KubeObject): Promise<boolean> {
  try {
    await client.request('POST', resourcePath(type, object.metadata.namespace), {
      body: {
        apiVersion: type.group ? `${type.group}/${type.version}` : type.version,
        kind: type.kind,
        ...object,
      },
      query: { dryRun: 'All' },
    });
    return true;
  } catch (err) {
    return isAlreadyExists(err);
  }
}

describe('NonAdminRestore as its requester', { timeout: 3 * veleroQueueMs }, () => {
  it('records who created it and never lets anyone change that record', async () => {
    const { namespace: ns, tenant } = await env.tenantNamespace('guard-annotation');
    const name = cluster.unique('nar');
    const created = await tenant.create(narType, {
      metadata: {
        name,
        namespace: ns,
        annotations: {
          [RequesterAnnotation]: JSON.stringify({ username: 'system:admin', groups: ['system:masters'] }),
        },
      },
      spec: { restoreSpec: { backupName: 'none-yet' } },
    } as KubeObject);
    const recorded = JSON.parse(created.metadata.annotations?.[RequesterAnnotation] ?? '{}');
    expect(recorded.username).toBe(tenant.userName);
    expect(recorded.groups).toContain('system:authenticated');
    expect(recorded.groups).not.toContain('system:masters');
    const before = created.metadata.annotations?.[RequesterAnnotation];
    // Neither changing nor removing it changes anything.
    for (const value of [JSON.stringify({ username: 'system:admin' }), null]) {
      const after = await tenant.patch<NonAdminRestore>(
        narType,
        name,
        ns,
        { metadata: { annotations: { [RequesterAnnotation]: value } } },
        PatchType.merge,
      );
      expect(after.metadata.annotations?.[RequesterAnnotation]).toBe(before);
    }
    // The NonAdminBackup it names does not exist: a Warning Event says so, even for a name of 253 characters.
    const long = `${'a'.repeat(240)}${cluster.unique('n')}`.slice(-253);
    await tenant.create(narType, {
      metadata: { name: long, namespace: ns },
      spec: { restoreSpec: { backupName: 'none-yet' } },
    } as KubeObject);
    await eventually(
      async () =>
        (
          await cluster.admin.list<KubeObject & { regarding?: { name?: string } }>(Resources.events, {
            namespace: ns,
          })
        ).items.some((e) => e.regarding?.name === long),
      { what: 'an Event about the NonAdminRestore with a 253-character name' },
    );
  });

  it('makes no Velero Restore for a tenant while Velero does not run the restore guard', async () => {
    const bare = await startTestVelero(cluster, { restoreGuard: false });
    const { namespace: ns, tenant } = await env.tenantNamespace('guard-missing');
    try {
      await grantControllerNamespace(cluster, backup, veleroNamespaceValue, bare.namespace);
      await env.setPolicy({ veleroNamespace: bare.namespace });
      await tenant.create(Resources.configMaps, {
        metadata: { name: 'settings', namespace: ns },
        data: { a: '1' },
      });
      const backupName = await backupOf(ns, tenant);
      const nar = await heldRestore(tenant, ns, backupName, 'RestoreGuardMissing');
      expect(nar.status?.phase).toBe('BackingOff');
      expect(condition(nar, 'Accepted')?.message).toContain("does not run tenantkit's restore guard plugin");
      const restores = await cluster.admin.list(VeleroResources.restores, { namespace: bare.namespace });
      expect(restores.items).toEqual([]);
    } finally {
      // Gone while the policy still points at this Velero, then the file's Velero again.
      for (const type of [narType, nabType]) {
        await cluster.admin.request('DELETE', resourcePath(type, ns)).catch(() => {});
      }
      await eventually(
        async () =>
          (await cluster.admin.list(narType, { namespace: ns })).items.length +
            (await cluster.admin.list(nabType, { namespace: ns })).items.length ===
          0,
        { what: 'tenant objects gone' },
      ).catch(() => {});
      await env.setPolicy();
      await bare.stop();
    }
  });

  it("restores nothing from a tenant's own bucket while Velero's repository password is its built-in one", async () => {
    // With the password every Velero has, whoever owns a bucket can forge the volume data a restore
    // from it writes (as root, on the node): such restores wait; the admin's own locations do not.
    const { namespace: ns, tenant } = await env.tenantNamespace('repo-password');
    // This file's policy needs no approval for a tenant's own location.
    await ownLocation(env, tenant, ns, 'repo-password-tenant');
    const fromOwn = cluster.unique('nab');
    await tenant.create(nabType, {
      metadata: { name: fromOwn, namespace: ns },
      spec: { backupSpec: { storageLocation: 'own' } },
    } as KubeObject);
    await completedBackup(cluster, ns, fromOwn);
    const fromAdmins = await backupOf(ns, tenant);

    const secret = { name: 'velero-repo-credentials', namespace: env.velero.namespace };
    const original = await cluster.admin.get<KubeObject & { data?: Record<string, string> }>(
      Resources.secrets,
      secret.name,
      secret.namespace,
    );
    const setPassword = (password: string | undefined) =>
      cluster.admin.patch(Resources.secrets, secret.name, secret.namespace, {
        data: { 'repository-password': password },
      });
    await setPassword(Buffer.from('static-passw0rd').toString('base64'));
    try {
      const nar = await heldRestore(tenant, ns, fromOwn, 'RepositoryPasswordBuiltIn');
      const waiting = nar.metadata.name!;
      expect(nar.status?.phase).toBe('BackingOff');
      expect(condition(nar, 'Accepted')?.message).toContain('uses the password built into Velero');
      expect(condition(nar, 'Accepted')?.message).toContain('a cluster admin sets a password of their own');
      const warned = await tenant.list<KubeObject & { reason?: string; regarding?: { name?: string } }>(
        Resources.events,
        { namespace: ns },
      );
      expect(
        warned.items.some((e) => e.reason === 'RepositoryPasswordBuiltIn' && e.regarding?.name === waiting),
      ).toBe(true);
      // A restore from the admin's location goes ahead meanwhile: tenants cannot write that bucket.
      const plain = await restoreAs(tenant, ns, fromAdmins);
      expect(plain.status?.veleroRestore?.status?.phase).toBe('Completed');
      const restoresFor = async (name: string) =>
        (
          await cluster.admin.list(VeleroResources.restores, {
            namespace: env.velero.namespace,
            labelSelector: `${Labels.narUuid}=${(await cluster.admin.get<NonAdminRestore>(narType, name, ns))?.status?.veleroRestore?.nacuuid}`,
          })
        ).items;
      expect(await restoresFor(waiting)).toEqual([]);

      // The admin sets a password of their own: the waiting restore goes ahead by itself.
      await setPassword(original?.data?.['repository-password']);
      // (settledRestore would take the BackingOff it is in now for an answer.)
      await eventually(
        async () =>
          (await cluster.admin.get<NonAdminRestore>(narType, waiting, ns))?.status?.veleroRestore?.status
            ?.phase === 'Completed',
        {
          what: `NonAdminRestore ${ns}/${waiting} completed once the password is set`,
          timeoutMs: veleroQueueMs,
        },
      );
    } finally {
      await setPassword(original?.data?.['repository-password']);
    }
  });

  it('does not bring back RBAC the admin revoked (a demoted admin restores an old backup)', async () => {
    const ns = await env.namespace('guard-revoked');
    const carol = await cluster.user(cluster.unique('carol'));
    const binding = (name: string, role: string) => ({
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: carol.userName }],
    });
    await cluster.admin.create(Resources.roleBindings, binding('carol-admin', 'admin') as KubeObject);
    const backupName = await backupOf(ns, carol);
    // Demoted: edit may still create NonAdminRestores, not RoleBindings.
    await cluster.admin.delete(Resources.roleBindings, 'carol-admin', ns);
    await cluster.admin.create(Resources.roleBindings, binding('carol-edit', 'edit') as KubeObject);
    await eventually(
      async () => !(await mayCreate(carol, Resources.roleBindings, binding('probe', 'view') as KubeObject)),
      {
        what: 'carol lost the right to create RoleBindings',
      },
    );

    const nar = await restoreAs(carol, ns, backupName);
    expect(await cluster.admin.get(Resources.roleBindings, 'carol-admin', ns)).toBeUndefined();
    const item = refused(nar).get('RoleBinding/carol-admin');
    expect(item, JSON.stringify(nar.status?.refusedItems)).toMatchObject({
      verb: 'create',
      reason: 'Forbidden',
    });
    expect(item?.message).toContain(carol.userName);
    expect(condition(nar, 'ItemsRefused')).toMatchObject({ status: 'True' });
    expect(await mayCreate(carol, Resources.roleBindings, binding('probe', 'view') as KubeObject)).toBe(
      false,
    );
  });

  it('never restores a Pod with a Velero hook annotation into a namespace that may no longer have them', async () => {
    const { namespace: ns, tenant } = await env.tenantNamespace('guard-hooks');
    const hooked = (name: string) =>
      ({
        metadata: {
          name,
          namespace: ns,
          // A restore hook: Velero would run it in the restored Pod, holding every tenant's restores.
          annotations: { 'post.hook.restore.velero.io/command': '["/bin/sleep", "86400"]' },
        },
        spec: { containers: [{ name: 'main', image: 'registry.example/db:1' }] },
      }) as KubeObject;
    const hookedPodAdmitted = () => mayCreate(tenant, Resources.pods, hooked(cluster.unique('probe')));
    // Allowed when the backup was taken...
    await env.setPolicy({ podHookNamespaces: [ns] });
    await eventually(hookedPodAdmitted, { what: 'a Pod with a hook admitted in the listed namespace' });
    await tenant.create(Resources.pods, hooked('db'));
    const backupName = await backupOf(ns, tenant);
    // ...not any more when the tenant restores it.
    await env.setPolicy({});
    await eventually(async () => !(await hookedPodAdmitted()), { what: 'the namespace taken off the list' });
    await cluster.admin.delete(Resources.pods, 'db', ns);
    await eventually(async () => !(await cluster.admin.get(Resources.pods, 'db', ns)), {
      what: 'Pod db gone',
    });

    const nar = await restoreAs(tenant, ns, backupName);
    expect(await cluster.admin.get(Resources.pods, 'db', ns)).toBeUndefined();
    const item = refused(nar).get('Pod/db');
    expect(item, JSON.stringify(nar.status?.refusedItems)).toMatchObject({ verb: 'create' });
    expect(item?.message).toContain(
      'may not carry Velero hook annotations (post.hook.restore.velero.io/command)',
    );
    expect(condition(nar, 'ItemsRefused')).toMatchObject({ status: 'True' });
  });

  it('runs a retargeted restore with the rights of whoever retargeted it (an editor retargets an admin’s waiting restore)', async () => {
    const ns = await env.namespace('guard-retarget');
    const alice = await cluster.user(cluster.unique('alice'));
    const dave = await cluster.user(cluster.unique('dave'));
    const binding = (name: string, user: string, role: string) => ({
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
    await cluster.admin.create(
      Resources.roleBindings,
      binding('alice-admin', alice.userName, 'admin') as KubeObject,
    );
    await cluster.admin.create(
      Resources.roleBindings,
      binding('dave-admin', dave.userName, 'admin') as KubeObject,
    );
    await cluster.admin.create(Resources.configMaps, {
      metadata: { name: 'settings', namespace: ns },
      data: {},
    });
    const backupName = await backupOf(ns, alice);
    // dave is demoted to edit; the ConfigMap is lost.
    await cluster.admin.delete(Resources.roleBindings, 'dave-admin', ns);
    await cluster.admin.create(
      Resources.roleBindings,
      binding('dave-edit', dave.userName, 'edit') as KubeObject,
    );
    await cluster.admin.delete(Resources.configMaps, 'settings', ns);
    await eventually(
      async () =>
        !(await mayCreate(
          dave,
          Resources.roleBindings,
          binding('probe', dave.userName, 'view') as KubeObject,
        )),
      { what: 'dave lost the right to create RoleBindings' },
    );

    // alice's restore waits for a backup that does not exist yet; dave points it at the old one.
    const waiting = async (name: string) =>
      (await alice.create(narType, {
        metadata: { name, namespace: ns },
        spec: { restoreSpec: { backupName: 'not-yet' } },
      } as KubeObject)) as NonAdminRestore;
    const retarget = (client: KubeClient, name: string) =>
      client.patch<NonAdminRestore>(
        narType,
        name,
        ns,
        { spec: { restoreSpec: { backupName } } },
        PatchType.merge,
      );
    const byDave = cluster.unique('nar');
    const created = await waiting(byDave);
    expect(JSON.parse(created.metadata.annotations?.[RequesterAnnotation] ?? '{}').username).toBe(
      alice.userName,
    );
    const patched = await retarget(dave, byDave);
    // The spec is now dave's decision, so the restore runs with dave's rights.
    expect(JSON.parse(patched.metadata.annotations?.[RequesterAnnotation] ?? '{}').username).toBe(
      dave.userName,
    );
    const nar = await finishedWithRefusals(ns, byDave);
    expect(await cluster.admin.get(Resources.roleBindings, 'dave-admin', ns)).toBeUndefined();
    const item = refused(nar).get('RoleBinding/dave-admin');
    expect(item, JSON.stringify(nar.status?.refusedItems)).toMatchObject({
      verb: 'create',
      reason: 'Forbidden',
    });
    expect(item?.message).toContain(dave.userName);

    // A legitimate retarget still restores: alice points her own waiting restore at the backup.
    const byAlice = cluster.unique('nar');
    await waiting(byAlice);
    await retarget(alice, byAlice);
    const own = await finishedWithRefusals(ns, byAlice);
    expect(own.status?.veleroRestore?.status?.phase).toBe('Completed');
    expect(await cluster.admin.get(Resources.configMaps, 'settings', ns)).toBeDefined();
  });

  it('runs a restore with the groups its requester has when they last set its spec, not when they created it', async () => {
    const ns = await env.namespace('guard-left-group');
    const erinName = cluster.unique('erin');
    const group = cluster.unique('r4-admins');
    const inGroup = await cluster.user(erinName, [group]);
    const rb = (name: string, kind: 'User' | 'Group', subject: string, role: string) => ({
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind, name: subject }],
    });
    await cluster.admin.create(
      Resources.roleBindings,
      rb('r4-admins', 'Group', group, 'admin') as KubeObject,
    );
    await cluster.admin.create(
      Resources.roleBindings,
      rb('erin-edit', 'User', erinName, 'edit') as KubeObject,
    );
    // An old binding of erin's own, in the backup, revoked since.
    await cluster.admin.create(
      Resources.roleBindings,
      rb('erin-admin', 'User', erinName, 'admin') as KubeObject,
    );
    const backupName = await backupOf(ns, inGroup);
    await cluster.admin.delete(Resources.roleBindings, 'erin-admin', ns);

    // In the group, erin creates a waiting restore; then she leaves the group (her credentials now carry
    // no group) and, as an editor, points it at the old backup.
    const name = cluster.unique('nar');
    await inGroup.create(narType, {
      metadata: { name, namespace: ns },
      spec: { restoreSpec: { backupName: 'not-yet' } },
    } as KubeObject);
    const left = await cluster.user(erinName, []);
    const patched = await left.patch<NonAdminRestore>(
      narType,
      name,
      ns,
      { spec: { restoreSpec: { backupName } } },
      PatchType.merge,
    );
    expect(JSON.parse(patched.metadata.annotations?.[RequesterAnnotation] ?? '{}').groups).not.toContain(
      group,
    );
    const nar = await finishedWithRefusals(ns, name);
    expect(await cluster.admin.get(Resources.roleBindings, 'erin-admin', ns)).toBeUndefined();
    expect(
      refused(nar).get('RoleBinding/erin-admin'),
      JSON.stringify(nar.status?.refusedItems),
    ).toMatchObject({
      verb: 'create',
      reason: 'Forbidden',
    });
  });

  it('writes its refusals a bounded number of times per restore, with an exact count', async () => {
    const ns = await env.namespace('guard-many');
    const many = 300;
    for (let i = 0; i < many; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, many - i) }, (_, k) =>
          cluster.admin.create(Resources.configMaps, {
            metadata: { name: `c${i + k}`, namespace: ns },
            data: {},
          }),
        ),
      );
    }
    // May run restores and nothing else: every object is refused.
    const restorer = await restoresOnly(ns);
    const backupName = await backupOf(ns, restorer);
    // Every write of a refusals ConfigMap in Velero's namespace, seen by a watch from now on.
    const writes = new Map<string, number>();
    const stop = new AbortController();
    const from = (await cluster.admin.list(Resources.configMaps, { namespace: env.velero.namespace }))
      .metadata?.resourceVersion;
    const watching = cluster.admin
      .watch(
        Resources.configMaps,
        {
          namespace: env.velero.namespace,
          labelSelector: 'backup.tenantkit.io/refusals-of',
          resourceVersion: from,
          signal: stop.signal,
        },
        (e) => {
          if (e.type === 'ADDED' || e.type === 'MODIFIED') {
            const key = e.object.metadata.name!;
            writes.set(key, (writes.get(key) ?? 0) + 1);
          }
        },
      )
      .catch(() => {});
    try {
      const nar = await restoreAs(restorer, ns, backupName);
      const velero = await cluster.admin.get<
        KubeObject & { status?: { progress?: { itemsRestored?: number } } }
      >(VeleroResources.restores, nar.status!.veleroRestore!.name!, env.velero.namespace);
      const count = writes.get(`${velero!.metadata.name}-refused`) ?? 0;
      console.log(`refusals ConfigMap writes for ${nar.status?.refusedItems?.count} refusals: ${count}`);
      // At the first refusal, at most every 5 s up to 10 writes, and once at the end.
      expect(count).toBeGreaterThan(0);
      expect(count).toBeLessThanOrEqual(11);
      // Nothing lost: every item Velero processed was refused and is counted.
      expect(nar.status?.refusedItems?.count).toBeGreaterThanOrEqual(many);
      expect(nar.status?.refusedItems?.count).toBe(velero?.status?.progress?.itemsRestored);
      expect(nar.status?.refusedItems?.items?.length).toBe(Math.min(nar.status!.refusedItems!.count!, 500));
      expect(condition(nar, 'ItemsRefused')).toMatchObject({ status: 'True', reason: 'AllItemsRefused' });
      expect(condition(nar, 'ItemsRefused')?.message).not.toContain('may be more');
    } finally {
      stop.abort();
      await watching;
    }
  });

  it('says so clearly when it restored nothing because every object was refused', async () => {
    const ns = await env.namespace('guard-nothing');
    await cluster.admin.create(Resources.configMaps, {
      metadata: { name: 'settings', namespace: ns },
      data: {},
    });
    // May run restores and nothing else: every object of the namespace is beyond this user.
    const restorer = await restoresOnly(ns);
    const backupName = await backupOf(ns, restorer);
    await cluster.admin.delete(Resources.configMaps, 'settings', ns);
    const nar = await restoreAs(restorer, ns, backupName);
    expect(await cluster.admin.get(Resources.configMaps, 'settings', ns)).toBeUndefined();
    expect(condition(nar, 'ItemsRefused')).toMatchObject({ status: 'True', reason: 'AllItemsRefused' });
    expect(condition(nar, 'ItemsRefused')?.message).toContain('nothing was restored');
    expect(refused(nar).get('ConfigMap/settings')).toMatchObject({ verb: 'create', reason: 'Forbidden' });
    await eventually(
      async () =>
        (
          await cluster.admin.list<KubeObject & { reason?: string; regarding?: { name?: string } }>(
            Resources.events,
            { namespace: ns },
          )
        ).items.some((e) => e.reason === 'AllItemsRefused' && e.regarding?.name === nar.metadata.name),
      { what: 'a Warning Event AllItemsRefused' },
    );
  });

  it('restores a claim as a new claim, never naming the volume its backup named', async () => {
    const ns = await env.namespace('guard-claim');
    const dave = await cluster.user(cluster.unique('dave'));
    await cluster.grant({ kind: 'User', name: dave.userName }, { clusterRole: 'admin' }, ns);
    // The claim names a volume (its own once, someone else's by the time of the restore: Available
    // volumes bind to a claim that names them).
    const volume = cluster.unique('someone-elses');
    await dave.create(types.pvcs, {
      metadata: { name: 'data', namespace: ns },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: cluster.unique('guard-none'),
        volumeName: volume,
        resources: { requests: { storage: '1Gi' } },
      },
    } as KubeObject);
    const backupName = await backupOf(ns, dave);
    await dave.delete(types.pvcs, 'data', ns);
    // This control plane has no node, so no PVC protection controller: the admin lifts its finalizer.
    await cluster.admin.patch(types.pvcs, 'data', ns, { metadata: { finalizers: null } }, PatchType.merge);
    await eventually(async () => !(await cluster.admin.get(types.pvcs, 'data', ns)), {
      what: 'the claim gone',
    });

    const nar = await restoreAs(dave, ns, backupName);
    expect(refused(nar).size, JSON.stringify(nar.status?.refusedItems)).toBe(0);
    type Claim = KubeObject & { spec: { volumeName?: string; storageClassName?: string } };
    const claim = await cluster.admin.get<Claim>(types.pvcs, 'data', ns);
    expect(claim, 'the restored claim').toBeDefined();
    expect(claim?.spec.volumeName).toBeUndefined();
    expect(claim?.spec.storageClassName).toMatch(/^guard-none/);
    expect(claim?.metadata.labels?.['velero.io/restore-name']).toBeDefined();
    // The guard's nonce, by which it knows Velero's claim (and its UID) from one the tenant makes.
    expect(claim?.metadata.annotations?.['tenantkit.io/restore-claim-nonce']).toMatch(/^[0-9a-f]{32}$/);
  });

  it("does not overwrite the admin's quota under existingResourcePolicy: update", async () => {
    const { namespace: ns, tenant } = await env.tenantNamespace('guard-quota');
    const quota = (pods: string) => ({
      metadata: { name: 'reserved', namespace: ns, labels: { 'tenancy.tenantkit.io/reserved': 'true' } },
      spec: { hard: { pods } },
    });
    await cluster.admin.create(Resources.resourceQuotas, quota('10') as KubeObject);
    await tenant.create(Resources.configMaps, {
      metadata: { name: 'settings', namespace: ns },
      data: { a: '1' },
    });
    const backupName = await backupOf(ns, tenant);
    await cluster.admin.patch(
      Resources.resourceQuotas,
      'reserved',
      ns,
      { spec: { hard: { pods: '5' } } },
      PatchType.merge,
    );
    await tenant.patch(Resources.configMaps, 'settings', ns, { data: { a: '2' } }, PatchType.merge);
    await expect(
      tenant.patch(
        Resources.resourceQuotas,
        'reserved',
        ns,
        { spec: { hard: { pods: '10' } } },
        PatchType.merge,
      ),
    ).rejects.toMatchObject({ status: 403 });

    const nar = await restoreAs(tenant, ns, backupName, { existingResourcePolicy: 'update' });
    const live = await cluster.admin.get<KubeObject & { spec: { hard: { pods: string } } }>(
      Resources.resourceQuotas,
      'reserved',
      ns,
    );
    expect(live?.spec.hard.pods).toBe('5');
    expect(refused(nar).get('ResourceQuota/reserved')).toMatchObject({ verb: 'patch', reason: 'Forbidden' });
    // What the tenant may update is updated.
    const settings = await cluster.admin.get<KubeObject & { data: Record<string, string> }>(
      Resources.configMaps,
      'settings',
      ns,
    );
    expect(settings?.data.a).toBe('1');
  });

  it('writes exactly what each user could create themselves, over a catalog of kinds', async () => {
    const ns = await env.namespace('guard-catalog');
    const meta = (name: string, extra: Record<string, unknown> = {}) => ({
      metadata: { name, namespace: ns, ...extra },
    });
    const rbac = 'rbac.authorization.k8s.io';
    const subject = [{ apiGroup: rbac, kind: 'User', name: 'someone' }];
    const binding = (name: string, kind: string, role: string): [ResourceType, KubeObject] => [
      types.roleBindings,
      { ...meta(name), roleRef: { apiGroup: rbac, kind, name: role }, subjects: subject } as KubeObject,
    ];
    const container = { name: 'app', image: 'registry.example/app:1' };
    const catalog: [ResourceType, KubeObject][] = [
      [types.configMaps, { ...meta('cm-plain'), data: { k: 'v' } } as KubeObject],
      [
        types.configMaps,
        { ...meta('cm-labelled', { labels: { tier: 'web' } }), data: { k: 'v' } } as KubeObject,
      ],
      [types.secrets, { ...meta('secret-opaque'), stringData: { password: 'p' } } as KubeObject],
      [
        types.secrets,
        {
          ...meta('secret-pull'),
          type: 'kubernetes.io/dockerconfigjson',
          stringData: { '.dockerconfigjson': '{"auths":{}}' },
        } as KubeObject,
      ],
      [
        types.services,
        { ...meta('svc'), spec: { ports: [{ port: 80 }], selector: { app: 'x' } } } as KubeObject,
      ],
      [types.serviceAccounts, meta('sa-app') as KubeObject],
      [
        types.pvcs,
        {
          ...meta('pvc-data'),
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        } as KubeObject,
      ],
      [types.pods, { ...meta('pod-ok'), spec: { containers: [container] } } as KubeObject],
      [
        types.pods,
        { ...meta('pod-hostnet'), spec: { hostNetwork: true, containers: [container] } } as KubeObject,
      ],
      [
        types.deployments,
        {
          ...meta('deploy'),
          spec: {
            selector: { matchLabels: { app: 'd' } },
            template: { metadata: { labels: { app: 'd' } }, spec: { containers: [container] } },
          },
        } as KubeObject,
      ],
      [
        types.cronJobs,
        {
          ...meta('cron'),
          spec: {
            schedule: '0 * * * *',
            jobTemplate: {
              spec: { template: { spec: { restartPolicy: 'Never', containers: [container] } } },
            },
          },
        } as KubeObject,
      ],
      [
        types.networkPolicies,
        { ...meta('deny-all'), spec: { podSelector: {}, policyTypes: ['Ingress'] } } as KubeObject,
      ],
      [
        types.pdbs,
        { ...meta('pdb'), spec: { minAvailable: 1, selector: { matchLabels: { app: 'd' } } } } as KubeObject,
      ],
      [
        types.resourceQuotas,
        {
          ...meta('reserved', { labels: { 'tenancy.tenantkit.io/reserved': 'true' } }),
          spec: { hard: { pods: '20' } },
        } as KubeObject,
      ],
      [
        types.limitRanges,
        {
          ...meta('limits'),
          spec: { limits: [{ type: 'Container', default: { cpu: '100m' } }] },
        } as KubeObject,
      ],
      [
        types.roles,
        {
          ...meta('role-reader'),
          rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
        } as KubeObject,
      ],
      [
        types.roles,
        { ...meta('role-wide'), rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] } as KubeObject,
      ],
      binding('rb-reader', 'Role', 'role-reader'),
      binding('rb-wide', 'Role', 'role-wide'),
      binding('rb-admin', 'ClusterRole', 'admin'),
      binding('rb-view', 'ClusterRole', 'view'),
      binding('rb-cluster-admin', 'ClusterRole', 'cluster-admin'),
    ];
    for (const [type, object] of catalog) await cluster.admin.create(type, object);

    // An admission policy this namespace has (no host network), in force once the catalog exists.
    const policyName = cluster.unique('no-hostnet');
    await cluster.admin.create(types.vaps, {
      metadata: { name: policyName },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods'] },
          ],
        },
        validations: [
          {
            expression: '!has(object.spec.hostNetwork) || !object.spec.hostNetwork',
            message: 'no host network here',
          },
        ],
      },
    } as KubeObject);
    cluster.defer(() => cluster.admin.delete(types.vaps, policyName));
    await cluster.admin.create(types.vapBindings, {
      metadata: { name: policyName },
      spec: {
        policyName,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } },
      },
    } as KubeObject);
    cluster.defer(() => cluster.admin.delete(types.vapBindings, policyName));
    const hostnet = catalog.find(([, o]) => o.metadata.name === 'pod-hostnet')!;
    await eventually(
      async () =>
        !(await mayCreate(cluster.admin, types.pods, {
          ...hostnet[1],
          metadata: { ...hostnet[1].metadata, name: 'probe' },
        })),
      { what: 'the admission policy in force' },
    );

    // Three requesters: the namespace's admin, an editor, and a narrow custom role.
    const users: [string, KubeClient][] = [];
    for (const [label, role] of [
      ['admin', 'admin'],
      ['edit', 'edit'],
    ] as const) {
      const user = await cluster.user(cluster.unique(label));
      await cluster.grant({ kind: 'User', name: user.userName }, { clusterRole: role }, ns);
      users.push([label, user]);
    }
    const narrow = await cluster.user(cluster.unique('narrow'));
    await cluster.grant(
      { kind: 'User', name: narrow.userName },
      {
        rules: [
          {
            apiGroups: [''],
            resources: ['configmaps', 'secrets'],
            verbs: ['get', 'list', 'create', 'update', 'patch'],
          },
          {
            apiGroups: [narType.group],
            resources: ['nonadminrestores', 'nonadminbackups'],
            verbs: ['get', 'list', 'create'],
          },
        ],
      },
      ns,
    );
    users.push(['narrow', narrow]);
    const backupName = await backupOf(ns, users[0]![1]);

    // Roles stay (a binding's escalation check reads its Role); everything else is deleted before each restore.
    const kept = new Set([types.roles.plural]);
    const report: string[] = [];
    const seen = new Map<string, Map<string, boolean>>();
    for (const [label, user] of users) {
      // A PVC keeps its protection finalizer (no controller here lifts it): the test lifts it itself.
      const gone = async () => {
        let all = true;
        for (const [type, object] of catalog) {
          if (kept.has(type.plural)) continue;
          const name = object.metadata.name!;
          if (type === types.pvcs) {
            await cluster.admin
              .patch(type, name, ns, { metadata: { finalizers: null } }, PatchType.merge)
              .catch(() => {});
          }
          await cluster.admin.delete(type, name, ns).catch(() => {});
          if (await cluster.admin.get(type, name, ns)) all = false;
        }
        return all;
      };
      await eventually(gone, { what: 'catalog deleted', timeoutMs: 60_000 });
      const expected = new Map<string, boolean>();
      for (const [type, object] of catalog)
        expected.set(`${type.kind}/${object.metadata.name}`, await mayCreate(user, type, object));

      const nar = await restoreAs(user, ns, backupName);
      const refusedNow = refused(nar);
      for (const [type, object] of catalog) {
        const key = `${type.kind}/${object.metadata.name}`;
        const exists = (await cluster.admin.get(type, object.metadata.name!, ns)) !== undefined;
        const written = kept.has(type.plural) ? !refusedNow.has(key) : exists && !refusedNow.has(key);
        if (written !== expected.get(key)) {
          report.push(
            `${label}: ${key} own dry run ${expected.get(key) ? 'accepted' : 'refused'}, restore ${written ? 'wrote' : 'left out'} (exists ${exists}, refusal ${JSON.stringify(refusedNow.get(key))})`,
          );
        }
      }
      // Every requester was refused something here: the status says so.
      expect(condition(nar, 'ItemsRefused'), label).toMatchObject({ status: 'True' });
      seen.set(label, expected);
    }
    expect(report).toEqual([]);
    // The catalog tells the three apart (the comparison above is not trivially all-accepted or all-refused).
    const accepted = (label: string) =>
      [...seen.get(label)!]
        .filter(([, ok]) => ok)
        .map(([key]) => key)
        .sort();
    expect(accepted('admin')).toEqual(
      [
        'ConfigMap/cm-labelled',
        'ConfigMap/cm-plain',
        'CronJob/cron',
        'Deployment/deploy',
        'NetworkPolicy/deny-all',
        'PersistentVolumeClaim/pvc-data',
        'Pod/pod-ok',
        'PodDisruptionBudget/pdb',
        'Role/role-reader',
        'RoleBinding/rb-admin',
        'RoleBinding/rb-reader',
        'RoleBinding/rb-view',
        'Secret/secret-opaque',
        'Secret/secret-pull',
        'Service/svc',
        'ServiceAccount/sa-app',
      ].sort(),
    );
    expect(accepted('edit')).toEqual(
      accepted('admin').filter((k) => !k.startsWith('Role/') && !k.startsWith('RoleBinding/')),
    );
    expect(accepted('narrow')).toEqual(
      ['ConfigMap/cm-labelled', 'ConfigMap/cm-plain', 'Secret/secret-opaque', 'Secret/secret-pull'].sort(),
    );

    // existingResourcePolicy: update against changed live objects. Every object is back (the admin
    // re-creates what a round left out) and then changed by the admin (a label the backup lacks); each
    // user restores with update: the change is undone exactly where the user's own dry-run patch undoing
    // it passes. Left out: the kinds Velero cannot or does not update in place whoever asks (a Pod's or
    // Service's spec, a bound PVC; a ServiceAccount, which Velero merges and whose labels it keeps).
    const inPlace = catalog.filter(
      ([type]) => ![types.pods, types.services, types.pvcs, types.serviceAccounts].includes(type),
    );
    const undo = { metadata: { labels: { changed: null } } };
    const updateReport: string[] = [];
    const undoneBy: Record<string, number> = {};
    for (const [label, user] of users) {
      for (const [type, object] of inPlace) {
        await cluster.admin.create(type, object).catch((err) => {
          if (!isAlreadyExists(err)) throw err;
        });
        const change = { metadata: { labels: { changed: 'yes' } } };
        await cluster.admin.patch(type, object.metadata.name!, ns, change, PatchType.merge);
      }
      const expected = new Map<string, boolean>();
      for (const [type, object] of inPlace) {
        const path = resourcePath(type, ns, object.metadata.name);
        const ok = await user
          .request('PATCH', path, {
            body: undo,
            query: { dryRun: 'All' },
            contentType: 'application/merge-patch+json',
          })
          .then(
            () => true,
            () => false,
          );
        expected.set(`${type.kind}/${object.metadata.name}`, ok);
      }
      const nar = await restoreAs(user, ns, backupName, { existingResourcePolicy: 'update' });
      undoneBy[label] = [...expected.values()].filter(Boolean).length;
      for (const [type, object] of inPlace) {
        const key = `${type.kind}/${object.metadata.name}`;
        const live = await cluster.admin.get(type, object.metadata.name!, ns);
        const undone = live?.metadata.labels?.changed === undefined;
        if (undone !== expected.get(key)) {
          updateReport.push(
            `${label}: ${key} own dry-run patch ${expected.get(key) ? 'accepted' : 'refused'}, restore ${undone ? 'updated' : 'left it'} (refusal ${JSON.stringify(refused(nar).get(key))})`,
          );
        }
      }
    }
    expect(updateReport).toEqual([]);
    // Of 17 objects: the admin may not update the quota, the LimitRange, the wide Role and the bindings to
    // roles it does not hold; an editor no RBAC at all; the narrow role only ConfigMaps and Secrets.
    expect(undoneBy).toEqual({ admin: 12, edit: 8, narrow: 4 });
  });
});
