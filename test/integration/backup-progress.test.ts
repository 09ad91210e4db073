// Progress counts on NonAdminBackups and NonAdminRestores with the whole backup capability and the real
// Velero server, without a node: a backup and a restore of resources only carry no volume counts, and an
// idle resync writes none. Every Velero object here is Velero's own. The file-system counts
// (PodVolumeBackups and PodVolumeRestores, bytes included) come from Velero's real node-agent in
// test/e2e/volumes.test.ts, where several backups of one namespace each count their own volumes only.
// Data mover counts (DataUploads, DataDownloads) need a CSI driver, which does not build here: their
// counting is unit-tested on plain objects (test/unit/backup-progress.test.ts), not simulated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../../src/crds/backup.ts';
import { registry } from '../../src/kube/metrics.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import {
  type BackupEnvironment,
  completedBackup,
  completedRestore,
  startBackupEnvironment,
  veleroQueueMs,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
const admin = cluster.admin;
let env: BackupEnvironment;
let ns: string;

beforeAll(async () => {
  env = await startBackupEnvironment(cluster);
  ns = await env.namespace('progress');
  await admin.create(Resources.configMaps, {
    metadata: { name: 'settings', namespace: ns },
    data: { color: 'blue' },
  } as KubeObject);
}, veleroStartTimeoutMs);

afterAll(() => env?.stop());

describe('progress counts', { timeout: veleroQueueMs + 60_000 }, () => {
  it('leaves the volume counts out of a backup without volumes, as upstream does', async () => {
    await admin.create(NonAdminBackupCrd.type, {
      metadata: { name: 'volumes', namespace: ns },
      spec: { backupSpec: { defaultVolumesToFsBackup: true } },
    } as KubeObject);
    const nab = await completedBackup(cluster, ns, 'volumes');
    expect(nab.status?.fileSystemPodVolumeBackups).toBeUndefined();
    expect(nab.status?.dataMoverDataUploads).toBeUndefined();
  });

  it('adds no write to an idle resync', async () => {
    // Let the Velero Backup finish first, so that Velero itself moves nothing during the check.
    await completedBackup(cluster, ns, 'volumes');
    const settled = await admin.get<NonAdminBackup>(NonAdminBackupCrd.type, 'volumes', ns);
    const client = env.running.controllerClient;
    const original = client.request.bind(client);
    const statusPatches: Record<string, unknown>[] = [];
    const sent: string[] = [];
    client.request = ((method, path, params) => {
      if (method === 'PATCH' && path.includes('/nonadminbackups/')) {
        statusPatches.push((params?.body as { status?: Record<string, unknown> })?.status ?? {});
        // What was sent, for a failure's message (a CI run once saw a PATCH here without a status).
        sent.push(`${path} ${JSON.stringify(params?.body)}`);
      }
      return original(method, path, params);
    }) as typeof client.request;
    try {
      env.running.controllers.resync();
      await new Promise((r) => setTimeout(r, 2_000));
    } finally {
      client.request = original;
    }
    // Neither an empty patch nor one carrying counts. (The NonAdminBackup controller may still rewrite
    // status.veleroBackup here: a field Velero dropped from its Backup's status, such as queuePosition,
    // survives its merge patch, which sends changed top-level fields only; that write is not the counts'.)
    for (const [i, patch] of statusPatches.entries()) {
      expect(Object.keys(patch).length, sent[i]).toBeGreaterThan(0);
      expect(patch).not.toHaveProperty('fileSystemPodVolumeBackups');
      expect(patch).not.toHaveProperty('dataMoverDataUploads');
    }
    const after = await admin.get<NonAdminBackup>(NonAdminBackupCrd.type, 'volumes', ns);
    expect(after?.status?.fileSystemPodVolumeBackups).toEqual(settled?.status?.fileSystemPodVolumeBackups);
  });

  it('runs garbage collection with the capability: one clean pass at start, under its own RBAC', async () => {
    // Not progress, but this file runs the whole capability: its GC must be registered, and every list and
    // read it makes must be allowed by the capability's rules (an error would count as result="error").
    const runs = async () =>
      (await registry.getSingleMetric('tenantkit_backup_gc_runs_total')?.get())?.values ?? [];
    await eventually(async () => (await runs()).some((v) => v.labels.result === 'success' && v.value >= 1), {
      what: 'a successful GC pass',
    });
    expect((await runs()).filter((v) => v.labels.result === 'error' && v.value > 0)).toEqual([]);
  });

  it('leaves the volume counts out of a restore without volumes', async () => {
    await admin.create(NonAdminRestoreCrd.type, {
      metadata: { name: 'volumes', namespace: ns },
      spec: { restoreSpec: { backupName: 'volumes' } },
    } as KubeObject);
    const nar: NonAdminRestore = await completedRestore(cluster, ns, 'volumes');
    expect(nar.status?.fileSystemPodVolumeRestores).toBeUndefined();
    expect(nar.status?.dataMoverDataDownloads).toBeUndefined();
  });
});
