// Proves the test Velero is the real thing: a resource-only backup of a namespace lands in the bucket,
// and a restore brings deleted objects back with their data. Its object store answers only requests
// signed with its credentials (AWS Signature V4), so that nobody else who reaches its port (a tenant's
// Pod) reads every tenant's backups.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Fetch } from '../../devenv/velero/s3-sign.ts';
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

  it('refuses unsigned requests and requests signed with a wrong key, with an S3 error', async () => {
    const bucket = `/${velero.bucket}`;
    const listing = `${velero.s3Url}${bucket}?list-type=2`;
    // Anonymous, as a tenant's Pod that reaches the store's port would ask.
    const anonymous = await fetch(listing);
    expect(anonymous.status).toBe(403);
    const anonymousBody = await anonymous.text();
    expect(anonymousBody).toContain('<Code>AccessDenied</Code>');
    expect(anonymousBody).toContain('sign the request with AWS Signature Version 4');
    expect(anonymousBody).not.toContain('<Contents>');
    const put = await fetch(`${velero.s3Url}${bucket}/backups/planted/velero-backup.json`, {
      method: 'PUT',
      body: '{}',
    });
    expect(put.status).toBe(403);

    // Velero's key id with another secret.
    const wrongSecret = { ...velero.credentials, secretAccessKey: `${velero.credentials.secretAccessKey}x` };
    const forged = await s3Fetch(wrongSecret, {
      method: 'GET',
      endpoint: velero.s3Url,
      path: bucket,
      query: { 'list-type': '2' },
    });
    expect(forged.status).toBe(403);
    expect(await forged.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
    // A key id the store was never given.
    const unknown = await s3Fetch(
      { accessKeyId: 'tenant', secretAccessKey: 'guess' },
      { method: 'GET', endpoint: velero.s3Url, path: bucket, query: { 'list-type': '2' } },
    );
    expect(unknown.status).toBe(403);
    expect(await unknown.text()).toContain('<Code>InvalidAccessKeyId</Code>');

    // Signed with the store's credentials: answered, and nothing planted above.
    const signed = await velero.s3Fetch({ method: 'GET', path: bucket, query: { 'list-type': '2' } });
    expect(signed.status, await signed.clone().text()).toBe(200);
    expect(await signed.text()).toContain('<ListBucketResult');
    expect(await velero.listObjects('backups/planted/')).toEqual([]);
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
