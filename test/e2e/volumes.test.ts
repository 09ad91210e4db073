// Tenants' volume data with tenantkit installed by its chart and Velero's node-agent on the local node:
// file-system backups of a tenant's claims (the default StorageClass's local volumes) and restores that
// bring the bytes back, after the claim or the whole namespace was deleted; the admin's volume policies
// (skip by StorageClass or size, never or always back up file by file, the uploader's settings) holding for
// every tenant; and a tenant's attempts to reach another tenant's volume data. Every step as the tenant,
// with their own credentials, through the in-cluster webhooks and controllers (nothing of tenantkit runs
// in the test process).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Labels } from '../../src/backup/model.ts';
import { type NonAdminBackup, NonAdminBackupCrd, NonAdminRestoreCrd } from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources, resourcePath } from '../../src/kube/resources.ts';
import {
  applyBackupPolicy,
  completedBackup,
  completedRestore,
  type NonAdminPolicy,
  settledBackup,
  settledRestore,
  tenantIn,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { type Installed, installTenantkit, stopInstalled } from '../harness/installed.ts';
import { nodeSkipReason } from '../harness/node.ts';
import { type Pod, podInPhase, testDeployment, testPod } from '../harness/pods.ts';
import { type OrganizationTenant, organizationNamespace, organizationTenant } from '../harness/tenancy.ts';

const progress = (line: string) => console.log(`[e2e] ${line}`);

interface Claim extends KubeObject {
  spec: { volumeName?: string; storageClassName?: string };
  status?: { phase?: string };
}

describe.skipIf(nodeSkipReason)("tenants' volume data, with tenantkit installed", () => {
  let cluster: TestCluster;
  let installed: Installed | undefined;
  let owner: OrganizationTenant;
  let workloadImage = '';
  let veleroNamespace = '';

  beforeAll(async () => {
    cluster = await TestCluster.connect();
    installed = await installTenantkit(cluster, progress);
    workloadImage = installed.node.workloadImage;
    veleroNamespace = installed.velero.namespace;
    // A tenant in an organization, who may create its namespaces (and so make one again).
    owner = await organizationTenant(cluster, { prefix: 'e2e-data', namespaceVerbs: ['create'] });
    // The chart's tenant roles reach a namespace's admins through aggregation into `admin`.
    for (const plural of ['nonadminbackups', 'nonadminrestores']) await cluster.aggregated('admin', plural);
  }, 20 * 60_000);

  afterAll(() => stopInstalled(cluster, installed), 180_000);

  /** A tenant's claim of `size` (the default StorageClass unless `storageClassName`). */
  const claim = (user: KubeClient, ns: string, name: string, size = '1Gi', storageClassName?: string) =>
    user.create(Resources.persistentVolumeClaims, {
      metadata: { name, namespace: ns },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: size } },
        ...(storageClassName ? { storageClassName } : {}),
      },
    } as KubeObject);

  const mounted = (name: string, args: string[], claims: string[]) => ({
    name,
    image: workloadImage,
    imagePullPolicy: 'IfNotPresent',
    args,
    volumeMounts: claims.map((c) => ({ name: c, mountPath: `/${c}` })),
  });

  /**
   * A Deployment `app` whose Pod fills claim `data` once with known data (`fill` arguments: files, MiB
   * each, MiB of one large file) and prints every file's SHA-256 when it starts; `busy` adds a container
   * that rewrites a file every 5 ms.
   */
  const dataStore = (
    user: KubeClient,
    ns: string,
    app: string,
    fill: [string, string, string],
    options: { busy?: boolean; annotations?: Record<string, string> } = {},
  ) =>
    user.create(
      Resources.deployments,
      testDeployment(
        ns,
        app,
        {
          initContainers: [mounted('fill', ['fill', '/data/known', ...fill], ['data'])],
          containers: [
            mounted('main', ['sums', '/data/known', 'then', 'sleep', '3600'], ['data']),
            ...(options.busy ? [mounted('busy', ['churn', '/data/busy.txt'], ['data'])] : []),
          ],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
          terminationGracePeriodSeconds: 1,
        },
        options.annotations,
      ),
    );

  /** The running Pod of `app` and its main container's log once it printed the checksums. */
  const checksums = (user: KubeClient, ns: string, app: string, what: string) =>
    eventually(
      async () => {
        const pods = await user.list<Pod>(Resources.pods, { namespace: ns, labelSelector: `app=${app}` });
        const pod = pods.items.find((p) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp);
        if (!pod) return undefined;
        const log = await user.request<string>(
          'GET',
          `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}/log?container=main`,
          { text: true },
        );
        return /^\d+ files, \d+ bytes$/m.test(log) ? { pod, log } : undefined;
      },
      { what, timeoutMs: 120_000 },
    );
  /** The checksum lines of a `sums` log. */
  const files = (log: string) => log.split('\n').filter((l) => /^[0-9a-f]{64} {2}/.test(l));

  /** A tenant's NonAdminBackup (only asked of the webhooks when `dryRun`: nothing is kept). */
  const backUp = (
    user: KubeClient,
    ns: string,
    name: string,
    backupSpec: Record<string, unknown> = {},
    dryRun = false,
  ) =>
    user.request<KubeObject>('POST', resourcePath(NonAdminBackupCrd.type, ns), {
      body: {
        apiVersion: 'oadp.openshift.io/v1alpha1',
        kind: 'NonAdminBackup',
        metadata: { name, namespace: ns },
        spec: { backupSpec },
      },
      query: dryRun ? { dryRun: 'All' } : {},
    });
  const restore = (user: KubeClient, ns: string, name: string, backupName: string) =>
    user.create(NonAdminRestoreCrd.type, {
      metadata: { name, namespace: ns },
      spec: { restoreSpec: { backupName } },
    } as KubeObject);
  /** What the API server answered a create: 'created' or its message. */
  const outcome = (create: Promise<unknown>) =>
    create.then(
      () => 'created',
      (err: Error) => err.message,
    );

  /** The volumes Velero backed up file by file for a NonAdminBackup, as the admin reads them. */
  const backedUpVolumes = async (nab: NonAdminBackup) => {
    const pvbs = await cluster.admin.list<KubeObject & { spec: { volume: string } }>(
      VeleroResources.podVolumeBackups,
      {
        namespace: veleroNamespace,
        labelSelector: `velero.io/backup-name=${nab.status?.veleroBackup?.name}`,
      },
    );
    return pvbs.items.map((p) => p.spec.volume).sort();
  };

  it("backs up a tenant's busy volume file by file and restores it byte for byte after the claim was deleted", async () => {
    const ns = await cluster.namespace('e2e-volume');
    const user = await tenantIn(cluster, ns, 'e2e-owner');
    // Known data in /data/known (8 files of 2 MiB and one of 48 MiB), and a file rewritten every 5 ms, so
    // the volume is busy while it is backed up.
    await claim(user, ns, 'data');
    await dataStore(user, ns, 'store', ['8', '2', '48'], {
      busy: true,
      // Velero's opt-in form: this Pod's volume `data` is backed up file by file whatever the spec says.
      annotations: { 'backup.velero.io/backup-volumes': 'data' },
    });
    const before = await checksums(user, ns, 'store', 'the volume filled and summed');
    expect(before.log).toMatch(/^10 files, 67108884 bytes$/m);

    // The opt-in annotation alone (an empty backupSpec) backs the volume up file by file.
    await backUp(user, ns, 'by-annotation');
    const annotated = await completedBackup(cluster, ns, 'by-annotation');
    expect(annotated.status?.fileSystemPodVolumeBackups).toMatchObject({ total: 1, completed: 1 });

    await backUp(user, ns, 'with-data', { defaultVolumesToFsBackup: true });
    const nab = await completedBackup(cluster, ns, 'with-data');
    progress(
      `NonAdminBackup with the volume completed: ${JSON.stringify(nab.status?.fileSystemPodVolumeBackups)}`,
    );
    // Counts and bytes from Velero's own PodVolumeBackup, as the tenant reads them.
    const volumes = nab.status?.fileSystemPodVolumeBackups;
    expect(volumes).toMatchObject({ total: 1, completed: 1, failed: 0 });
    expect(volumes?.totalBytes).toBeGreaterThanOrEqual(64 * 2 ** 20);
    expect(volumes?.bytesDone).toBe(volumes?.totalBytes);
    // The kopia repository is encrypted with this installation's own random password, not the one built
    // into Velero (the same everywhere), which Velero would have used had the Secret been missing.
    const repoSecret = await cluster.admin.get<KubeObject & { data?: Record<string, string> }>(
      Resources.secrets,
      'velero-repo-credentials',
      veleroNamespace,
    );
    const repoPassword = Buffer.from(repoSecret?.data?.['repository-password'] ?? '', 'base64').toString();
    expect(repoPassword.length).toBeGreaterThanOrEqual(32);
    expect(repoPassword).not.toBe('static-passw0rd');

    // The mistake: the Deployment and the claim deleted; the volume's folder goes with its PV.
    await user.delete(Resources.deployments, 'store', ns);
    await user.delete(Resources.persistentVolumeClaims, 'data', ns);
    await eventually(
      async () =>
        (await user.list(Resources.pods, { namespace: ns, labelSelector: 'app=store' })).items.length === 0 &&
        (await user.list(Resources.persistentVolumeClaims, { namespace: ns })).items.length === 0,
      { what: 'the Pods and the claim gone', timeoutMs: 60_000 },
    );

    await restore(user, ns, 'with-data', 'with-data');
    const nar = await completedRestore(cluster, ns, 'with-data');
    expect(nar.status?.fileSystemPodVolumeRestores).toMatchObject({ total: 1, completed: 1, failed: 0 });
    expect(nar.status?.fileSystemPodVolumeRestores?.bytesDone).toBe(volumes?.totalBytes);
    const after = await checksums(user, ns, 'store', 'the restored volume summed');
    expect(after.pod.metadata.uid).not.toBe(before.pod.metadata.uid);
    // Byte for byte: every file's checksum, the fill's marker too (so the data was restored, not refilled).
    expect(files(after.log)).toEqual(files(before.log));
    expect(files(after.log)).toHaveLength(10);
  }, 600_000);

  it("names the volume Velero could not back up, from Velero's own PodVolumeBackup", async () => {
    // One Pod, two claims: `data` with known files, and `deep` with folders nested until their path is
    // longer than Linux's PATH_MAX, which kopia (opening entries by full path) cannot read.
    const ns = await cluster.namespace('e2e-volume-fails');
    const user = await tenantIn(cluster, ns, 'e2e-failing');
    await claim(user, ns, 'data');
    await claim(user, ns, 'deep');
    await user.create(
      Resources.deployments,
      testDeployment(ns, 'two', {
        initContainers: [
          mounted('fill', ['fill', '/data/known', '2', '1', '2'], ['data']),
          mounted('nest', ['deep', '/deep', '4200'], ['deep']),
        ],
        containers: [mounted('main', ['sums', '/data/known', 'then', 'sleep', '3600'], ['data', 'deep'])],
        volumes: ['data', 'deep'].map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
        terminationGracePeriodSeconds: 1,
      }),
    );
    const { pod } = await checksums(user, ns, 'two', 'the volumes filled');

    await backUp(user, ns, 'one-fails', { defaultVolumesToFsBackup: true });
    const nab = await settledBackup(cluster, ns, 'one-fails');
    // Velero keeps the rest of the backup and says it partly failed; the tenant sees which volume.
    expect(nab.status?.veleroBackup?.status?.phase).toBe('PartiallyFailed');
    const veleroSays = async () =>
      (
        await cluster.admin.list<
          KubeObject & { spec: { volume: string }; status?: { phase?: string; message?: string } }
        >(VeleroResources.podVolumeBackups, {
          namespace: veleroNamespace,
          labelSelector: `velero.io/backup-name=${nab.status?.veleroBackup?.name}`,
        })
      ).items.map((p) => `${p.spec.volume}: ${p.status?.phase} ${(p.status?.message ?? '').slice(0, 200)}`);
    const volumes = await eventually(
      async () => {
        const o = await user.get<NonAdminBackup>(NonAdminBackupCrd.type, 'one-fails', ns);
        const counts = o?.status?.fileSystemPodVolumeBackups;
        return counts?.failures?.length === 1 ? counts : undefined;
      },
      { what: 'the volume Velero could not back up in the NonAdminBackup status', timeoutMs: 30_000 },
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}; Velero's PodVolumeBackups: ${(await veleroSays()).join(' | ')}`);
    });
    progress(`NonAdminBackup with a failing volume: ${JSON.stringify(volumes)}`);
    expect(volumes).toMatchObject({ total: 2, completed: 1, inProgress: 0, new: 0 });
    const failure = volumes.failures![0]!;
    expect(failure.name).toBe(`${pod.metadata.name}/deep`);
    // Velero v1.18 ends the data path of a volume it cannot read as Canceled, and says why only in its
    // node-agent's log; the tenant's status names the volume and what Velero's object says.
    expect(failure.message).toMatch(/^canceled by Velero: |file name too long/);
    expect(failure.message.length).toBeLessThanOrEqual(1024);
    // One PodVolumeBackup per volume: the readable one completed, the other is the one named.
    expect(await backedUpVolumes(nab)).toEqual(['data', 'deep']);
  }, 600_000);

  it("keeps a tenant's Pod out of the object store: unsigned requests get S3's AccessDenied", async () => {
    // The store holds every tenant's backups and kopia repositories, and Pods reach its port: only
    // requests signed with Velero's keys are answered, so the checks below of what a tenant may do with
    // another's volume data are not decided by a listing anyone could make.
    const ns = await cluster.namespace('e2e-store-probe');
    const user = await tenantIn(cluster, ns, 'e2e-prober');
    const { s3Url, bucket } = installed!.velero;
    const probes = {
      list: `${s3Url}/${bucket}?list-type=2`,
      kopia: `${s3Url}/${bucket}/kopia/`,
      buckets: `${s3Url}/`,
    };
    for (const [name, url] of Object.entries(probes)) {
      await user.create(
        Resources.pods,
        testPod(ns, workloadImage, `probe-${name}`, ['get', url], { restartPolicy: 'Never' }),
      );
    }
    for (const name of Object.keys(probes)) {
      await podInPhase(user, ns, `probe-${name}`, 'Succeeded', 60_000);
      const log = await user.request<string>('GET', `/api/v1/namespaces/${ns}/pods/probe-${name}/log`, {
        text: true,
      });
      expect(log, name).toMatch(/^403 /);
      expect(log, name).toContain('<Code>AccessDenied</Code>');
      expect(log, name).not.toContain('<Key>');
    }
  });

  it('writes volume data only into claims the restore creates, never into one the tenant kept in place', async () => {
    // Velero writes a Pod's file-system backup as root, with kubelet's whole pods directory mounted,
    // following symlinks already in the target volume: a claim the tenant kept (and could have prepared)
    // must not receive it.
    const ns = await cluster.namespace('e2e-kept-claim');
    const user = await tenantIn(cluster, ns, 'e2e-keeper');
    await claim(user, ns, 'data');
    await dataStore(user, ns, 'store', ['2', '1', '1']);
    const before = await checksums(user, ns, 'store', 'the volume filled and summed');
    await backUp(user, ns, 'kept', { defaultVolumesToFsBackup: true });
    const nab = await completedBackup(cluster, ns, 'kept');
    expect(nab.status?.fileSystemPodVolumeBackups).toMatchObject({ total: 1, completed: 1 });
    // The Deployment goes; the claim stays.
    await user.delete(Resources.deployments, 'store', ns);
    await eventually(
      async () =>
        (await user.list(Resources.pods, { namespace: ns, labelSelector: 'app=store' })).items.length === 0,
      { what: 'the Pods gone', timeoutMs: 60_000 },
    );
    await restore(user, ns, 'into-kept', 'kept');
    const nar = await settledRestore(cluster, ns, 'into-kept');
    const refusals = new Map(
      (nar.status?.refusedItems?.items ?? []).map((i) => [`${i.kind}/${i.name}`, i] as const),
    );
    const refusal = refusals.get(`Pod/${before.pod.metadata.name}`);
    expect(refusal, JSON.stringify(nar.status)).toMatchObject({ reason: 'ExistingClaim' });
    expect(refusal?.message).toContain('claim data, which is not one this restore created');
    // Velero wrote nothing into any volume for this restore.
    const pvrs = await cluster.admin.list(VeleroResources.podVolumeRestores, {
      namespace: veleroNamespace,
      labelSelector: `velero.io/restore-name=${nar.status?.veleroRestore?.name}`,
    });
    expect(pvrs.items).toEqual([]);
    // The Deployment came back and its Pod runs on the kept claim, whose files are as they were.
    const after = await checksums(user, ns, 'store', 'the kept volume summed again');
    expect(files(after.log)).toEqual(files(before.log));
  }, 600_000);

  it('writes volume data only into the very claim the restore created, never into one the tenant put in its place', async () => {
    // The tenant races the restore: as soon as Velero creates claim `data`, it deletes it and creates its
    // own `data` (which it could have filled with a symlink), copying Velero's labels and annotations (the
    // restore's label and the guard's nonce included). Only the UID tells them apart.
    const ns = await cluster.namespace('e2e-swapped-claim');
    const user = await tenantIn(cluster, ns, 'e2e-swapper');
    await claim(user, ns, 'data');
    await dataStore(user, ns, 'store', ['2', '1', '1']);
    const before = await checksums(user, ns, 'store', 'the volume filled and summed');
    // Many ConfigMaps, restored between the claims and the Pods, widen the tenant's window.
    for (let i = 0; i < 150; i++) {
      await user.create(Resources.configMaps, {
        metadata: { name: `filler-${i}`, namespace: ns },
        data: { i: String(i) },
      } as KubeObject);
    }
    await backUp(user, ns, 'swap', { defaultVolumesToFsBackup: true });
    await completedBackup(cluster, ns, 'swap');
    await user.delete(Resources.deployments, 'store', ns);
    await user.delete(Resources.persistentVolumeClaims, 'data', ns);
    await eventually(
      async () =>
        (await user.list(Resources.pods, { namespace: ns, labelSelector: 'app=store' })).items.length === 0 &&
        !(await user.get(Resources.persistentVolumeClaims, 'data', ns)),
      { what: 'the Pods and the claim gone', timeoutMs: 60_000 },
    );
    await restore(user, ns, 'swapped', 'swap');
    // Velero's claim, as the tenant sees it.
    const velerosClaim = await eventually(
      () => user.get<Claim>(Resources.persistentVolumeClaims, 'data', ns),
      {
        what: "Velero's claim created",
        intervalMs: 20,
        timeoutMs: 300_000,
      },
    );
    await user.delete(Resources.persistentVolumeClaims, 'data', ns);
    await eventually(async () => !(await user.get(Resources.persistentVolumeClaims, 'data', ns)), {
      what: "Velero's claim gone",
      intervalMs: 20,
      timeoutMs: 30_000,
    });
    const { labels, annotations } = velerosClaim.metadata;
    const ours = await user.create<Claim>(Resources.persistentVolumeClaims, {
      metadata: { name: 'data', namespace: ns, labels, annotations },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } as Claim);
    expect(ours.metadata.annotations?.['tenantkit.io/restore-claim-nonce']).toBeTruthy();

    const nar = await settledRestore(cluster, ns, 'swapped');
    const refusal = (nar.status?.refusedItems?.items ?? []).find(
      (i) => i.kind === 'Pod' && i.name === before.pod.metadata.name,
    );
    expect(refusal, JSON.stringify(nar.status)).toMatchObject({ reason: 'ExistingClaim' });
    expect(refusal?.message).toContain('claim data, which is not one this restore created');
    // Velero wrote nothing into any volume for this restore.
    const pvrs = await cluster.admin.list(VeleroResources.podVolumeRestores, {
      namespace: veleroNamespace,
      labelSelector: `velero.io/restore-name=${nar.status?.veleroRestore?.name}`,
    });
    expect(pvrs.items).toEqual([]);
  }, 900_000);

  it('brings a deleted namespace back with its volume data: the backup comes back to the namespace made again', async () => {
    const ns = await organizationNamespace(cluster, owner, { prefix: 'e2e-lost' });
    const user = owner.client;
    await claim(user, ns, 'data');
    await dataStore(user, ns, 'store', ['4', '1', '8']);
    const before = await checksums(user, ns, 'store', 'the volume filled and summed');
    await backUp(user, ns, 'nightly', { defaultVolumesToFsBackup: true });
    const nab = await completedBackup(cluster, ns, 'nightly');
    const veleroBackup = nab.status?.veleroBackup?.name;
    expect(nab.status?.fileSystemPodVolumeBackups).toMatchObject({ total: 1, completed: 1 });

    // The namespace deleted (here by the admin), with everything in it: the Deployment, the claim and its
    // volume, the NonAdminBackup (whose Velero Backup object goes too; its data stays in the bucket).
    await cluster.admin.delete(Resources.namespaces, ns);
    await eventually(async () => !(await cluster.admin.get(Resources.namespaces, ns)), {
      what: `namespace ${ns} gone`,
      timeoutMs: 180_000,
    });

    // The tenant makes it again in their organization. Velero's bucket sync brings the Backup back, and
    // tenantkit's backup sync gives the namespace its NonAdminBackup as soon as both are there.
    await organizationNamespace(cluster, owner, { prefix: 'e2e-lost', name: ns });
    const synced = await eventually(
      async () => {
        const nabs = await user.list<NonAdminBackup>(NonAdminBackupCrd.type, {
          namespace: ns,
          labelSelector: `${Labels.syncedFrom}=${veleroBackup}`,
        });
        return nabs.items[0];
      },
      { what: 'the NonAdminBackup synced into the namespace made again', timeoutMs: 120_000 },
    );
    const name = synced.metadata.name!;
    await completedBackup(cluster, ns, name);

    await restore(user, ns, 'back', name);
    const nar = await completedRestore(cluster, ns, 'back');
    expect(nar.status?.fileSystemPodVolumeRestores).toMatchObject({ total: 1, completed: 1, failed: 0 });
    const after = await checksums(user, ns, 'store', 'the restored volume summed');
    expect(files(after.log)).toEqual(files(before.log));
    expect(files(after.log)).toHaveLength(6);
  }, 600_000);

  it("holds the admin's volume policies for every tenant: skip by class and size, never or always file by file, the uploader", async () => {
    const ns = await cluster.namespace('e2e-policy');
    const user = await tenantIn(cluster, ns, 'e2e-owner');
    // A second class of the same provisioner, for scratch data the admin does not keep.
    const scratchClass = cluster.unique('scratch');
    await cluster.admin.create(Resources.storageClasses, {
      // `local` volumes, as the default class makes (Velero skips hostPath ones).
      metadata: { name: scratchClass, annotations: { defaultVolumeType: 'local' } },
      provisioner: 'rancher.io/local-path',
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Delete',
    } as KubeObject);
    cluster.defer(() => cluster.admin.delete(Resources.storageClasses, scratchClass));
    // Velero's volume policies, in ConfigMaps in Velero's namespace (only the admin writes there).
    const policies = {
      'skip-scratch-and-big': [
        `- conditions: {storageClass: [${scratchClass}]}`,
        '  action: {type: skip}',
        "- conditions: {capacity: '10Gi,'}",
        '  action: {type: skip}',
      ],
      never: ['- conditions: {}', '  action: {type: skip}'],
      always: ['- conditions: {}', '  action: {type: fs-backup}'],
    };
    for (const [name, rules] of Object.entries(policies)) {
      await cluster.admin.create(Resources.configMaps, {
        metadata: { name: `volumes-${name}`, namespace: veleroNamespace },
        data: { 'policy.yaml': ['version: v1', 'volumePolicies:', ...rules].join('\n') },
      } as KubeObject);
    }
    const policy = (name: string) => ({ kind: 'configmap', name: `volumes-${name}` });
    /**
     * The admin enforces `enforceBackupSpec`; resolves once the webhooks admit the enforced resource
     * policy from a tenant (refused under any other, or no, enforcement).
     */
    const enforce = async (
      enforceBackupSpec: { resourcePolicy: { name: string } } & Record<string, unknown>,
    ) => {
      await applyBackupPolicy(cluster, { veleroNamespace, enforceBackupSpec } as NonAdminPolicy);
      const probe = { resourcePolicy: enforceBackupSpec.resourcePolicy };
      await eventually(async () => (await outcome(backUp(user, ns, 'probe', probe, true))) === 'created', {
        what: `the webhooks enforcing ${enforceBackupSpec.resourcePolicy.name}`,
      });
    };
    cluster.defer(() => applyBackupPolicy(cluster, { veleroNamespace }));

    // The tenant's Pod mounts three claims: one to keep, one of the scratch class, one of 20 GiB (the
    // local provisioner does not hold a claim to its size). It asks for all three file by file.
    await claim(user, ns, 'keep');
    await claim(user, ns, 'scratch', '1Gi', scratchClass);
    await claim(user, ns, 'big', '20Gi');
    const volumes = ['big', 'keep', 'scratch'];
    await user.create(
      Resources.deployments,
      testDeployment(
        ns,
        'three',
        {
          containers: [mounted('main', ['sleep', '3600'], volumes)],
          volumes: volumes.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
          terminationGracePeriodSeconds: 1,
        },
        { 'backup.velero.io/backup-volumes': volumes.join(',') },
      ),
    );
    await eventually(
      async () =>
        (await user.list<Pod>(Resources.pods, { namespace: ns, labelSelector: 'app=three' })).items.some(
          (p) => p.status?.phase === 'Running',
        ),
      { what: 'the Pod with three claims running', timeoutMs: 120_000 },
    );
    /** What the tenant's NonAdminBackup `name` (with `spec`) backed up file by file. */
    const backedUp = async (name: string, spec: Record<string, unknown> = {}) => {
      await eventually(async () => (await outcome(backUp(user, ns, name, spec))) === 'created', {
        what: `NonAdminBackup ${name} admitted`,
      });
      const nab = await completedBackup(cluster, ns, name);
      expect(nab.status?.fileSystemPodVolumeBackups?.total ?? 0).toBe((await backedUpVolumes(nab)).length);
      return backedUpVolumes(nab);
    };
    expect(await backedUp('asked')).toEqual(volumes);

    // Skip by StorageClass and by size, and file by file by default: a tenant cannot opt out of it.
    await enforce({ defaultVolumesToFsBackup: true, resourcePolicy: policy('skip-scratch-and-big') });
    await eventually(
      async () =>
        (await outcome(backUp(user, ns, 'opt-out', { defaultVolumesToFsBackup: false }))).includes(
          'defaultVolumesToFsBackup',
        ),
      { what: 'a tenant opting out of file-system backup refused' },
    );
    expect(await outcome(backUp(user, ns, 'own-policy', { resourcePolicy: policy('always') }))).toContain(
      'resourcePolicy',
    );
    expect(await backedUp('skipping')).toEqual(['keep']);

    // Never: no volume data leaves the cluster, whatever the Pod's opt-in annotation asks.
    await enforce({ resourcePolicy: policy('never') });
    expect(await backedUp('never')).toEqual([]);

    // Always, even when the tenant's spec and Pod opt out; and the uploader's settings are the admin's.
    await user.patch(Resources.deployments, 'three', ns, {
      spec: {
        template: {
          metadata: {
            annotations: {
              'backup.velero.io/backup-volumes': null,
              'backup.velero.io/backup-volumes-excludes': volumes.join(','),
            },
          },
        },
      },
    });
    await eventually(
      async () => {
        const pods = await user.list<Pod>(Resources.pods, { namespace: ns, labelSelector: 'app=three' });
        return (
          pods.items.length === 1 &&
          pods.items[0]!.status?.phase === 'Running' &&
          pods.items[0]!.metadata.annotations?.['backup.velero.io/backup-volumes-excludes'] !== undefined
        );
      },
      { what: 'the Pod opting out of file-system backup running alone', timeoutMs: 120_000 },
    );
    await enforce({ resourcePolicy: policy('always'), uploaderConfig: { parallelFilesUpload: 2 } });
    await eventually(
      async () =>
        (await outcome(backUp(user, ns, 'greedy', { uploaderConfig: { parallelFilesUpload: 64 } }))).includes(
          'uploaderConfig',
        ),
      { what: "a tenant's own uploader settings refused" },
    );
    expect(await backedUp('always', { defaultVolumesToFsBackup: false })).toEqual(volumes);
    const always = await completedBackup(cluster, ns, 'always');
    const backup = await cluster.admin.get<KubeObject & { spec: { uploaderConfig?: unknown } }>(
      VeleroResources.backups,
      always.status!.veleroBackup!.name!,
      veleroNamespace,
    );
    expect(backup?.spec.uploaderConfig).toEqual({ parallelFilesUpload: 2 });
    // Nothing enforced for the tests after this one (the cleanup does it too, should this test fail).
    await applyBackupPolicy(cluster, { veleroNamespace });
  }, 600_000);

  it("never lets a tenant reach another tenant's volume data: not by naming it in a claim, nor through a backup or a restore", async () => {
    const ours = await cluster.namespace('e2e-ours');
    const theirs = await cluster.namespace('e2e-theirs');
    const alice = await tenantIn(cluster, ours, 'e2e-alice');
    const mallory = await tenantIn(cluster, theirs, 'e2e-mallory');
    await claim(alice, ours, 'data');
    await dataStore(alice, ours, 'store', ['2', '1', '1']);
    await checksums(alice, ours, 'store', "alice's volume filled");
    await backUp(alice, ours, 'mine', { defaultVolumesToFsBackup: true });
    const mine = await completedBackup(cluster, ours, 'mine');
    const bound = await cluster.admin.get<Claim>(Resources.persistentVolumeClaims, 'data', ours);
    const volume = bound!.spec.volumeName!;

    // A claim naming alice's volume is refused (tenancy's claim-volume policy: it is not reserved for it).
    expect(
      await outcome(
        mallory.create(Resources.persistentVolumeClaims, {
          metadata: { name: 'stolen', namespace: theirs },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: '1Gi' } },
            volumeName: volume,
            storageClassName: bound!.spec.storageClassName,
          },
        } as KubeObject),
      ),
    ).toContain(`spec.volumeName "${volume}" names a PersistentVolume that is not reserved for this claim`);
    // Nor may mallory read the volume itself (cluster-scoped), nor alice's backup or its Velero objects.
    await expect(mallory.get(Resources.persistentVolumes, volume)).rejects.toThrow(/forbidden/i);
    await expect(mallory.get(NonAdminBackupCrd.type, 'mine', ours)).rejects.toThrow(/forbidden/i);
    await expect(
      mallory.list(VeleroResources.podVolumeBackups, { namespace: veleroNamespace }),
    ).rejects.toThrow(/forbidden/i);

    // A restore in mallory's namespace from alice's backup, by its name or by its Velero Backup's name.
    for (const [name, backupName] of [
      ['by-name', 'mine'],
      ['by-velero-name', mine.status!.veleroBackup!.name!],
    ] as const) {
      await restore(mallory, theirs, name, backupName);
      const refused = await eventually(
        async () => {
          const nar = await mallory.get<
            KubeObject & { status?: { phase?: string; conditions?: { message?: string }[] } }
          >(NonAdminRestoreCrd.type, name, theirs);
          return nar?.status?.phase === 'BackingOff' ? nar : undefined;
        },
        { what: `mallory's restore ${name} refused` },
      );
      expect(refused.status?.conditions?.map((c) => c.message).join('\n')).toContain(
        `"${backupName}" is not a NonAdminBackup in namespace ${theirs}`,
      );
    }
    // A backup of mallory's namespace may not reach into alice's.
    expect(
      await outcome(
        backUp(mallory, theirs, 'reach', { includedNamespaces: [ours], defaultVolumesToFsBackup: true }),
      ),
    ).toContain('includedNamespaces');

    // Alice's volume is still alice's.
    const pv = await cluster.admin.get<
      KubeObject & { spec: { claimRef?: { namespace?: string; name?: string } } }
    >(Resources.persistentVolumes, volume);
    expect(pv?.spec.claimRef).toMatchObject({ namespace: ours, name: 'data' });
  }, 600_000);
});
