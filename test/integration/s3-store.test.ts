// The test object store (devenv/go/velero/cmd/s3server) on a disk of its own that fills up: a PUT the
// disk refuses must leave no object behind, as in S3, so that listings and deletes under its prefix keep
// working once there is space again. Before, the partial file stayed without its metadata and every
// listing that reached it answered 500, so Velero could never delete that backup (bench:faults' object
// store disk-full fault found it: the tenant's failed backup stayed Deleting).
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startObjectStore } from '../../devenv/velero/launch.ts';
import { listObjects } from '../../devenv/velero/s3-list.ts';
import { s3Fetch } from '../../devenv/velero/s3-sign.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

const run = promisify(execFile);
const root = process.getuid?.() === 0;

describe.skipIf(!root)('the test object store on a full disk', () => {
  let dir: string;
  let store: Awaited<ReturnType<typeof startObjectStore>>;
  const bucket = 'velero';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tenantkit-s3-full-'));
    // 2 MiB: the store's metadata and a small object fit, a 4 MiB object does not.
    await run('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tenantkit-s3-full', dir]);
    store = await startObjectStore(dir, bucket);
  }, veleroStartTimeoutMs);

  afterAll(async () => {
    await store?.stop();
    if (dir) {
      await run('umount', ['-l', dir]).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    }
  });

  const put = (key: string, body: Buffer) =>
    s3Fetch(store.credentials, { method: 'PUT', endpoint: store.url, path: `/${bucket}/${key}`, body });

  it('leaves nothing of a PUT the disk refuses, and its prefix stays listable and deletable', async () => {
    const small = await put('backups/b1/velero-backup.json', Buffer.from('{"kind":"Backup"}'));
    expect(small.status, await small.text()).toBe(200);
    // Refused: a 500, or, when the store answers before it has read the whole body, the connection
    // closed under the upload (which of the two depends on timing).
    const big = await put('backups/b1/b1.tar.gz', Buffer.alloc(4 * 2 ** 20, 7)).then(
      (r) => `HTTP ${r.status}`,
      (err: Error) => `connection ended: ${err.message}`,
    );
    expect(big).toMatch(/^HTTP 5\d\d$|^connection ended/);

    // The failed object is not there, and the listing of its prefix answers.
    const keys = (await listObjects(store.url, store.credentials, bucket, 'backups/b1/')).map((o) => o.key);
    expect(keys).toEqual(['backups/b1/velero-backup.json']);
    // What Velero does to delete a backup: list the prefix, delete each object.
    const removed = await s3Fetch(store.credentials, {
      method: 'DELETE',
      endpoint: store.url,
      path: `/${bucket}/backups/b1/velero-backup.json`,
    });
    expect(removed.status).toBe(204);
    expect(await listObjects(store.url, store.credentials, bucket, 'backups/')).toEqual([]);
    // The space the failed write took is free again: an object of most of the disk fits.
    const fits = await put('backups/b2/b2.tar.gz', Buffer.alloc(2 ** 20, 1));
    expect(fits.status, await fits.text()).toBe(200);
  });
});
