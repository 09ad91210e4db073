// The release's Pods as the faults hit them: found by component, the controllers' leader by its Lease,
// killed (SIGKILL of the container's processes on the node) or deleted (the API), and waited for.
import { setTimeout as sleep } from 'node:timers/promises';
import { killContainer } from '../../devenv/node/launch.ts';
import { PatchType } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import type { World } from './model.ts';

export interface Pod extends KubeObject {
  status?: {
    phase?: string;
    podIP?: string;
    containerStatuses?: { name: string; ready?: boolean; containerID?: string; restartCount?: number }[];
  };
}

interface Workload extends KubeObject {
  spec: { replicas?: number };
  status?: {
    readyReplicas?: number;
    updatedReplicas?: number;
    replicas?: number;
    observedGeneration?: number;
  };
}

/** The release's live Pods of one component (`app.kubernetes.io/component`). */
export async function componentPods(
  world: World,
  component: string,
  options: { terminating?: boolean } = {},
): Promise<Pod[]> {
  const pods = await world.admin.list<Pod>(Resources.pods, {
    namespace: world.namespace,
    labelSelector: `app.kubernetes.io/instance=${world.release},app.kubernetes.io/component=${component}`,
  });
  return options.terminating ? pods.items : pods.items.filter((p) => !p.metadata.deletionTimestamp);
}

/** The controllers' Pod that holds their Lease now. */
export async function leaderPod(world: World): Promise<Pod> {
  for (let waited = 0; ; waited += 250) {
    const lease = await world.admin.get<KubeObject & { spec?: { holderIdentity?: string } }>(
      Resources.leases,
      'tenantkit-controllers',
      world.namespace,
    );
    const holder = lease?.spec?.holderIdentity;
    const pod = holder
      ? (await componentPods(world, 'controllers')).find((p) => holder.startsWith(p.metadata.name!))
      : undefined;
    if (pod) return pod;
    if (waited > 60_000) throw new Error(`no controller Pod holds the Lease (holder: ${holder ?? 'none'})`);
    await sleep(250);
  }
}

/** How a Pod is ended: its container's processes SIGKILLed (it restarts in place), or the Pod deleted. */
export type Ending = 'SIGKILL' | 'delete';

/** Ends `pod` the given way; says what it did. */
export async function endPod(world: World, pod: Pod, how: Ending, container?: string): Promise<string> {
  const name = pod.metadata.name!;
  if (how === 'delete') {
    await world.admin.delete(Resources.pods, name, pod.metadata.namespace);
    return `deleted Pod ${name}`;
  }
  const status = pod.status?.containerStatuses?.find((c) => !container || c.name === container);
  const id = status?.containerID?.replace(/^[a-z]+:\/\//, '');
  if (!id) throw new Error(`Pod ${name} has no running container ${container ?? ''} to kill`);
  const killed = await killContainer(id);
  return `SIGKILL to ${killed} process(es) of ${name}/${status?.name}`;
}

/** Resolves once the component's Deployment or StatefulSet has all its replicas ready and updated. */
export async function allReady(world: World, component: string, timeoutMs = 180_000): Promise<void> {
  const name = `${world.release}-${component}`;
  const started = Date.now();
  for (;;) {
    const w =
      (await world.admin.get<Workload>(Resources.deployments, name, world.namespace)) ??
      (await world.admin.get<Workload>(Resources.statefulSets, name, world.namespace));
    const want = w?.spec.replicas ?? 1;
    const s = w?.status;
    // A change not yet seen by the Deployment controller: its counts are of the old Pods.
    const seen = (s?.observedGeneration ?? 0) >= (w?.metadata.generation ?? 0);
    const pods = await componentPods(world, component);
    const podsReady = pods.filter((p) => p.status?.containerStatuses?.every((c) => c.ready)).length;
    if (seen && s?.readyReplicas === want && (s.updatedReplicas ?? want) === want && podsReady === want)
      return;
    if (Date.now() - started > timeoutMs) {
      throw new Error(`${name}: ${s?.readyReplicas ?? 0} of ${want} ready after ${timeoutMs / 1000} s`);
    }
    await sleep(200);
  }
}

/**
 * Sets variables in the controllers' container (the failpoints some faults need; src/kube/failpoint.ts)
 * and waits until the Pods that have them are all ready.
 */
export async function setControllersEnv(world: World, env: Record<string, string>): Promise<void> {
  const name = `${world.release}-controllers`;
  await world.admin.patch(
    Resources.deployments,
    name,
    world.namespace,
    {
      spec: {
        template: {
          spec: {
            containers: [
              { name: 'controllers', env: Object.entries(env).map(([n, value]) => ({ name: n, value })) },
            ],
          },
        },
      },
    },
    PatchType.strategic,
  );
  await allReady(world, 'controllers');
}
