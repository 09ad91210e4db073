// Proves the test Velero is the real thing: a resource-only backup of a namespace lands in the bucket,
// and a restore brings deleted objects back with their data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createShopApp, deleteShopApp, expectShopApp } from '../fixtures/shop-app.ts';
import { TestCluster } from '../harness/cluster.ts';
import { startTestVelero, type TestVelero, veleroStartTimeoutMs } from '../harness/velero.ts';

describe('Velero', () => {
  let cluster: TestCluster;
  let velero: TestVelero;

  beforeAll(async () => {
    cluster = await TestCluster.connect();
    velero = await startTestVelero(cluster);
  }, veleroStartTimeoutMs);

  afterAll(async () => {
    await cluster?.cleanup();
    await velero?.stop();
  });

  it('backs up a namespace to the bucket and restores its deleted objects', async () => {
    const admin = cluster.admin;
    const ns = await cluster.namespace('app');
    await createShopApp(admin, ns);

    const name = cluster.unique('backup');
    const started = Date.now();
    const backup = await velero.backup(name, {
      includedNamespaces: [ns],
      snapshotVolumes: false,
      defaultVolumesToFsBackup: false,
      storageLocation: velero.storageLocation,
    });
    expect(backup.status?.phase, JSON.stringify(backup.status)).toBe('Completed');
    expect(backup.status?.errors ?? 0).toBe(0);
    const backupMs = Date.now() - started;

    const keys = (await velero.listObjects(`backups/${name}/`)).map((o) => o.key);
    expect(keys).toEqual(
      expect.arrayContaining([
        `backups/${name}/${name}.tar.gz`,
        `backups/${name}/${name}-logs.gz`,
        `backups/${name}/velero-backup.json`,
      ]),
    );

    await deleteShopApp(admin, ns);

    const restoreStarted = Date.now();
    const restore = await velero.restore(cluster.unique('restore'), {
      backupName: name,
      includedNamespaces: [ns],
    });
    expect(restore.status?.phase, JSON.stringify(restore.status)).toBe('Completed');
    expect(restore.status?.errors ?? 0).toBe(0);
    const restoreMs = Date.now() - restoreStarted;

    const settings = await expectShopApp(admin, ns);
    // Restored objects carry Velero's labels naming their backup and restore.
    expect(settings?.metadata.labels?.['velero.io/backup-name']).toBe(name);
    console.log(`[velero] backup completed in ${backupMs} ms, restore in ${restoreMs} ms`);
  });
});
