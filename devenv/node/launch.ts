// Starts a real node on this machine for a running control plane: containerd and runc with the CNI bridge
// (Pod network 10.244.0.0/16 on the bridge tk-node0, which also carries the node's address), kubelet,
// kube-proxy (nftables), kube-scheduler and the kube-controller-manager loops that a cluster with Pods
// needs. Everything it writes lives in one folder; what it must change on the machine itself (sysctls,
// netfilter rules, links, mounts, cgroups, fixed folders) is snapshotted first and put back on stop.
// It needs root: `nodeUnavailable()` says in one line why it cannot run otherwise.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { ensureControlPlaneBinary, type Progress } from '../controlplane/build.ts';
import { type GroupProcess, spawnGroup } from '../controlplane/process-group.ts';
import {
  type AddonObject,
  clusterDNS,
  corednsObjects,
  defaultStorageClass,
  installAddons,
  localPathObjects,
  uninstallAddons,
} from './addons.ts';
import { ensureNodeBinaries, type NodeBinaries, type NodeImage } from './build.ts';
import {
  containerdSocketPath,
  kubeletRootDir,
  type NodeClusterAccess,
  nriDir,
  writeNodeFiles,
} from './config.ts';

export type { NodeClusterAccess } from './config.ts';

import {
  cgroupHierarchies,
  cgroupProcesses,
  forgetHost,
  type HostState,
  hostDifferences,
  processAlive,
  readHost,
  readHostRecord,
  recordHost,
  removeTree,
  restoreHost,
} from './host.ts';
import { networkPolicyObjects } from './netpol-addon.ts';
import { ensureNetworkPolicyEnforcer } from './netpol-build.ts';
import { ensureNodeNetwork, nodeIP, nodeName, podCgroupRoot, serviceEndpoints } from './network.ts';

const run = promisify(execFile);

/** The cgroup roots of everything the node runs: Pods (kubelet's cgroupRoot) and containerd with its shims. */
const runtimeCgroupRoot = 'tenantkit-runtime';
export const nodeCgroupRoots = [podCgroupRoot, runtimeCgroupRoot];

/** Why this process cannot run the node, or undefined when it can. */
export function nodeUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `the local node needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) {
    return 'the local node needs root (kubelet, containerd and the Pod network change the machine); run as root to get real Pods';
  }
  for (const tool of ['ip', 'nft', 'iptables', 'umount']) {
    if (!['/usr/sbin', '/sbin', '/usr/bin', '/bin'].some((d) => existsSync(join(d, tool)))) {
      return `the local node needs \`${tool}\` (Debian: apt-get install iproute2 nftables iptables mount)`;
    }
  }
  return undefined;
}

/** What the node needs from the control plane it joins. */
export interface NodeOptions {
  /** Holds containerd's and kubelet's data, the configs and the logs; removed on stop. */
  dir: string;
  progress?: Progress;
  /**
   * Enforce NetworkPolicies (and AdminNetworkPolicies) on the node with kube-network-policies; without
   * it, as with a CNI bridge alone, policies are stored but no packet is dropped.
   */
  networkPolicies?: boolean;
  /**
   * Puts the volumes of the default StorageClass on a file system of this size (a tmpfs, unmounted on
   * stop), so that a run can fill it (a full disk); without it they share the machine's disk.
   */
  volumesMiB?: number;
  /**
   * kubelet's longest crash back-off (1 to 300 s; its default 300): a run that kills the same container
   * again and again (the fault bench) sets it low, so that each restart measures the component, not
   * kubelet's waiting.
   */
  maxRestartBackOffSeconds?: number;
}

export interface LocalNode {
  name: string;
  ip: string;
  binaries: NodeBinaries;
  /** The image every test Pod can use (imported into containerd; `imagePullPolicy: IfNotPresent`). */
  workloadImage: string;
  logDir: string;
  /** Where the default StorageClass (local-path) makes its volumes' folders. */
  volumesDir: string;
  /** kubelet's root directory: Pods' volumes are under `pods/<uid>/volumes/` (Velero's node-agent reads them). */
  kubeletDir: string;
  /**
   * The `IP/PORT` endpoints kube-proxy routes a Service's cluster IP to on this node now (empty until its
   * rules are written): what a client Pod will reach, as the API's EndpointSlices cannot tell.
   */
  serviceEndpoints(namespace: string, service: string): Promise<string[]>;
  /** Imports an image archive into containerd, for Pods that name its reference (no registry here). */
  importImage(image: NodeImage): Promise<void>;
  /** The machine as it was before the node started. */
  hostBefore: HostState;
  /**
   * Restarts the node as a power cut would: kubelet, kube-proxy, containerd and every container end at
   * once (SIGKILL), then containerd, kubelet and kube-proxy start again on the same data, and kubelet
   * brings the node's Pods back. Resolves when the Node is Ready again.
   */
  restart(): Promise<void>;
  /** Stops every process, removes the Node, and puts the machine back; resolves with what could not be undone. */
  stop(): Promise<string[]>;
}

export async function startNode(cluster: NodeClusterAccess, options: NodeOptions): Promise<LocalNode> {
  const unavailable = nodeUnavailable();
  if (unavailable) throw new Error(unavailable);
  const progress = options.progress ?? (() => {});
  const [controlplane, binaries, enforcer] = await Promise.all([
    ensureControlPlaneBinary(progress),
    ensureNodeBinaries(progress),
    options.networkPolicies ? ensureNetworkPolicyEnforcer(progress) : undefined,
  ]);
  await recoverKilledNode(progress);
  const hostBefore = await readHost(nodeCgroupRoots);
  await recordHost(hostBefore);
  const dir = options.dir;
  const logDir = join(dir, 'logs');
  await mkdir(logDir, { recursive: true });
  const processes: { name: string; process: GroupProcess }[] = [];
  let stopped: Promise<string[]> | undefined;
  const addons: AddonObject[] = [
    // First: everything after it runs under its rules.
    ...(enforcer ? await networkPolicyObjects(enforcer, nriDir(dir)) : []),
    ...corednsObjects(binaries.corednsImage.ref),
    ...localPathObjects(binaries.localPathImage.ref, binaries.workloadImage.ref, join(dir, 'volumes')),
  ];
  if (options.volumesMiB) {
    // After the host's snapshot: stop (restoreHost) unmounts it like every mount the node made.
    await mkdir(join(dir, 'volumes'), { recursive: true });
    await run('mount', [
      '-t',
      'tmpfs',
      '-o',
      `size=${options.volumesMiB}m,mode=0755`,
      'tenantkit-volumes',
      join(dir, 'volumes'),
    ]);
  }
  const importImage = async (image: NodeImage) => {
    await run(join(binaries.binDir, 'ctr'), [
      `--address=${containerdSocketPath(dir)}`,
      '--namespace=k8s.io',
      'images',
      'import',
      image.archive,
    ]);
  };
  const node: LocalNode = {
    name: nodeName,
    importImage,
    serviceEndpoints,
    ip: nodeIP,
    binaries,
    workloadImage: binaries.workloadImage.ref,
    logDir,
    kubeletDir: kubeletRootDir(dir),
    volumesDir: join(dir, 'volumes'),
    hostBefore,
    restart: () => restart(),
    stop: () => {
      stopped ??= stopNode(cluster, dir, processes, hostBefore, addons);
      return stopped;
    },
  };
  const spawn = (name: string, binary: string, args: string[], env?: NodeJS.ProcessEnv) => {
    // A restarted process appends to its log.
    const p = spawnGroup(binary, args, { logFile: join(logDir, `${name}.log`), ...(env ? { env } : {}) });
    processes.push({ name, process: p });
    return p;
  };
  let files: Awaited<ReturnType<typeof writeNodeFiles>> | undefined;
  /** containerd (in the runtime cgroup, which its shims inherit), ready for requests. */
  const startContainerd = async () => {
    // A socket left by a containerd that was killed would look ready before this one listens.
    await rm(files!.containerdSocket, { force: true });
    const containerd = spawn(
      'containerd',
      join(binaries.binDir, 'containerd'),
      ['--config', files!.containerdConfig],
      {
        ...process.env,
        PATH: `${binaries.binDir}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
      },
    );
    // Its shims inherit this cgroup, so stop finds every process the runtime started.
    await joinCgroup(runtimeCgroupRoot, containerd.child.pid);
    await waitFor('containerd', () => existsSync(files!.containerdSocket), containerd, logDir);
  };
  const startKubelet = () => {
    const kubelet = spawn('kubelet', controlplane, ['kubelet', ...files!.kubeletArgs]);
    spawn('kube-proxy', controlplane, ['kube-proxy', `--config=${files!.kubeProxyConfig}`]);
    return kubelet;
  };
  const restart = async () => {
    if (stopped) throw new Error('the node was stopped');
    const agents = new Set(['kubelet', 'kube-proxy', 'containerd']);
    const ending = processes.filter((p) => agents.has(p.name));
    for (const p of ending) {
      try {
        process.kill(-p.process.child.pid!, 'SIGKILL');
      } catch {
        // Ended already.
      }
    }
    await killCgroups();
    await Promise.all(ending.map((p) => p.process.exited));
    for (const p of ending) processes.splice(processes.indexOf(p), 1);
    progress(`node ${nodeName} restarting: kubelet, kube-proxy, containerd and every container were killed`);
    const started = Date.now();
    await startContainerd();
    const kubelet = startKubelet();
    await waitFor('kubelet (Node Ready)', () => nodeReady(cluster.admin, started), kubelet, logDir, 120_000);
    progress(`node ${nodeName} Ready again ${Date.now() - started} ms after its restart`);
  };
  try {
    files = await writeNodeFiles(cluster, dir, binaries, {
      nri: enforcer !== undefined,
      ...(options.maxRestartBackOffSeconds
        ? { maxRestartBackOffSeconds: options.maxRestartBackOffSeconds }
        : {}),
    });
    await prepareHost();
    progress(
      `starting node ${nodeName} (${nodeIP}): containerd ${binaries.containerdVersion}, runc ${binaries.runcVersion}`,
    );
    await startContainerd();
    const images = [binaries.workloadImage, binaries.corednsImage, binaries.localPathImage];
    for (const image of enforcer ? [...images, enforcer.image] : images) {
      await importImage(image);
    }
    await grantApiserverKubeletAccess(cluster.admin);
    spawn('kube-controller-manager', controlplane, [
      'kube-controller-manager',
      ...files.controllerManagerArgs,
    ]);
    spawn('kube-scheduler', controlplane, ['kube-scheduler', ...files.schedulerArgs]);
    const kubelet = startKubelet();
    const started = Date.now();
    await waitFor('kubelet (Node Ready)', () => nodeReady(cluster.admin), kubelet, logDir, 120_000);
    progress(`node ${nodeName} Ready in ${Date.now() - started} ms (logs: ${logDir})`);
    await installAddons(cluster.admin, addons);
    progress(
      `cluster DNS (CoreDNS at ${clusterDNS}) and the default StorageClass ${defaultStorageClass} ready after ${Date.now() - started} ms${enforcer ? `; NetworkPolicies enforced by kube-network-policies ${enforcer.version}` : ''}`,
    );
    return node;
  } catch (err) {
    const problems = await node.stop().catch((e: Error) => [e.message]);
    if (problems.length) progress(`node cleanup after a failed start: ${problems.join('; ')}`);
    throw err;
  }
}

/**
 * The bridge with the node's address (unless the control plane's run made it already; then it stays
 * after the node stops) and the cgroup roots.
 */
async function prepareHost(): Promise<void> {
  await ensureNodeNetwork();
  for (const hierarchy of await cgroupHierarchies()) {
    for (const root of nodeCgroupRoots) await mkdir(join(hierarchy, root), { recursive: true });
  }
}

async function joinCgroup(root: string, pid: number | undefined): Promise<void> {
  if (pid === undefined) return;
  for (const hierarchy of await cgroupHierarchies()) {
    await writeFile(join(hierarchy, root, 'cgroup.procs'), String(pid)).catch(() => {
      // Not every hierarchy takes a process (e.g. a named one without tasks file rights); pids does.
    });
  }
}

/** kube-apiserver calls kubelet (logs, exec, port-forward) as this user; it may do that and no more. */
async function grantApiserverKubeletAccess(admin: KubeClient): Promise<void> {
  await admin.apply(
    Resources.clusterRoleBindings,
    {
      metadata: { name: 'tenantkit:apiserver-kubelet-client' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'system:kubelet-api-admin',
      },
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'kube-apiserver-kubelet-client' },
      ],
    } as KubeObject,
    { fieldManager: 'tenantkit-node' },
  );
}

/** Whether the Node is Ready (with a heartbeat since `since`, ms since the epoch, when given). */
async function nodeReady(admin: KubeClient, since = 0): Promise<boolean> {
  const node = await admin
    .get<
      KubeObject & {
        status?: { conditions?: { type: string; status: string; lastHeartbeatTime?: string }[] };
      }
    >(Resources.nodes, nodeName)
    .catch(() => undefined);
  const ready = node?.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True') return false;
  // Heartbeats have a resolution of a second.
  return Date.parse(ready.lastHeartbeatTime ?? '') >= Math.floor(since / 1000) * 1000;
}

async function waitFor(
  what: string,
  ready: () => boolean | Promise<boolean>,
  process: GroupProcess,
  logDir: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | undefined;
  void process.exited.then((code) => {
    exited = code;
  });
  while (Date.now() < deadline) {
    if (exited !== undefined) throw new Error(`${what} exited with code ${exited}; see ${logDir}`);
    if (await ready()) return;
    await sleep(100);
  }
  throw new Error(`${what} not ready after ${timeoutMs / 1000} s; see ${logDir}`);
}

/**
 * Stops kube-proxy, the scheduler, the controllers and kubelet, then every container and shim (by
 * cgroup) and containerd, removes the Node object and puts the machine back as `before` found it.
 */
async function stopNode(
  cluster: NodeClusterAccess,
  dir: string,
  processes: { name: string; process: GroupProcess }[],
  before: HostState,
  addons: AddonObject[],
): Promise<string[]> {
  const problems: string[] = [];
  // What the node installed in the cluster goes while kubelet can still end its Pods.
  if (processes.some((p) => p.name === 'kubelet')) {
    await uninstallAddons(cluster.admin, addons).catch((err: NodeJS.ErrnoException) => {
      // An API server already gone (Ctrl-C reaches the whole process group) has nothing left to remove
      // from; its data keeps the add-ons, which the next start applies again.
      if (err.code !== 'ECONNREFUSED') problems.push(`add-on removal: ${err.message}`);
    });
  }
  const containerd = processes.find((p) => p.name === 'containerd');
  for (const { name, process } of [...processes].reverse()) {
    if (name === 'containerd') continue;
    await process.stop(5_000).catch((err: Error) => problems.push(`${name}: ${err.message}`));
  }
  await killCgroups();
  await containerd?.process.stop(5_000).catch((err: Error) => problems.push(`containerd: ${err.message}`));
  await killCgroups();
  await cluster.admin.delete(Resources.nodes, nodeName).catch(() => {});
  problems.push(...(await restoreHost(before, nodeCgroupRoots)));
  await forgetHost();
  await removeTree(dir).catch((err: Error) => problems.push(`remove ${dir}: ${err.message}`));
  const left = hostDifferences(before, await readHost(nodeCgroupRoots));
  return [...problems, ...left];
}

/**
 * A node whose run was killed (no stop, so the machine still holds its sysctls, rules, mounts, cgroups
 * and possibly its processes) is put back before a new one starts, from the snapshot it recorded.
 */
async function recoverKilledNode(progress: Progress): Promise<void> {
  const previous = await readHostRecord();
  if (!previous) return;
  if (previous.pid !== process.pid && processAlive(previous.pid)) {
    throw new Error(
      `a local node started by process ${previous.pid} is running (one node per machine): stop it first (Ctrl-C in its terminal, or end that process)`,
    );
  }
  progress(
    `the local node of process ${previous.pid} did not stop (killed?): ending what it left running and putting the machine back`,
  );
  await killCgroups();
  const problems = await restoreHost(previous.before, nodeCgroupRoots);
  if (problems.length > 0) progress(`could not undo everything: ${problems.join('; ')}`);
  await forgetHost();
}

/**
 * SIGKILLs every process of one container, named by its runtime id (a Pod's `containerID` without its
 * `containerd://`), as a crash or the OOM killer would end it; kubelet then restarts it by the Pod's
 * restart policy. Resolves with the number of processes killed (0: the container was not running).
 */
export async function killContainer(containerId: string): Promise<number> {
  // kubelet's cgroupfs driver names a container's cgroup folder by its id, below its Pod's.
  const pids = await cgroupProcesses([podCgroupRoot], (folder) => basename(folder) === containerId);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Ended meanwhile.
    }
  }
  return pids.length;
}

/** SIGKILLs every process in the node's cgroups until none is left (containers, shims, pause). */
async function killCgroups(): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const pids = await cgroupProcesses(nodeCgroupRoots);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await sleep(100);
  }
}
