// What the benches that need tenantkit's CRDs, Velero's and (as root) the local node share: a control
// plane of their own with the CRDs installed, the node joined to it when it can run here, Velero on the
// node with its node-agent, a tenant's store of known data on a claim, and the teardown that leaves the
// machine as it was.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat, statfs, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type ControlPlane, startControlPlane } from '../devenv/controlplane/launch.ts';
import { ensurePostgresImage, ensureTenantkitImage, ensureVeleroImage } from '../devenv/images/build.ts';
import { type LocalNode, nodeUnavailable, startNode } from '../devenv/node/launch.ts';
import { ensureNodeNetwork, nodeIP } from '../devenv/node/network.ts';
import { ensureVeleroBinaries, type VeleroBinaries } from '../devenv/velero/build.ts';
import { startVelero, type Velero, veleroCrds } from '../devenv/velero/launch.ts';
import { allCrds } from '../src/crds/index.ts';
import { crdManifest } from '../src/crds/schema.ts';
import { KubeClient } from '../src/kube/client.ts';
import { installCrds } from '../src/kube/crds.ts';
import { type KubeObject, Resources } from '../src/kube/resources.ts';

const progress = (line: string) => console.error(line);

/** Ends the process (exit 2) saying why, when the local node cannot run here. */
export function requireNode(bench: string): void {
  const unavailable = nodeUnavailable();
  if (!unavailable) return;
  console.error(`${bench} needs the local node: ${unavailable}`);
  process.exit(2);
}

/**
 * The node with tenantkit's image and the bundled database's, built here and imported (there is no
 * registry); returns the chart values that point at them, and tenantkit's image reference.
 */
export async function importChartImages(node: LocalNode): Promise<{ values: string[]; tenantkit: string }> {
  const image = await ensureTenantkitImage({ progress });
  const postgres = await ensurePostgresImage({ progress });
  for (const built of [image, postgres]) await node.importImage(built);
  const [repository, tag] = image.ref.split(/:(?=[^:]+$)/);
  const [dbRepository, dbTag] = postgres.ref.split(/:(?=[^:]+$)/);
  const values = [
    `image.repository=${repository}`,
    `image.tag=${tag}`,
    `search.database.bundled.image.repository=${dbRepository}`,
    `search.database.bundled.image.tag=${dbTag}`,
  ];
  return { values, tenantkit: image.ref };
}

/** `helm install` of `chart` as the benches run it: waited for (10 minutes at most), each value a --set. */
export const helmInstallArgs = (release: string, chart: string, namespace: string, settings: string[]) => [
  'install',
  release,
  chart,
  '-n',
  namespace,
  '--create-namespace',
  '--wait',
  '--timeout',
  '10m',
  ...settings.flatMap((s) => ['--set', s]),
];

export interface BenchCluster {
  dir: string;
  cp: ControlPlane;
  admin: KubeClient;
  veleroBinaries: VeleroBinaries;
  /** The local node, when `node` was asked for and it can run here. */
  node?: LocalNode;
  /** Why there is no node (not asked for, or not possible here). */
  noNode?: string;
  /**
   * Stops etcd, kube-apiserver and kube-controller-manager and starts them again on the same data and
   * ports (the node and everything on it keep running); `cp` is the new one after it.
   */
  restartControlPlane(): Promise<void>;
  /**
   * Mounts a file system of `mib` MiB (a tmpfs) at `path`, made if missing, so that a run can fill it;
   * stop() unmounts it.
   */
  limitDisk(path: string, mib: number): Promise<void>;
  /** Stops the node (saying what it could not put back), the control plane, the bridge; removes the dir. */
  stop(): Promise<void>;
}

/** A control plane with tenantkit's and Velero's CRDs, and the local node if `node` and possible. */
export async function startBenchCluster(options: {
  node: boolean;
  /** Extra kube-apiserver flags (sizing, audit). */
  apiserverFlags?: string[];
  /** The node's volumes (the default StorageClass) on a file system of this size (see NodeOptions). */
  nodeVolumesMiB?: number;
  /** kubelet's longest crash back-off (see NodeOptions); its default 300 s. */
  maxRestartBackOffSeconds?: number;
}): Promise<BenchCluster> {
  const noNode = options.node ? nodeUnavailable() : 'not asked for';
  const dir = await mkdtemp(join(tmpdir(), 'tenantkit-bench-'));
  const network = noNode ? undefined : await ensureNodeNetwork();
  const veleroBinaries = await ensureVeleroBinaries(progress);
  const start = () =>
    startControlPlane({
      dir,
      ...(network ? { address: nodeIP } : {}),
      unsafeNoFsync: true,
      ...(options.apiserverFlags ? { apiserverFlags: options.apiserverFlags } : {}),
      progress,
      beforeControllers: async (kubeconfig) =>
        installCrds(KubeClient.fromKubeconfig({ yaml: kubeconfig }), [
          ...allCrds.map((d) => crdManifest(d) as unknown as KubeObject),
          ...(await veleroCrds(veleroBinaries.velero)),
        ]),
    });
  const cp = await start();
  const mounts: string[] = [];
  const admin = KubeClient.fromKubeconfig({ yaml: cp.adminKubeconfig });
  const node = network
    ? await startNode(
        { server: cp.server, caPem: cp.caPem, issue: cp.issue, admin },
        {
          dir: join(dir, 'node'),
          progress,
          ...(options.nodeVolumesMiB ? { volumesMiB: options.nodeVolumesMiB } : {}),
          ...(options.maxRestartBackOffSeconds
            ? { maxRestartBackOffSeconds: options.maxRestartBackOffSeconds }
            : {}),
        },
      )
    : undefined;
  const cluster: BenchCluster = {
    dir,
    cp,
    admin,
    veleroBinaries,
    node,
    noNode,
    async restartControlPlane() {
      await cluster.cp.stop();
      cluster.cp = await start();
    },
    async limitDisk(path, mib) {
      await mkdir(path, { recursive: true });
      await run('mount', ['-t', 'tmpfs', '-o', `size=${mib}m`, 'tenantkit-bench-disk', path]);
      mounts.push(path);
    },
    async stop() {
      if (node) {
        const left = await node.stop();
        if (left.length > 0) console.error(`the node left behind: ${left.join(', ')}`);
      }
      await cluster.cp.stop();
      await network?.release();
      for (const path of mounts.reverse()) await run('umount', ['-l', path]).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

/** Velero in `namespace` with its node-agent on the node (the image built here and imported). */
export async function startVeleroOnNode(
  bench: BenchCluster,
  node: LocalNode,
  namespace: string,
  options: { concurrentBackups?: number } = {},
): Promise<Velero> {
  const image = await ensureVeleroImage({ progress });
  await node.importImage(image);
  return startVelero({
    kubeconfigPath: bench.cp.adminKubeconfigPath,
    namespace,
    dir: join(bench.dir, `velero-${namespace}`),
    progress,
    onNode: { image: image.ref, address: node.ip, kubeletDir: node.kubeletDir },
    concurrentBackups: options.concurrentBackups,
  });
}

const run = promisify(execFile);

/**
 * Fills the file system of `dir` to its last byte with one file (a full disk); `release` removes it.
 * Resolves with the bytes it took.
 */
export async function fillDisk(dir: string): Promise<{ bytes: number; release(): Promise<void> }> {
  const file = join(dir, `.tenantkit-bench-fill-${process.pid}`);
  // dd writes until the disk refuses (ENOSPC, its non-zero exit); a second one takes what others freed.
  for (let pass = 0; pass < 2; pass++) {
    await run('dd', ['if=/dev/zero', `of=${file}`, 'bs=1M', 'oflag=append', 'conv=notrunc'], {
      maxBuffer: 1 << 20,
    }).catch(() => {});
  }
  const bytes = (await stat(file)).size;
  const { bavail } = await statfs(dir);
  if (bavail > 0) throw new Error(`${dir} still has ${bavail} free blocks after filling it`);
  return { bytes, release: () => unlink(file).catch(() => {}) };
}

export async function poll<T>(probe: () => Promise<T | undefined>, pollMs = 100): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** The fill arguments for `size` MiB: 8 files of 1/16 of it and one of half of it. */
export const fillArgs = (size: number) => ['8', String(size / 16), String(size / 2)];

/**
 * A Deployment `store` in `ns` whose init container fills a claim `data` with `size` MiB of known,
 * incompressible bytes; its main container prints every file's SHA-256 (see {@link storeSums}).
 */
export async function deployStore(admin: KubeClient, node: LocalNode, ns: string, size: number) {
  await admin.create(Resources.persistentVolumeClaims, {
    metadata: { name: 'data', namespace: ns },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: `${2 * size}Mi` } } },
  } as KubeObject);
  const container = (name: string, args: string[]) => ({
    name,
    image: node.workloadImage,
    imagePullPolicy: 'IfNotPresent',
    args,
    volumeMounts: [{ name: 'data', mountPath: '/data' }],
  });
  await admin.create(Resources.deployments, {
    metadata: { name: 'store', namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'store' } },
      template: {
        metadata: { labels: { app: 'store' } },
        spec: {
          initContainers: [container('fill', ['fill', '/data/known', ...fillArgs(size)])],
          containers: [container('main', ['sums', '/data/known', 'then', 'sleep', '36000'])],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
          terminationGracePeriodSeconds: 1,
        },
      },
    },
  } as KubeObject);
}

/** The checksum lines the store's Pod in `ns` printed, once it is Running and printed them. */
export function storeSums(admin: KubeClient, ns: string): Promise<string> {
  return poll(async () => {
    const pods = await admin.list<KubeObject & { status?: { phase?: string } }>(Resources.pods, {
      namespace: ns,
      labelSelector: 'app=store',
    });
    const pod = pods.items.find((p) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp);
    if (!pod) return undefined;
    const log = await admin
      .request<string>('GET', `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}/log?container=main`, {
        text: true,
      })
      .catch(() => '');
    if (!/^\d+ files, \d+ bytes$/m.test(log)) return undefined;
    return log
      .split('\n')
      .filter((l) => /^[0-9a-f]{64} {2}/.test(l))
      .join('\n');
  }, 250);
}
