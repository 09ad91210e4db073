// Velero v1.18.3's tracker race, made certain: its backup controller records a Backup it handed to
// finalizing only after patching it, and when the finalizer controller completes the Backup in between,
// the late record stays and Velero refuses every deletion of that finished Backup as "still in progress"
// until it restarts. On a busy machine that hits a few deletions in a hundred; here Velero is built with a
// test failpoint (devenv/go/velero/_overlay/) that waits 3 s before the record, so the finalizer always
// wins. The tenant deletes her finished backup with its data: tenantkit hands the Backup back to Velero's
// finalizer, which clears the record, and the deletion goes through, with no restart of Velero. The same
// for garbage collection's deletion of the data of a namespace that is gone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NonAdminBackupCrd } from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { type BackupEnvironment, completedBackup, startBackupEnvironment } from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
const nabType = NonAdminBackupCrd.type;
let env: BackupEnvironment;

type Event = KubeObject & { reason?: string; note?: string; regarding?: { name?: string } };

beforeAll(async () => {
  env = await startBackupEnvironment(cluster, {
    velero: { failpoints: { postProcessingDelay: '3s' } },
    // Garbage collection every 2 s, for the backup of a namespace that is gone.
    policy: { garbageCollectionPeriod: '2s', backupSyncPeriod: '1s' },
  });
}, veleroStartTimeoutMs);

afterAll(() => env?.stop());

describe('a finished backup Velero still counts as running', { timeout: 240_000 }, () => {
  it('is deleted with its data when the tenant asks, without a restart of Velero: tenantkit hands it back to Velero’s finalizer', async () => {
    const { namespace, tenant } = await env.tenantNamespace('held');
    await tenant.create(Resources.configMaps, { metadata: { name: 'kept', namespace }, data: { a: '1' } });
    await tenant.create(nabType, {
      metadata: { name: 'held', namespace },
      spec: { backupSpec: {} },
    } as KubeObject);
    const done = await completedBackup(cluster, namespace, 'held');
    const name = done.status!.veleroBackup!.name!;
    expect((await env.velero.listObjects(`backups/${name}/`)).length).toBeGreaterThan(0);
    // The failpoint records the finished Backup as running 3 s after its finalizing began.
    await new Promise((resolve) => setTimeout(resolve, 4_000));

    const asked = Date.now();
    await tenant.patch(nabType, 'held', namespace, { spec: { deleteBackup: true } });
    await eventually(async () => !(await tenant.get(nabType, 'held', namespace)), {
      what: 'the NonAdminBackup gone with its data',
      timeoutMs: 120_000,
    });
    console.log(
      `[figures] a backup Velero held as running deleted ${Date.now() - asked} ms after the tenant asked`,
    );
    expect(await env.velero.listObjects(`backups/${name}/`)).toEqual([]);
    expect(await cluster.admin.get(VeleroResources.backups, name, env.velero.namespace)).toBeUndefined();

    // She was told what happened, in her own namespace: Velero's refusal and what tenantkit did about it.
    const events = (await tenant.list<Event>(Resources.events, { namespace })).items.filter(
      (e) => e.regarding?.name === 'held' && e.reason === 'BackupHandedBackToVelero',
    );
    expect(events).toHaveLength(1);
    expect(events[0]!.note).toMatch(/backup is still in progress/);
    expect(events[0]!.note).toMatch(/still counts it as running/);
    expect(events[0]!.note).toMatch(/handed it back to Velero's finalizer/);
    expect(events[0]!.note).not.toMatch(/restart/);
  });

  it('is deleted with its data by garbage collection once its namespace is gone, without a restart of Velero', async () => {
    const { namespace, tenant } = await env.tenantNamespace('held-gone');
    await tenant.create(Resources.configMaps, { metadata: { name: 'kept', namespace }, data: { a: '1' } });
    await tenant.create(nabType, {
      metadata: { name: 'nightly', namespace },
      spec: { backupSpec: {} },
    } as KubeObject);
    const done = await completedBackup(cluster, namespace, 'nightly');
    const name = done.status!.veleroBackup!.name!;
    expect((await env.velero.listObjects(`backups/${name}/`)).length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 4_000));

    // The namespace goes with its NonAdminBackup (the data stays); Velero's bucket sync brings the Backup
    // back, and garbage collection asks Velero to delete it with its data, which Velero refuses at first.
    const gone = Date.now();
    await cluster.admin.delete(Resources.namespaces, namespace);
    // (The Backup object goes with the NonAdminBackup at once; its data only when Velero deletes it.)
    await eventually(async () => (await env.velero.listObjects(`backups/${name}/`)).length === 0, {
      what: `the data of backup ${name} deleted`,
      timeoutMs: 150_000,
    });
    console.log(
      `[figures] a backup Velero held as running, of a namespace that is gone, deleted by garbage collection ${Date.now() - gone} ms after the namespace deletion`,
    );
    await eventually(
      async () => !(await cluster.admin.get(VeleroResources.backups, name, env.velero.namespace)),
      { what: `Velero Backup ${name} gone`, timeoutMs: 30_000 },
    );
    const handed = (
      await cluster.admin.list<Event>(Resources.events, { namespace: env.velero.namespace })
    ).items.filter((e) => e.regarding?.name === name && e.reason === 'BackupHandedBackToVelero');
    const told = (
      await cluster.admin.list<Event & { eventTime?: string; deprecatedFirstTimestamp?: string }>(
        Resources.events,
        { namespace: env.velero.namespace },
      )
    ).items.filter((e) => e.regarding?.name === name);
    console.log(
      told
        .map(
          (e) =>
            `${Date.parse(e.eventTime ?? e.deprecatedFirstTimestamp ?? '') - gone} ${e.reason}: ${e.note}`,
        )
        .join('\n'),
    );
    expect(handed.length).toBeGreaterThanOrEqual(1);
    expect(handed[0]!.note).toMatch(/backup is still in progress/);
  });
});
