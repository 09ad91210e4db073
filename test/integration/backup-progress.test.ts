// Progress counts on NonAdminBackups and NonAdminRestores with the whole backup capability and the real
// Velero server, without a node: a backup and a restore of resources only carry no volume counts, and an
// idle resync writes none. Every Velero object here is Velero's own. The file-system counts
// (PodVolumeBackups and PodVolumeRestores, bytes included) come from Velero's real node-agent in
// test/e2e/volumes.test.ts, where several backups of one namespace each count their own volumes only.
// Data mover counts (DataUploads, DataDownloads) need a CSI driver, which does not build here: their
// counting is unit-tested on plain objects (test/unit/backup-progress.test.ts), not simulated.
// Last, the resumption of volume operations a node-agent left Accepted, or InProgress with their data
// mover Pod ended (controllers/resume/): with no node-agent here, the test writes the operations and the
// data mover Pod as Velero leaves them (its node-agent killed at that moment in bench:faults), and the
// controllers act on them under their own RBAC.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResumedAtAnnotation } from '../../src/backup/controllers/resume/index.ts';
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
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
      // This NAB's writes only: the controllers also act on other files' NABs meanwhile (a CI run saw
      // the finalizer removal of another file's deleted NAB here, a PATCH without a status).
      if (method === 'PATCH' && path.includes(`/namespaces/${ns}/nonadminbackups/volumes`)) {
        statusPatches.push((params?.body as { status?: Record<string, unknown> })?.status ?? {});
        // What was sent, for a failure's message.
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

describe('volume operations a node-agent left Accepted or InProgress', { timeout: 120_000 }, () => {
  type Operation = KubeObject & { spec?: { cancel?: boolean }; status?: { phase?: string } };
  const pvrs = VeleroResources.podVolumeRestores;

  /** A PodVolumeRestore as Velero's node-agent leaves it when it dies right after accepting it. */
  async function accepted(namespace: string, prefix: string): Promise<Operation> {
    const name = cluster.unique(prefix);
    await admin.create<Operation>(pvrs, {
      apiVersion: 'velero.io/v1',
      kind: 'PodVolumeRestore',
      metadata: { name, namespace, labels: { 'velero.io/restore-name': `${name}-restore` } },
      spec: {
        backupStorageLocation: 'default',
        pod: { kind: 'Pod', namespace: ns, name: 'store' },
        repoIdentifier: 'planted',
        snapshotID: 'planted',
        sourceNamespace: ns,
        volume: 'data',
      },
    } as KubeObject);
    cluster.defer(() => admin.delete(pvrs, name, namespace));
    return admin.patch<Operation>(pvrs, name, namespace, {
      status: { phase: 'Accepted', acceptedTimestamp: new Date().toISOString() },
    });
  }

  /** A PodVolumeRestore whose data path the node-agent started before it died. */
  async function inProgress(namespace: string, prefix: string): Promise<Operation> {
    const o = await accepted(namespace, prefix);
    return admin.patch<Operation>(pvrs, o.metadata.name!, namespace, {
      status: { phase: 'InProgress', startTimestamp: new Date().toISOString() },
    });
  }

  /**
   * Its data mover Pod, made (owned by it) with `status` (the API server is told so: there is no node here
   * to run it).
   */
  async function podOf(operation: Operation, status: Record<string, unknown>): Promise<void> {
    const { name, namespace, uid } = operation.metadata;
    await admin.create(Resources.pods, {
      metadata: {
        name,
        namespace,
        ownerReferences: [
          { apiVersion: 'velero.io/v1', kind: 'PodVolumeRestore', name, uid, controller: true },
        ],
      },
      spec: { containers: [{ name: 'restore', image: 'velero/velero:v1.18.3' }] },
    } as KubeObject);
    cluster.defer(() => admin.delete(Resources.pods, name!, namespace));
    await admin.patch(Resources.pods, name!, namespace, { status }, undefined, 'status');
  }

  /** Its data mover Pod, ended `phase`. */
  async function endedPodOf(operation: Operation, phase: 'Succeeded' | 'Failed'): Promise<void> {
    const now = new Date().toISOString();
    const terminated = { exitCode: phase === 'Succeeded' ? 0 : 1, startedAt: now, finishedAt: now };
    await podOf(operation, {
      phase,
      containerStatuses: [
        {
          name: 'restore',
          image: 'velero/velero:v1.18.3',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated },
        },
      ],
    });
  }

  /** Its data mover Pod, running. */
  async function runningPodOf(operation: Operation): Promise<void> {
    const now = new Date().toISOString();
    await podOf(operation, {
      phase: 'Running',
      startTime: now,
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }],
    });
  }

  const eventOn = (namespace: string, name: string, reason: string) =>
    eventually(
      async () =>
        (
          await admin.list<KubeObject & { reason?: string; note?: string; regarding?: { name?: string } }>(
            Resources.events,
            { namespace },
          )
        ).items.find((e) => e.reason === reason && e.regarding?.name === name),
      { timeoutMs: 30_000, what: `Event ${reason} on ${name}` },
    );

  it("cancels one without a data mover Pod, starts one whose Pod runs, and leaves what is not in Velero's namespace", async () => {
    const veleroNs = env.velero.namespace;
    await env.setPolicy({ resumeStuckVolumeOperationsAfter: '2s' });
    try {
      const lone = await accepted(veleroNs, 'lone');
      const held = await accepted(veleroNs, 'held');
      await runningPodOf(held);
      // Not Velero's namespace: whoever wrote it there, tenantkit does not act on it.
      const elsewhere = await accepted(ns, 'elsewhere');

      const canceled = await eventually(
        async () => {
          const o = await admin.get<Operation>(pvrs, lone.metadata.name!, veleroNs);
          return o?.spec?.cancel === true ? o : undefined;
        },
        { timeoutMs: 30_000, what: 'the lone PodVolumeRestore canceled' },
      );
      expect(canceled.status?.phase).toBe('Accepted');
      expect((await eventOn(veleroNs, lone.metadata.name!, 'CanceledStuckOperation')).note).toMatch(
        /no data mover Pod exists.*Set spec.cancel/,
      );

      const pod = await eventually(
        async () => {
          const p = await admin.get<KubeObject>(Resources.pods, held.metadata.name!, veleroNs);
          return p?.metadata.annotations?.[ResumedAtAnnotation] ? p : undefined;
        },
        { timeoutMs: 30_000, what: 'the running data mover Pod annotated' },
      );
      expect(Date.parse(pod.metadata.annotations![ResumedAtAnnotation]!)).toBeGreaterThan(
        Date.now() - 60_000,
      );
      expect((await eventOn(veleroNs, held.metadata.name!, 'ResumedStuckOperation')).note).toMatch(
        /while its data mover Pod .* runs/,
      );
      expect((await admin.get<Operation>(pvrs, held.metadata.name!, veleroNs))?.spec?.cancel).not.toBe(true);
      expect((await admin.get<Operation>(pvrs, elsewhere.metadata.name!, ns))?.spec?.cancel).not.toBe(true);
      const counted = await registry
        .getSingleMetric('tenantkit_velero_volume_operations_resumed_total')!
        .get();
      const count = (action: string) =>
        counted.values.find((v) => v.labels.kind === 'PodVolumeRestore' && v.labels.action === action)?.value;
      expect(count('cancel')).toBeGreaterThanOrEqual(1);
      expect(count('resume')).toBeGreaterThanOrEqual(1);
    } finally {
      await env.setPolicy({});
    }
  });

  it('cancels an InProgress one whose data mover Pod ended, and leaves one whose Pod runs', async () => {
    const veleroNs = env.velero.namespace;
    await env.setPolicy({ resumeStuckVolumeOperationsAfter: '2s' });
    try {
      const done = await inProgress(veleroNs, 'done');
      await endedPodOf(done, 'Succeeded');
      const broken = await inProgress(veleroNs, 'broken');
      await endedPodOf(broken, 'Failed');
      const moving = await inProgress(veleroNs, 'moving');
      await runningPodOf(moving);

      for (const [o, phase] of [
        [done, 'Succeeded'],
        [broken, 'Failed'],
      ] as const) {
        const canceled = await eventually(
          async () => {
            const c = await admin.get<Operation>(pvrs, o.metadata.name!, veleroNs);
            return c?.spec?.cancel === true ? c : undefined;
          },
          { timeoutMs: 30_000, what: `the InProgress PodVolumeRestore with its Pod ${phase} canceled` },
        );
        expect(canceled.status?.phase).toBe('InProgress');
        expect((await eventOn(veleroNs, o.metadata.name!, 'CanceledStuckOperation')).note).toMatch(
          new RegExp(`InProgress while its data mover Pod .* has been ${phase} for over 2s.*Set spec.cancel`),
        );
      }
      // Past the period with its Pod running: a data path going on is not touched.
      await new Promise((r) => setTimeout(r, 4_000));
      expect((await admin.get<Operation>(pvrs, moving.metadata.name!, veleroNs))?.spec?.cancel).not.toBe(
        true,
      );
    } finally {
      await env.setPolicy({});
    }
  });
});
