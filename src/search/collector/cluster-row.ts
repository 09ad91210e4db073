// The row that stands for the cluster itself, as ACM keeps one per cluster: uid `cluster__<name>`, kind
// `Cluster`, typed as ManagedClusterInfo (`internal.open-cluster-management.io`, `managedclusterinfos`)
// so RBAC on that resource governs it, with the Kubernetes version and node totals. The collector keeps
// per-node numbers only (a few per node), never the Node objects.
import type { IndexedResource } from '../model.ts';

export const clusterRowGroup = 'internal.open-cluster-management.io';
export const clusterRowPlural = 'managedclusterinfos';

export const clusterRowUid = (cluster: string) => `cluster__${cluster}`;

export class ClusterRow {
  private readonly cluster: string;
  private readonly hub: boolean;
  private readonly nodes = new Map<string, { cpu: number; memory: number }>();
  kubernetesVersion: string | undefined;

  constructor(cluster: string, hub: boolean) {
    this.cluster = cluster;
    this.hub = hub;
  }

  /** Records a node's capacity (from its index row); returns whether the totals changed. */
  setNode(uid: string, data: Record<string, unknown>): boolean {
    const cpu = typeof data.cpu === 'number' ? data.cpu : 0;
    const memory = typeof data.memoryCapacity === 'number' ? data.memoryCapacity : 0;
    const before = this.nodes.get(uid);
    this.nodes.set(uid, { cpu, memory });
    return before?.cpu !== cpu || before.memory !== memory;
  }

  removeNode(uid: string): boolean {
    return this.nodes.delete(uid);
  }

  /** After a complete list of nodes: forgets the ones not in it. */
  keepNodes(uids: Set<string>): boolean {
    let changed = false;
    for (const uid of [...this.nodes.keys()]) {
      if (!uids.has(uid)) changed = this.nodes.delete(uid) || changed;
    }
    return changed;
  }

  resource(): IndexedResource {
    let cpu = 0;
    let memory = 0;
    for (const n of this.nodes.values()) {
      cpu += n.cpu;
      memory += n.memory;
    }
    return {
      uid: clusterRowUid(this.cluster),
      data: {
        kind: 'Cluster',
        kind_plural: clusterRowPlural,
        apigroup: clusterRowGroup,
        apiversion: 'v1beta1',
        name: this.cluster,
        ...(this.kubernetesVersion ? { kubernetesVersion: this.kubernetesVersion } : {}),
        nodes: this.nodes.size,
        cpu,
        memory: `${Math.round(memory / 2 ** 20)}Mi`,
        ...(this.hub ? { _hubClusterResource: true } : {}),
      },
      edges: [],
    };
  }
}
