// Progress counts on NonAdminBackups and NonAdminRestores, with the whole backup capability and a real
// Velero, without a node. The file-system counts (PodVolumeBackups and PodVolumeRestores) come from Velero's
// real node-agent in test/e2e/volumes.test.ts. What cannot be real anywhere here are the data mover's
// DataUploads and DataDownloads (no CSI driver builds here): this file makes them as admin, as a
// **stand-in** for Velero's data mover, labelled for the Velero Backup (Restore) of a real NonAdminBackup
// (NonAdminRestore), and moves their phases as the data mover would. PodVolumeBackups that are not the
// backup's (another backup's label; the backup's label outside Velero's namespace) must never count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../../src/api/backup.ts';
import { type Json, jsonEqual } from '../../src/backup/enforce.ts';
import { registry } from '../../src/kube/metrics.ts';
import type { KubeObject, ResourceType } from '../../src/kube/resources.ts';
import { VeleroResources } from '../../src/kube/velero.ts';
import {
  type BackupEnvironment,
  completedBackup,
  startBackupEnvironment,
  veleroQueueMs,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
const admin = cluster.admin;
let env: BackupEnvironment;
let ns: string;

const pod = (name: string) => ({
  kind: 'Pod',
  name,
  namespace: ns,
  uid: '00000000-0000-0000-0000-000000000001',
});
const podVolumeBackup = (name: string, backupName: string, namespace: string, phase?: string) =>
  ({
    metadata: { name, namespace, labels: { 'velero.io/backup-name': backupName } },
    spec: { backupStorageLocation: 'default', node: 'n', pod: pod('app'), repoIdentifier: 'r', volume: name },
    ...(phase ? { status: { phase } } : {}),
  }) as KubeObject;
const dataUpload = (name: string, backupName: string, phase: string) =>
  ({
    metadata: { name, namespace: env.velero.namespace, labels: { 'velero.io/backup-name': backupName } },
    spec: {
      backupStorageLocation: 'default',
      operationTimeout: '10m',
      snapshotType: 'CSI',
      sourceNamespace: ns,
      sourcePVC: name,
    },
    status: { phase },
  }) as KubeObject;

async function phase(type: ResourceType, name: string, value: string) {
  // Velero's CRDs have no status subresource: status is written on the object.
  await admin.patch(type, name, env.velero.namespace, { status: { phase: value } });
}

beforeAll(async () => {
  env = await startBackupEnvironment(cluster);
  ns = await env.namespace('progress');
}, veleroStartTimeoutMs);

afterAll(() => env?.stop());

describe('progress counts', { timeout: veleroQueueMs + 60_000 }, () => {
  let backupName: string;

  it("counts the DataUploads of a NonAdminBackup by phase and follows them, and never counts another backup's PodVolumeBackups", async () => {
    await admin.create(NonAdminBackupCrd.type, {
      metadata: { name: 'volumes', namespace: ns },
      spec: { backupSpec: {} },
    } as KubeObject);
    const created = await eventually(
      async () => {
        const nab = await admin.get<NonAdminBackup>(NonAdminBackupCrd.type, 'volumes', ns);
        return nab?.status?.phase === 'Created' ? nab : undefined;
      },
      { what: 'NonAdminBackup Created' },
    );
    backupName = created.status!.veleroBackup!.name!;
    // Nothing to count yet: the fields are left out, as upstream does.
    expect(created.status?.fileSystemPodVolumeBackups).toBeUndefined();
    expect(created.status?.dataMoverDataUploads).toBeUndefined();

    await admin.create(VeleroResources.dataUploads, dataUpload('du-a', backupName, 'Accepted'));
    // Not this backup's: another backup's, and one with this backup's label outside Velero's namespace.
    await admin.create(
      VeleroResources.podVolumeBackups,
      podVolumeBackup('pvb-other', 'other', env.velero.namespace),
    );
    await admin.create(VeleroResources.podVolumeBackups, podVolumeBackup('pvb-elsewhere', backupName, ns));

    const nabCounts = async (pvb: Json | undefined, du: Json | undefined) => {
      let seen = '';
      await eventually(
        async () => {
          const nab = await admin.get<NonAdminBackup>(NonAdminBackupCrd.type, 'volumes', ns);
          seen = JSON.stringify([nab?.status?.fileSystemPodVolumeBackups, nab?.status?.dataMoverDataUploads]);
          return (
            jsonEqual(nab?.status?.fileSystemPodVolumeBackups as Json | undefined, pvb) &&
            jsonEqual(nab?.status?.dataMoverDataUploads as Json | undefined, du)
          );
        },
        { what: `NAB counts ${JSON.stringify(pvb)} / ${JSON.stringify(du)}` },
      ).catch((err: Error) => {
        throw new Error(`${err.message}; last seen ${seen}`);
      });
    };
    const dm0 = {
      new: 0,
      accepted: 0,
      prepared: 0,
      inProgress: 0,
      canceling: 0,
      canceled: 0,
      failed: 0,
      completed: 0,
    };
    // The PodVolumeBackups above are not this backup's: no file-system counts at all.
    await nabCounts(undefined, { ...dm0, total: 1, accepted: 1 });

    await phase(VeleroResources.dataUploads, 'du-a', 'InProgress');
    await nabCounts(undefined, { ...dm0, total: 1, inProgress: 1 });

    // Gone entirely: the field goes too.
    await admin.delete(VeleroResources.dataUploads, 'du-a', env.velero.namespace);
    await nabCounts(undefined, undefined);
  });

  it('adds no write to an idle resync', async () => {
    // Let the Velero Backup finish first, so that Velero itself moves nothing during the check.
    await completedBackup(cluster, ns, 'volumes');
    const settled = await admin.get<NonAdminBackup>(NonAdminBackupCrd.type, 'volumes', ns);
    const client = env.running.controllerClient;
    const original = client.request.bind(client);
    const statusPatches: Record<string, unknown>[] = [];
    client.request = ((method, path, params) => {
      if (method === 'PATCH' && path.includes('/nonadminbackups/')) {
        statusPatches.push((params?.body as { status?: Record<string, unknown> })?.status ?? {});
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
    for (const patch of statusPatches) {
      expect(Object.keys(patch).length).toBeGreaterThan(0);
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

  it('counts the DataDownloads of a NonAdminRestore', async () => {
    await admin.create(NonAdminRestoreCrd.type, {
      metadata: { name: 'volumes', namespace: ns },
      spec: { restoreSpec: { backupName: 'volumes' } },
    } as KubeObject);
    const created = await eventually(
      async () => {
        const nar = await admin.get<NonAdminRestore>(NonAdminRestoreCrd.type, 'volumes', ns);
        return nar?.status?.phase === 'Created' ? nar : undefined;
      },
      { timeoutMs: veleroQueueMs, what: 'NonAdminRestore Created' },
    );
    const restoreName = created.status!.veleroRestore!.name!;
    const labels = { 'velero.io/restore-name': restoreName };
    await admin.create(VeleroResources.dataDownloads, {
      metadata: { name: 'dd-a', namespace: env.velero.namespace, labels },
      spec: {
        backupStorageLocation: 'default',
        operationTimeout: '10m',
        snapshotID: 's',
        sourceNamespace: ns,
        targetVolume: { namespace: ns, pv: '', pvc: 'data' },
      },
      status: { phase: 'Prepared' },
    } as KubeObject);
    await eventually(
      async () => {
        const nar = await admin.get<NonAdminRestore>(NonAdminRestoreCrd.type, 'volumes', ns);
        return (
          nar?.status?.fileSystemPodVolumeRestores === undefined &&
          jsonEqual(nar?.status?.dataMoverDataDownloads as Json | undefined, {
            total: 1,
            new: 0,
            accepted: 0,
            prepared: 1,
            inProgress: 0,
            canceling: 0,
            canceled: 0,
            failed: 0,
            completed: 0,
          })
        );
      },
      { what: 'NAR counts' },
    );
  });
});
