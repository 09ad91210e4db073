// Pods on the local node for tests that act as a tenant: a Pod of the node's workload image, a wait for
// its phase, and the two tenancy pod policies seen on a running Pod (the run-once deadline, the default
// node selector), shared by the node test (webhooks in the test process) and the e2e test (the chart's).
import { expect } from 'vitest';
import type { LocalNode } from '../../devenv/node/launch.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { eventually } from './cluster.ts';

export interface Pod extends KubeObject {
  spec: {
    nodeName?: string;
    nodeSelector?: Record<string, string>;
    activeDeadlineSeconds?: number;
    [key: string]: unknown;
  };
  status?: {
    phase?: string;
    reason?: string;
    podIP?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

/** The annotations a tenant sets on their namespace for a run-once deadline and a default node selector. */
export const podPolicyAnnotations = (nodeName: string, deadlineSeconds = 3) => ({
  'appuio.io/active-deadline-seconds-override': String(deadlineSeconds),
  'appuio.io/default-node-selector': `kubernetes.io/hostname=${nodeName}`,
});

/** A Pod of `image` running `args` (the image's entrypoint is a busybox-like multi-call binary). */
export function testPod(
  namespace: string,
  image: string,
  name: string,
  args: string[],
  spec: Record<string, unknown> = {},
): Pod {
  return {
    metadata: { name, namespace, labels: { app: name } },
    spec: {
      containers: [{ name: 'main', image, imagePullPolicy: 'IfNotPresent', args }],
      terminationGracePeriodSeconds: 1,
      ...spec,
    },
  };
}

/** A Deployment of one replica whose Pods (label `app: name`, and `annotations`) have `podSpec`. */
export function testDeployment(
  namespace: string,
  name: string,
  podSpec: Record<string, unknown>,
  annotations?: Record<string, string>,
): KubeObject {
  const labels = { app: name };
  return {
    metadata: { name, namespace },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: { metadata: { labels, ...(annotations ? { annotations } : {}) }, spec: podSpec },
    },
  } as KubeObject;
}

/** The Pod once it reached `wanted`, as `client` reads it. */
export function podInPhase(
  client: KubeClient,
  namespace: string,
  name: string,
  wanted: string,
  timeoutMs = 30_000,
) {
  return eventually(
    async () => {
      const p = await client.get<Pod>(Resources.pods, name, namespace);
      return p?.status?.phase === wanted ? p : undefined;
    },
    { what: `pod ${namespace}/${name} ${wanted}`, timeoutMs },
  );
}

/**
 * A run-once Pod of the tenant in a namespace with podPolicyAnnotations(): admitted with the deadline,
 * then ended by kubelet (which counts it from the Pod's start) on the node.
 */
export async function expectRunOnceDeadline(
  tenant: KubeClient,
  namespace: string,
  image: string,
  nodeName: string,
) {
  const name = 'run-once';
  const created = await tenant.create<Pod>(
    Resources.pods,
    testPod(namespace, image, name, ['sleep', '3600'], { restartPolicy: 'Never' }),
  );
  expect(created.spec.activeDeadlineSeconds).toBe(3);
  const ended = await podInPhase(tenant, namespace, name, 'Failed', 60_000);
  expect(ended.spec.nodeName).toBe(nodeName);
  expect(ended.status?.reason).toBe('DeadlineExceeded');
}

/** A Pod of the tenant gets the namespace's default node selector and runs on that node. */
export async function expectDefaultNodeSelector(
  tenant: KubeClient,
  namespace: string,
  image: string,
  nodeName: string,
) {
  const name = 'selected';
  const created = await tenant.create<Pod>(
    Resources.pods,
    testPod(namespace, image, name, ['sleep', '3600']),
  );
  expect(created.spec.nodeSelector).toEqual({ 'kubernetes.io/hostname': nodeName });
  expect((await podInPhase(tenant, namespace, name, 'Running', 60_000)).spec.nodeName).toBe(nodeName);
}

/**
 * What `client`'s one-shot Pod `name` in `namespace` got trying `url` (tk-workload's `get`, which gives
 * up after 10 s): its end phase and its log. For connections tried as a tenant from inside the cluster.
 */
export async function fetchFromPod(
  client: KubeClient,
  namespace: string,
  image: string,
  name: string,
  url: string,
): Promise<{ phase?: string; log: string }> {
  await client.create(
    Resources.pods,
    testPod(namespace, image, name, ['get', url], { restartPolicy: 'Never', activeDeadlineSeconds: 60 }),
  );
  const ended = await eventually(
    async () => {
      const p = await client.get<Pod>(Resources.pods, name, namespace);
      return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
    },
    { what: `pod ${namespace}/${name} ended`, timeoutMs: 90_000 },
  );
  const log = await client.request<string>('GET', `/api/v1/namespaces/${namespace}/pods/${name}/log`, {
    text: true,
  });
  return { phase: ended.status?.phase, log };
}

/** How tk-workload's `get` says that no answer came: the packets were dropped. */
export const connectionDropped = /Client\.Timeout|deadline exceeded/;

/**
 * Waits until kube-proxy on `node` routes Service `namespace/name` to `count` Pods: a client Pod started
 * before that is refused (no endpoints yet), however Ready the server Pods are.
 */
export function serviceRouted(
  node: Pick<LocalNode, 'serviceEndpoints'>,
  namespace: string,
  name: string,
  count = 1,
) {
  return eventually(
    async () => {
      const endpoints = await node.serviceEndpoints(namespace, name);
      if (endpoints.length >= count) return endpoints;
      throw new Error(
        `kube-proxy routes it to ${endpoints.length} of ${count} Pods (${endpoints.join(', ') || 'none'})`,
      );
    },
    { what: `Service ${namespace}/${name} routed by kube-proxy`, timeoutMs: 60_000 },
  );
}
