// Velero as `velero install` runs it, for a cluster with a node: a ServiceAccount bound to cluster-admin
// (Velero backs up and restores anything), the credentials Secret mounted as a file, and the `velero`
// Deployment from the image built here (src/controlplane/images.ts: plugins in /plugins). Restores also
// read this Deployment for the image of their helper containers.
import type { KubeClient } from '../kube/client.ts';
import { type KubeObject, Resources, type ResourceType } from '../kube/resources.ts';

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
  ];
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
              env: [
                { name: 'VELERO_SCRATCH_DIR', value: '/scratch' },
                { name: 'VELERO_NAMESPACE', value: namespace },
                { name: 'HOME', value: '/scratch' },
                { name: 'TMPDIR', value: '/scratch' },
                { name: 'AWS_SHARED_CREDENTIALS_FILE', value: '/credentials/cloud' },
                { name: 'AWS_EC2_METADATA_DISABLED', value: 'true' },
              ],
              volumeMounts: [
                { name: 'scratch', mountPath: '/scratch' },
                { name: 'credentials', mountPath: '/credentials', readOnly: true },
              ],
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
              resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '1Gi' } },
            },
          ],
          volumes: [
            { name: 'scratch', emptyDir: {} },
            { name: 'credentials', secret: { secretName: spec.credentialsSecret } },
          ],
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

/** The log of the Velero Pod (all of it), or an empty string when there is none. */
export async function veleroPodLog(client: KubeClient, namespace: string): Promise<string> {
  const pods = await client.list<KubeObject>(Resources.pods, { namespace, labelSelector: selector });
  const name = pods.items[0]?.metadata.name;
  if (!name) return '';
  return client
    .request<string>('GET', `/api/v1/namespaces/${namespace}/pods/${name}/log`, { text: true })
    .catch(() => '');
}

/** Removes what veleroPodObjects made and resolves once no Velero Pod is left. */
export async function removeVeleroPod(client: KubeClient, namespace: string, timeoutMs = 60_000) {
  await client.delete(Resources.deployments, 'velero', namespace).catch(() => {});
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pods = await client.list<KubeObject>(Resources.pods, { namespace, labelSelector: selector });
    if (pods.items.length === 0 || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  await client.delete(Resources.clusterRoleBindings, veleroBindingName(namespace)).catch(() => {});
}
