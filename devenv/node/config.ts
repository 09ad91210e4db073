// The local node's configuration files: certificates and kubeconfigs for its components, containerd's
// config, the CNI network, KubeletConfiguration, KubeProxyConfiguration and the flags of the scheduler and
// the controller-manager loops Pods need. Everything is written under the node's folder.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeClient } from '../../src/kube/client.ts';
import { freePort } from '../../src/ports.ts';
import type { IssueRequest, KeyPair } from '../../src/serving/certs.ts';
import { renderKubeconfig } from '../controlplane/kubeconfig.ts';
import { clusterDNS, clusterDomain } from './addons.ts';
import type { NodeBinaries } from './build.ts';
import { nodeBridge, nodeIP, nodeName, podCgroupRoot, podSubnet } from './network.ts';

/** What the node's components need of the cluster: its address and CA, certificates from it, an admin client. */
export interface NodeClusterAccess {
  server: string;
  caPem: string;
  /** Issues a certificate from the cluster CA (client identities of the node's components, kubelet's serving certificate). */
  issue(request: IssueRequest): Promise<KeyPair>;
  admin: KubeClient;
}

export interface NodeFiles {
  containerdConfig: string;
  containerdSocket: string;
  kubeletArgs: string[];
  kubeProxyConfig: string;
  schedulerArgs: string[];
  controllerManagerArgs: string[];
}

/** The loops of kube-controller-manager that Pods, workloads, volumes and Services need. */
const nodeControllers = [
  'deployment-controller',
  'replicaset-controller',
  'statefulset-controller',
  'daemonset-controller',
  'job-controller',
  'cronjob-controller',
  'ttl-after-finished-controller',
  'disruption-controller',
  'endpoints-controller',
  'endpointslice-controller',
  'endpointslice-mirroring-controller',
  'replicationcontroller-controller',
  'pod-garbage-collector-controller',
  'node-lifecycle-controller',
  'taint-eviction-controller',
  'persistentvolume-binder-controller',
  'persistentvolume-attach-detach-controller',
  'persistentvolume-expander-controller',
  'persistentvolumeclaim-protection-controller',
  'persistentvolume-protection-controller',
  'ephemeral-volume-controller',
  'ttl-controller',
];

/** containerd's CRI and API socket under the node's folder. */
export const containerdSocketPath = (dir: string) => join(dir, 'containerd', 'containerd.sock');

/**
 * containerd's NRI socket under the node's folder, when NRI is on: the NetworkPolicy enforcer learns each
 * Pod's address from the runtime as its sandbox starts, before the Pod can send a packet (the API server
 * hears of it later, and a packet from an address nobody knows yet would match no policy's peers).
 */
export const nriDir = (dir: string) => join(dir, 'nri');

export async function writeNodeFiles(
  cluster: NodeClusterAccess,
  dir: string,
  binaries: NodeBinaries,
  options: { nri?: boolean; maxRestartBackOffSeconds?: number } = {},
): Promise<NodeFiles> {
  const pki = join(dir, 'pki');
  const state = join(dir, 'containerd');
  await mkdir(pki, { recursive: true, mode: 0o700 });
  await mkdir(join(dir, 'cni', 'net.d'), { recursive: true });
  const caFile = join(pki, 'ca.crt');
  await writeFile(caFile, cluster.caPem);
  const kubeconfig = async (component: string, user: string, groups: string[] = []) => {
    const pair = await cluster.issue({
      commonName: user,
      organizations: groups,
      usage: 'client',
      validDays: 30,
    });
    const path = join(pki, `${component}.kubeconfig`);
    const yaml = renderKubeconfig({
      server: cluster.server,
      caPem: cluster.caPem,
      user,
      credentials: { clientCertPem: pair.certPem, clientKeyPem: pair.keyPem },
    });
    await writeFile(path, yaml, { mode: 0o600 });
    return path;
  };
  const serving = await cluster.issue({
    commonName: `system:node:${nodeName}`,
    organizations: ['system:nodes'],
    usage: 'server',
    dnsNames: [nodeName],
    ipAddresses: [nodeIP],
    validDays: 30,
  });
  await writeFile(join(pki, 'kubelet.crt'), serving.certPem);
  await writeFile(join(pki, 'kubelet.key'), serving.keyPem, { mode: 0o600 });

  const containerdSocket = containerdSocketPath(dir);
  const containerdConfig = join(dir, 'containerd.toml');
  await writeFile(
    containerdConfig,
    containerdToml(state, containerdSocket, dir, binaries, options.nri ?? false),
  );
  await writeFile(
    join(dir, 'cni', 'net.d', '10-tenantkit.conflist'),
    JSON.stringify(cniConfig(dir), null, 2),
  );

  const kubeletConfig = join(dir, 'kubelet.json');
  await writeFile(
    kubeletConfig,
    JSON.stringify(
      {
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        // These machines run cgroup v1, which kubelet 1.35 refuses unless told otherwise.
        failCgroupV1: false,
        cgroupDriver: 'cgroupfs',
        cgroupRoot: `/${podCgroupRoot}`,
        containerRuntimeEndpoint: `unix://${containerdSocket}`,
        address: nodeIP,
        port: await freePort(),
        readOnlyPort: 0,
        healthzPort: 0,
        authentication: {
          anonymous: { enabled: false },
          webhook: { enabled: true },
          x509: { clientCAFile: caFile },
        },
        authorization: { mode: 'Webhook' },
        tlsCertFile: join(pki, 'kubelet.crt'),
        tlsPrivateKeyFile: join(pki, 'kubelet.key'),
        podLogsDir: join(dir, 'pod-logs'),
        clusterDNS: [clusterDNS],
        clusterDomain,
        failSwapOn: false,
        serializeImagePulls: false,
        // Images come from archives, never a registry: nothing may collect them.
        imageGCHighThresholdPercent: 100,
        imageGCLowThresholdPercent: 99,
        evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
        nodeStatusReportFrequency: '10s',
        // kubelet's longest wait before it restarts a crashed container (KubeletCrashLoopBackOffMax, on by
        // default since 1.35); its own default is 300 s.
        ...(options.maxRestartBackOffSeconds
          ? { crashLoopBackOff: { maxContainerRestartPeriod: `${options.maxRestartBackOffSeconds}s` } }
          : {}),
      },
      null,
      2,
    ),
  );
  const kubeletArgs = [
    `--config=${kubeletConfig}`,
    `--kubeconfig=${await kubeconfig('kubelet', `system:node:${nodeName}`, ['system:nodes'])}`,
    `--root-dir=${kubeletRootDir(dir)}`,
    `--hostname-override=${nodeName}`,
    `--node-ip=${nodeIP}`,
  ];

  const kubeProxyConfig = join(dir, 'kube-proxy.json');
  await writeFile(
    kubeProxyConfig,
    JSON.stringify(
      {
        apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
        kind: 'KubeProxyConfiguration',
        clientConnection: { kubeconfig: await kubeconfig('kube-proxy', 'system:kube-proxy') },
        mode: 'nftables',
        hostnameOverride: nodeName,
        clusterCIDR: podSubnet,
        healthzBindAddress: '',
        metricsBindAddress: '',
        nodePortAddresses: [`${nodeIP}/32`],
        // Zero leaves the machine's conntrack settings as they are.
        conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
      },
      null,
      2,
    ),
  );
  const schedulerArgs = [
    `--kubeconfig=${await kubeconfig('kube-scheduler', 'system:kube-scheduler')}`,
    '--leader-elect=false',
    '--secure-port=0',
  ];
  const controllerManagerArgs = [
    `--kubeconfig=${await kubeconfig('kube-controller-manager', 'system:kube-controller-manager')}`,
    `--controllers=${nodeControllers.join(',')}`,
    '--use-service-account-credentials=true',
    `--root-ca-file=${caFile}`,
    '--leader-elect=false',
    '--secure-port=0',
  ];
  return {
    containerdConfig,
    containerdSocket,
    kubeletArgs,
    kubeProxyConfig,
    schedulerArgs,
    controllerManagerArgs,
  };
}

function containerdToml(
  state: string,
  socket: string,
  dir: string,
  binaries: NodeBinaries,
  nri: boolean,
): string {
  const q = (s: string) => JSON.stringify(s);
  const disabled = [
    ...(nri ? [] : ['io.containerd.nri.v1.nri']),
    'io.containerd.tracing.processor.v1.otlp',
    'io.containerd.internal.v1.tracing',
  ];
  const nriSection = nri
    ? `
[plugins.'io.containerd.nri.v1.nri']
  disable = false
  socket_path = ${q(join(nriDir(dir), 'nri.sock'))}
  plugin_path = ${q(join(nriDir(dir), 'plugins'))}
  plugin_config_path = ${q(join(nriDir(dir), 'conf.d'))}
`
    : '';
  return `version = 3
root = ${q(join(state, 'root'))}
state = ${q(join(state, 'state'))}
disabled_plugins = ${JSON.stringify(disabled)}
${nriSection}
[grpc]
  address = ${q(socket)}

[ttrpc]
  address = ${q(`${socket}.ttrpc`)}

[plugins.'io.containerd.internal.v1.opt']
  path = ${q(join(state, 'opt'))}

[plugins.'io.containerd.cri.v1.runtime']
  # root here lacks CAP_SYS_RESOURCE: a sandbox may only raise its own oom_score_adj.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  cdi_spec_dirs = []

  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"

    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = ${q(join(binaries.binDir, 'runc'))}
        SystemdCgroup = false

  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [${q(binaries.cniDir)}]
    conf_dir = ${q(join(dir, 'cni', 'net.d'))}

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"

  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = ${q(binaries.workloadImage.ref)}

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`;
}

function cniConfig(dir: string) {
  return {
    cniVersion: '1.0.0',
    name: 'tenantkit',
    plugins: [
      {
        type: 'bridge',
        bridge: nodeBridge,
        isGateway: true,
        // No masquerading: Pods reach this machine and each other, nothing beyond it.
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          dataDir: join(dir, 'cni', 'ipam'),
          ranges: [[{ subnet: podSubnet, rangeStart: '10.244.0.10', gateway: nodeIP }]],
          routes: [{ dst: '0.0.0.0/0' }],
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

/** kubelet's root directory for a node kept in `dir`. */
export const kubeletRootDir = (dir: string) => join(dir, 'kubelet');
