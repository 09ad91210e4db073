// What kubelet's summary API says of the Pods of one namespace: each Pod's working set, named by the
// component the chart gave it (Pods of one Deployment share a prefix).
import type { KubeClient } from '../src/kube/client.ts';

interface Summary {
  pods?: {
    podRef: { name: string; namespace: string };
    memory?: { workingSetBytes?: number };
  }[];
}

export interface PodStats {
  /** `component (pod name)`. */
  name: string;
  pod: string;
  component: string;
  workingSetMiB: number;
}

/** The component the chart named a Pod for: its name without the release prefix and the replica suffixes. */
export const componentOf = (pod: string, release: string) =>
  pod.replace(new RegExp(`^${release}-`), '').replace(/(-[a-z0-9]{8,10})?-[a-z0-9]{5}$|-\d+$/, '');

export async function podStats(
  admin: KubeClient,
  node: string,
  namespace: string,
  release: string,
): Promise<PodStats[]> {
  const summary = await admin.request<Summary>('GET', `/api/v1/nodes/${node}/proxy/stats/summary`);
  return (summary.pods ?? [])
    .filter((p) => p.podRef.namespace === namespace)
    .map((p) => {
      const component = componentOf(p.podRef.name, release);
      return {
        name: `${component} (${p.podRef.name})`,
        pod: p.podRef.name,
        component,
        workingSetMiB: (p.memory?.workingSetBytes ?? 0) / 2 ** 20,
      };
    });
}

/** Working set (MiB) of each Pod in `namespace`, keyed `component (pod name)`. */
export async function podMemory(
  admin: KubeClient,
  node: string,
  namespace: string,
  release: string,
): Promise<Map<string, number>> {
  const stats = await podStats(admin, node, namespace, release);
  return new Map(stats.map((s) => [s.name, s.workingSetMiB]));
}
