// The non-admin backup API on a real API server: the CRDs (installed by the global setup from allCrds)
// keep every field an OADP client may send, nulls included, apply the upstream defaults, reject what the
// upstream schema rejects, and the admin configuration's CEL rules hold. No controllers are involved.
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { type EnforcedKind, policyProblems, unenforceable } from '../../src/backup/policy/enforce.ts';
import {
  type NonAdminBackup,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
  NonAdminBackupStorageLocationCrd,
  NonAdminBackupStorageLocationRequestCrd,
  NonAdminDownloadRequestCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
  type NonAdminSchedule,
  NonAdminScheduleCrd,
} from '../../src/crds/backup.ts';
import { ApiError } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/resources.ts';
import { TestCluster } from '../harness/cluster.ts';

const cluster = await TestCluster.connect();
const admin = cluster.admin;
afterAll(() => cluster.cleanup());

/** The API server's answer: 'ok', or the HTTP status and message of the rejection. */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (err) {
    if (err instanceof ApiError) return `${err.status} ${err.message}`;
    throw err;
  }
}

type WithSpec = KubeObject & { spec?: unknown };

const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');

const backupSpec = (ns: string) => ({
  metadata: { labels: { team: 'shop' } },
  includedNamespaces: [ns],
  excludedNamespaces: null,
  includedResources: ['configmaps', 'deployments'],
  excludedResources: null,
  includedClusterScopedResources: [],
  excludedClusterScopedResources: null,
  includedNamespaceScopedResources: null,
  excludedNamespaceScopedResources: ['events'],
  labelSelector: {
    matchLabels: { app: 'shop' },
    matchExpressions: [{ key: 'tier', operator: 'In', values: ['web'] }],
  },
  orLabelSelectors: null,
  includeClusterResources: null,
  snapshotVolumes: false,
  ttl: '72h0m0s',
  hooks: {
    resources: [
      {
        name: 'freeze',
        includedNamespaces: [ns],
        excludedNamespaces: null,
        labelSelector: null,
        pre: [
          {
            exec: { container: 'db', command: ['fsfreeze', '-f', '/data'], onError: 'Fail', timeout: '30s' },
          },
        ],
        post: [{ exec: { command: ['fsfreeze', '-u', '/data'], onError: 'Continue' } }],
      },
    ],
  },
  storageLocation: 'tenant-bucket',
  volumeSnapshotLocations: ['default'],
  defaultVolumesToRestic: null,
  defaultVolumesToFsBackup: true,
  orderedResources: { pods: `${ns}/a,${ns}/b` },
  csiSnapshotTimeout: '10m0s',
  itemOperationTimeout: '4h0m0s',
  resourcePolicy: { kind: 'ConfigMap', name: 'policy' },
  snapshotMoveData: null,
  datamover: 'velero',
  uploaderConfig: { parallelFilesUpload: 4 },
  volumeGroupSnapshotLabelKey: 'vgs',
});

describe('non-admin backup API', () => {
  it('keeps every field of a NonAdminBackup and its status, nulls included', async () => {
    const ns = await cluster.namespace('nab');
    const spec = { backupSpec: backupSpec(ns), deleteBackup: false };
    const created = await admin.create<NonAdminBackup>(NonAdminBackupCrd.type, {
      metadata: { name: 'full', namespace: ns },
      spec,
    } as unknown as NonAdminBackup);
    expect(created.spec).toEqual(spec);

    const status = {
      phase: 'Created',
      conditions: [
        { type: 'Accepted', status: 'True', reason: 'BackupAccepted', message: '', lastTransitionTime: now },
        {
          type: 'Queued',
          status: 'True',
          reason: 'BackupScheduled',
          message: 'Velero Backup created',
          lastTransitionTime: now,
          observedGeneration: 1,
        },
      ],
      queueInfo: { estimatedQueuePosition: 2 },
      veleroBackup: {
        nacuuid: 'abc',
        name: `${ns}-full-abc`,
        namespace: 'velero',
        spec: backupSpec(ns),
        // Phases and fields of Velero v1.18 (Queued, queuePosition) beside the older ones.
        status: {
          phase: 'Queued',
          queuePosition: 2,
          version: 1,
          formatVersion: '1.1.0',
          expiration: null,
          startTimestamp: now,
          completionTimestamp: null,
          validationErrors: null,
          progress: { totalItems: 10, itemsBackedUp: 3 },
          hookStatus: { hooksAttempted: 1, hooksFailed: 0 },
          errors: 0,
          warnings: 1,
        },
      },
      veleroDeleteBackupRequest: {
        nacuuid: 'def',
        name: 'x',
        namespace: 'velero',
        status: { phase: 'New', errors: null },
      },
      dataMoverDataUploads: {
        total: 2,
        new: 1,
        accepted: 1,
        prepared: 0,
        inProgress: 0,
        canceling: 0,
        canceled: 0,
        failed: 0,
        completed: 0,
      },
      fileSystemPodVolumeBackups: { total: 1, new: 0, inProgress: 1, failed: 0, completed: 0 },
    };
    // A whole-object PUT, since a merge patch would read the nulls as "remove".
    const updated = await admin.replace<NonAdminBackup>(
      NonAdminBackupCrd.type,
      { ...created, status } as unknown as NonAdminBackup,
      'status',
    );
    expect(updated.status).toEqual(status);

    // What the upstream schema rejects, tenantkit rejects too.
    const reject = (name: string, patch: Record<string, unknown>) =>
      outcome(
        admin.create(NonAdminBackupCrd.type, {
          metadata: { name, namespace: ns },
          spec: { backupSpec: { ...patch } },
        } as KubeObject),
      );
    expect(await reject('bad-hook', { hooks: { resources: [{ pre: [] }] } })).toMatch(
      /^422 .*name: Required value/,
    );
    expect(
      await reject('bad-command', {
        hooks: { resources: [{ name: 'h', pre: [{ exec: { command: [] } }] }] },
      }),
    ).toMatch(/^422 .*command/);
    expect(
      await reject('bad-onerror', {
        hooks: { resources: [{ name: 'h', post: [{ exec: { command: ['x'], onError: 'Ignore' } }] }] },
      }),
    ).toMatch(/^422 .*onError/);
    expect(await reject('bad-policy', { resourcePolicy: { name: 'p' } })).toMatch(
      /^422 .*kind: Required value/,
    );
    // A spec without backupSpec is refused; an object without spec is accepted, as upstream.
    expect(
      await outcome(
        admin.create(NonAdminBackupCrd.type, {
          metadata: { name: 'empty', namespace: ns },
          spec: {},
        } as KubeObject),
      ),
    ).toMatch(/^422 .*backupSpec: Required value/);
    expect(
      await outcome(admin.create(NonAdminBackupCrd.type, { metadata: { name: 'nospec', namespace: ns } })),
    ).toBe('ok');
  });

  it('keeps restore hooks with arbitrary init containers and the status of the Velero Restore', async () => {
    const ns = await cluster.namespace('nar');
    const restoreSpec = {
      backupName: 'full',
      includedResources: null,
      namespaceMapping: { old: ns },
      restoreStatus: { includedResources: ['deployments'], excludedResources: null },
      restorePVs: null,
      preserveNodePorts: true,
      existingResourcePolicy: 'update',
      resourceModifier: { kind: 'ConfigMap', name: 'mods' },
      uploaderConfig: { writeSparseFiles: null, parallelFilesDownload: 2 },
      hooks: {
        resources: [
          {
            name: 'warm-up',
            postHooks: [
              {
                init: {
                  initContainers: [
                    {
                      name: 'restore-db',
                      image: 'busybox',
                      command: ['sh', '-c', 'true'],
                      volumeMounts: [{ name: 'data', mountPath: '/data' }],
                    },
                  ],
                  timeout: '5m',
                },
              },
              {
                exec: {
                  command: ['warm'],
                  execTimeout: '1m',
                  waitTimeout: '2m',
                  waitForReady: null,
                  onError: 'Continue',
                },
              },
            ],
          },
        ],
      },
    };
    const created = await admin.create<NonAdminRestore>(NonAdminRestoreCrd.type, {
      metadata: { name: 'full', namespace: ns },
      spec: { restoreSpec },
    } as unknown as NonAdminRestore);
    expect(created.spec).toEqual({ restoreSpec });
    const status = {
      phase: 'Created',
      veleroRestore: {
        nacuuid: 'abc',
        name: `${ns}-full-abc`,
        namespace: 'velero',
        status: { phase: 'WaitingForPluginOperations', errors: 0, progress: null, startTimestamp: now },
      },
      dataMoverDataDownloads: { total: 1, completed: 1 },
      fileSystemPodVolumeRestores: { total: 0 },
      queueInfo: { estimatedQueuePosition: 0 },
    };
    // A whole-object PUT, since a merge patch would read the nulls as "remove".
    const updated = await admin.replace<NonAdminRestore>(
      NonAdminRestoreCrd.type,
      { ...created, status } as unknown as NonAdminRestore,
      'status',
    );
    expect(updated.status).toEqual(status);
  });

  it('takes schedules, storage locations, their approval requests and download requests as upstream does', async () => {
    const ns = await cluster.namespace('nas');
    const schedule = {
      schedule: '0 3 * * *',
      paused: false,
      skipImmediately: true,
      template: { backupSpec: { backupType: 'Incremental', ttl: '168h0m0s', includedNamespaces: null } },
    };
    const created = await admin.create<NonAdminSchedule>(NonAdminScheduleCrd.type, {
      metadata: { name: 'nightly', namespace: ns },
      spec: schedule,
    } as unknown as NonAdminSchedule);
    expect(created.spec).toEqual(schedule);
    const run = (n: number) => ({
      name: `nightly-${n}`,
      veleroBackupName: `${ns}-nightly-${n}`,
      phase: n === 1 ? 'ReadyToStart' : 'Completed',
      startTimestamp: now,
      completionTimestamp: now,
      expiration: now,
    });
    const status = {
      phase: 'Created',
      veleroSchedule: {
        nacuuid: 'u',
        name: 'v',
        namespace: 'velero',
        status: { phase: 'Enabled', lastBackup: now, lastSkipped: null, validationErrors: [] },
      },
      lastBackup: run(1),
      recentBackups: [run(1), run(2)],
      nextRun: now,
    };
    // A whole-object PUT, since a merge patch would read the nulls as "remove".
    const updated = await admin.replace<NonAdminSchedule>(
      NonAdminScheduleCrd.type,
      { ...created, status } as unknown as NonAdminSchedule,
      'status',
    );
    expect(updated.status).toEqual(status);
    expect(
      await outcome(
        admin.create(NonAdminScheduleCrd.type, {
          metadata: { name: 'no-cron', namespace: ns },
          spec: { template: { backupSpec: {} } },
        } as KubeObject),
      ),
    ).toMatch(/^422 .*schedule: Required value/);
    expect(
      await outcome(
        admin.create(NonAdminScheduleCrd.type, {
          metadata: { name: 'bad-type', namespace: ns },
          spec: { schedule: '@daily', template: { backupSpec: { backupType: 'Differential' } } },
        } as KubeObject),
      ),
    ).toMatch(/^422 .*backupType/);

    const nabsl = await admin.create<WithSpec>(NonAdminBackupStorageLocationCrd.type, {
      metadata: { name: 'bucket', namespace: ns },
      spec: {
        backupStorageLocationSpec: {
          provider: 'aws',
          objectStorage: { bucket: 'b', prefix: 'team', caCert: Buffer.from('ca').toString('base64') },
          config: { region: 'minio', s3ForcePathStyle: 'true' },
          credential: { key: 'cloud' },
          accessMode: 'ReadWrite',
          backupSyncPeriod: null,
          validationFrequency: '1m',
        },
      },
    } as WithSpec);
    // corev1.SecretKeySelector's name defaults to "".
    expect(nabsl.spec).toMatchObject({
      backupStorageLocationSpec: { credential: { key: 'cloud', name: '' } },
    });
    expect(
      await outcome(
        admin.create(NonAdminBackupStorageLocationCrd.type, {
          metadata: { name: 'no-provider', namespace: ns },
          spec: { backupStorageLocationSpec: { objectStorage: { bucket: 'b' } } },
        } as KubeObject),
      ),
    ).toMatch(/^422 .*provider: Required value/);

    expect(
      await outcome(
        admin.create(NonAdminBackupStorageLocationRequestCrd.type, {
          metadata: { name: 'r', namespace: ns },
          spec: { approvalDecision: 'maybe' },
        } as KubeObject),
      ),
    ).toMatch(/^422 .*approvalDecision/);
    expect(
      await outcome(
        admin.create(NonAdminBackupStorageLocationRequestCrd.type, {
          metadata: { name: 'r', namespace: ns },
          spec: { approvalDecision: 'pending' },
        } as KubeObject),
      ),
    ).toBe('ok');

    expect(
      await outcome(
        admin.create(NonAdminDownloadRequestCrd.type, {
          metadata: { name: 'log', namespace: ns },
          spec: { target: { kind: 'BackupLog', name: 'full' } },
        } as KubeObject),
      ),
    ).toBe('ok');
    expect(
      await outcome(
        admin.create(NonAdminDownloadRequestCrd.type, {
          metadata: { name: 'bad', namespace: ns },
          spec: { target: { kind: 'Everything', name: 'full' } },
        } as KubeObject),
      ),
    ).toMatch(/^422 .*kind/);
  });
});

describe('NonAdminBackupConfig', () => {
  const type = NonAdminBackupConfigCrd.type;
  const config = (nonAdmin: Record<string, unknown>, name = 'cluster') =>
    ({ metadata: { name }, spec: { nonAdmin } }) as KubeObject;
  const tryConfig = (nonAdmin: Record<string, unknown>) =>
    outcome(admin.create(type, config(nonAdmin)).then(() => admin.delete(type, 'cluster')));

  it('is a singleton named cluster with OADP defaults', async () => {
    // Gone when the test ends, whatever it asserted, so that the next test starts without one.
    onTestFinished(() => admin.delete(type, 'cluster').then(() => undefined));
    expect(await outcome(admin.create(type, config({}, 'other')))).toMatch(/^422 .*must be named "cluster"/);
    const created = await admin.create<WithSpec>(type, {
      metadata: { name: 'cluster' },
      spec: {},
    } as WithSpec);
    expect(created.spec).toEqual({
      nonAdmin: {
        enable: false,
        requireApprovalForBSL: false,
        backupSyncPeriod: '2m',
        garbageCollectionPeriod: '24h',
        // tenantkit's own field: NonAdminSchedules run at most hourly unless the admin says otherwise.
        minimumScheduleInterval: '1h',
        // And a namespace's share of Velero's queue.
        maxQueuedBackupsPerNamespace: 5,
        // And how many NonAdminSchedules one namespace may keep.
        maxSchedulesPerNamespace: 10,
        // And how long Velero's queue may stand still before the NABs and NARs in it say so.
        stalledQueueWarningAfter: '10m',
        // And how long a volume operation may sit Accepted after its node-agent restarted.
        resumeStuckVolumeOperationsAfter: '2m',
        veleroNamespace: 'velero',
      },
    });
  });

  it('accepts enforced specs, falsy and nested values included, and refuses fields that cannot be enforced', async () => {
    expect(
      await tryConfig({
        enable: true,
        enforceBackupSpec: {
          ttl: '24h',
          snapshotVolumes: false,
          defaultVolumesToFsBackup: true,
          labelSelector: { matchLabels: { team: 'shop' } },
          volumeSnapshotLocations: [],
        },
        enforceRestoreSpec: { restorePVs: true, existingResourcePolicy: 'none' },
        enforceBSLSpec: {
          provider: 'aws',
          config: { region: 'eu' },
          accessMode: 'ReadWrite',
          validationFrequency: '1h',
        },
        requireApprovalForBSL: true,
        backupSyncPeriod: '5m',
        garbageCollectionPeriod: '0',
      }),
    ).toBe('ok');

    // A sample value for each field src/backup/policy/enforce.ts refuses; presence is what counts.
    const samples: Record<string, unknown> = {
      includedNamespaces: ['x'],
      excludedNamespaces: [],
      includeClusterResources: false,
      includedClusterScopedResources: [],
      excludedClusterScopedResources: ['nodes'],
      storageLocation: '',
      backupName: 'b',
      scheduleName: 'nightly',
      namespaceMapping: { a: 'b' },
      credential: { key: 'cloud' },
      objectStorage: { prefix: 'tenants' },
    };
    const specs: [EnforcedKind, string][] = [
      ['NonAdminBackup', 'enforceBackupSpec'],
      ['NonAdminRestore', 'enforceRestoreSpec'],
      ['NonAdminBackupStorageLocation', 'enforceBSLSpec'],
    ];
    for (const [kind, spec] of specs) {
      const fields = Object.keys(unenforceable[kind]).filter((f) => f in samples);
      expect(fields.length).toBeGreaterThan(0);
      for (const field of fields) {
        const [problem] = policyProblems(kind, { [field]: null }, `spec.nonAdmin.${spec}`);
        expect(await tryConfig({ [spec]: { [field]: samples[field] } })).toContain(problem);
      }
    }

    expect(await tryConfig({ backupSyncPeriod: '1h', garbageCollectionPeriod: '30m' })).toMatch(
      /^422 .*longer than backupSyncPeriod/,
    );
    expect(await tryConfig({ backupSyncPeriod: 'soon' })).toMatch(/^422 .*backupSyncPeriod/);
  });
});
