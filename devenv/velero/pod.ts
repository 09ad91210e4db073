// Velero as `velero install` runs it, for a cluster with a node: a ServiceAccount bound to cluster-admin
// (Velero backs up and restores anything), the credentials Secret mounted as a file, and the `velero`
// Deployment from the image built here (devenv/images/build.ts: plugins in /plugins). Restores also
// read this Deployment for the image of their helper containers. With `kubeletDir`, also the `node-agent`
// DaemonSet (`velero install --use-node-agent`): file-system backups and restores of Pods' volumes, read
// from kubelet's pods directory; it starts the data-path Pods of each volume from its own template.
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources, type ResourceType } from '../../src/kube/resources.ts';

export const veleroPodLabels = { component: 'velero', deploy: 'velero' };
const selector = 'deploy=velero';

export interface VeleroPodSpec {
  namespace: string;
  image: string;
  /** `velero server`'s flags (after `server`). */
  serverArgs: string[];
  credentialsSecret: string;
  /** Default 1. */
  replicas?: number;
  /** kubelet's root directory on the node: with it, the node-agent DaemonSet is made too. */
  kubeletDir?: string;
}

/** The ClusterRoleBinding's name: one per Velero namespace, so several Veleros never share one. */
export const veleroBindingName = (namespace: string) => `velero-${namespace}`;

export function veleroPodObjects(spec: VeleroPodSpec): { type: ResourceType; object: KubeObject }[] {
  const { namespace } = spec;
  const labels = veleroPodLabels;
  return [
    { type: Resources.serviceAccounts, object: { metadata: { name: 'velero', namespace, labels } } },
    {
      type: Resources.clusterRoleBindings,
      object: {
        metadata: { name: veleroBindingName(namespace), labels },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name: 'velero', namespace }],
      } as KubeObject,
    },
    { type: Resources.deployments, object: veleroDeployment(spec) },
    ...(spec.kubeletDir
      ? [{ type: Resources.daemonSets, object: nodeAgentDaemonSet({ ...spec, kubeletDir: spec.kubeletDir }) }]
      : []),
  ];
}

/** What the Velero server and its node-agent share: Velero's namespace, scratch space, credentials. */
const veleroEnv = (namespace: string) => [
  { name: 'VELERO_SCRATCH_DIR', value: '/scratch' },
  { name: 'VELERO_NAMESPACE', value: namespace },
  { name: 'HOME', value: '/scratch' },
  { name: 'TMPDIR', value: '/scratch' },
  { name: 'AWS_SHARED_CREDENTIALS_FILE', value: '/credentials/cloud' },
  { name: 'AWS_EC2_METADATA_DISABLED', value: 'true' },
];
const veleroMounts = [
  { name: 'scratch', mountPath: '/scratch' },
  { name: 'credentials', mountPath: '/credentials', readOnly: true },
];
const veleroVolumes = (credentialsSecret: string) => [
  { name: 'scratch', emptyDir: {} },
  { name: 'credentials', secret: { secretName: credentialsSecret } },
];

export const nodeAgentLabels = { component: 'velero', name: 'node-agent', role: 'node-agent' };

/**
 * The node-agent DaemonSet. It reads every Pod's volumes, so it runs as root (not privileged, default
 * capabilities), with kubelet's pods directory at /host_pods in a volume named `host-pods`: Velero finds
 * the directory's path on the node by that name, for the data-path Pods it starts (they inherit this
 * template's image, service account, environment and volumes).
 */
export function nodeAgentDaemonSet(spec: VeleroPodSpec & { kubeletDir: string }): KubeObject {
  const { namespace, kubeletDir } = spec;
  const toContainer = 'HostToContainer';
  return {
    metadata: { name: 'node-agent', namespace, labels: nodeAgentLabels },
    spec: {
      selector: { matchLabels: { name: 'node-agent' } },
      template: {
        metadata: { labels: nodeAgentLabels },
        spec: {
          serviceAccountName: 'velero',
          terminationGracePeriodSeconds: 5,
          securityContext: { runAsUser: 0, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'node-agent',
              image: spec.image,
              imagePullPolicy: 'IfNotPresent',
              command: ['/velero'],
              args: ['node-agent', 'server', '--log-format=text'],
              env: [
                { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                ...veleroEnv(namespace),
              ],
              volumeMounts: [
                { name: 'host-pods', mountPath: '/host_pods', mountPropagation: toContainer },
                {
                  name: 'host-plugins',
                  mountPath: '/var/lib/kubelet/plugins',
                  mountPropagation: toContainer,
                },
                ...veleroMounts,
              ],
              securityContext: { allowPrivilegeEscalation: false, privileged: false },
              resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '1Gi' } },
            },
          ],
          volumes: [
            { name: 'host-pods', hostPath: { path: `${kubeletDir}/pods` } },
            { name: 'host-plugins', hostPath: { path: `${kubeletDir}/plugins` } },
            ...veleroVolumes(spec.credentialsSecret),
          ],
        },
      },
    },
  } as KubeObject;
}

/** The `velero` Deployment alone (what restores read for their helper image). */
export function veleroDeployment(spec: VeleroPodSpec): KubeObject {
  const { namespace } = spec;
  const labels = veleroPodLabels;
  return {
    metadata: { name: 'velero', namespace, labels },
    spec: {
      replicas: spec.replicas ?? 1,
      selector: { matchLabels: { deploy: 'velero' } },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: 'velero',
          terminationGracePeriodSeconds: 5,
          securityContext: {
            runAsNonRoot: true,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'velero',
              image: spec.image,
              imagePullPolicy: 'IfNotPresent',
              command: ['/velero'],
              args: ['server', ...spec.serverArgs],
              env: veleroEnv(namespace),
              volumeMounts: veleroMounts,
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
              resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '1Gi' } },
            },
          ],
          volumes: veleroVolumes(spec.credentialsSecret),
        },
      },
    },
  } as KubeObject;
}

interface PodState extends KubeObject {
  status?: {
    phase?: string;
    containerStatuses?: { state?: Record<string, { reason?: string; message?: string }> }[];
  };
}

/** The Velero Pod's phase and container state in a few words, for a wait that did not end well. */
export async function veleroPodState(client: KubeClient, namespace: string): Promise<string> {
  const pods = await client.list<PodState>(Resources.pods, { namespace, labelSelector: selector });
  if (pods.items.length === 0) return 'no Velero Pod yet';
  return pods.items
    .map((p) => {
      const state = p.status?.containerStatuses?.[0]?.state ?? {};
      const detail = Object.entries(state)
        .map(([k, v]) => `${k}${v.reason ? ` ${v.reason}` : ''}${v.message ? `: ${v.message}` : ''}`)
        .join(', ');
      return `Pod ${p.metadata.name} ${p.status?.phase ?? 'Unknown'}${detail ? ` (${detail})` : ''}`;
    })
    .join('; ');
}

/** The log of the Velero Pod (or the node-agent's: `role=node-agent`), or an empty string when there is none. */
export async function veleroPodLog(
  client: KubeClient,
  namespace: string,
  labelSelector = selector,
): Promise<string> {
  const pods = await client.list<KubeObject>(Resources.pods, { namespace, labelSelector });
  const name = pods.items[0]?.metadata.name;
  if (!name) return '';
  return client
    .request<string>('GET', `/api/v1/namespaces/${namespace}/pods/${name}/log`, { text: true })
    .catch(() => '');
}

/** Removes what veleroPodObjects made and resolves once no Velero Pod (server or node-agent) is left. */
export async function removeVeleroPod(client: KubeClient, namespace: string, timeoutMs = 60_000) {
  await client.delete(Resources.deployments, 'velero', namespace).catch(() => {});
  await client.delete(Resources.daemonSets, 'node-agent', namespace).catch(() => {});
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pods = await client.list<KubeObject>(Resources.pods, {
      namespace,
      labelSelector: 'component=velero',
    });
    if (pods.items.length === 0 || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  await client.delete(Resources.clusterRoleBindings, veleroBindingName(namespace)).catch(() => {});
}
