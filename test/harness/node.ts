// The local node for a test file: kubelet, containerd, runc, the CNI bridge and kube-proxy joined to the
// shared control plane, with the scheduler and the controllers that Pods need. Started by the files that
// need real Pods (root only: `nodeSkipReason` says why a file is skipped otherwise) and stopped at their
// end, which also puts the machine back as it was.
import { join } from 'node:path';
import { expect } from 'vitest';
import { type LocalNode, nodeUnavailable, startNode } from '../../devenv/node/launch.ts';
import type { TestCluster } from './cluster.ts';

/** Why this run has no node (printed once), or undefined. */
export const nodeSkipReason = nodeUnavailable();
if (nodeSkipReason) console.warn(`[node] skipped: ${nodeSkipReason}`);

export async function startTestNode(
  cluster: TestCluster,
  options: { networkPolicies?: boolean } = {},
): Promise<LocalNode> {
  return startNode(
    {
      server: cluster.server,
      caPem: cluster.caPemText,
      issue: (request) => cluster.issueCertificate(request),
      admin: cluster.admin,
    },
    {
      dir: join(cluster.dir, 'node'),
      progress: (line) => console.log(`[node] ${line}`),
      networkPolicies: options.networkPolicies ?? false,
    },
  );
}

/**
 * For afterAll: the file's cleanups first (while kubelet still ends the Pods of the namespaces they
 * delete), then the node, and the machine must be as it was.
 */
export async function stopTestNode(cluster: TestCluster | undefined, node: LocalNode | undefined) {
  await cluster?.cleanup();
  const left = await node?.stop();
  expect(left ?? [], 'what the node could not put back on the machine').toEqual([]);
}
