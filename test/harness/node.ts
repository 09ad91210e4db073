// The local node for a test file: kubelet, containerd, runc, the CNI bridge and kube-proxy joined to the
// shared control plane, with the scheduler and the controllers that Pods need. Started by the files that
// need real Pods (root only: `nodeSkipReason` says why a file is skipped otherwise) and stopped at their
// end, which also puts the machine back as it was.
import { join } from 'node:path';
import { type LocalNode, nodeUnavailable, startNode } from '../../src/controlplane/node-launch.ts';
import type { TestCluster } from './cluster.ts';

/** Why this run has no node (printed once), or undefined. */
export const nodeSkipReason = nodeUnavailable();
if (nodeSkipReason) console.warn(`[node] skipped: ${nodeSkipReason}`);

export async function startTestNode(cluster: TestCluster): Promise<LocalNode> {
  return startNode(
    {
      server: cluster.server,
      caPem: cluster.caPemText,
      issue: (request) => cluster.issueCertificate(request),
      admin: cluster.admin,
    },
    { dir: join(cluster.dir, 'node'), progress: (line) => console.log(`[node] ${line}`) },
  );
}
