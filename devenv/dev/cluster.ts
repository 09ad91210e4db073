// The cluster `tenantkit dev` runs on: the local control plane (CRDs installed before its controllers start)
// and, where this machine can run one (root, Linux), the local node with network policies enforced.
import { join } from 'node:path';
import { allCrds } from '../../src/crds/index.ts';
import { crdManifest } from '../../src/crds/schema.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { installCrds } from '../../src/kube/crds.ts';
import type { KubeObject } from '../../src/kube/resources.ts';
import { type ControlPlane, startControlPlane } from '../controlplane/launch.ts';
import { type LocalNode, startNode } from '../node/launch.ts';
import { ensureNodeNetwork, nodeIP } from '../node/network.ts';
import { exampleTenants } from './seed.ts';

export interface DevCluster {
  controlPlane: ControlPlane;
  client: KubeClient;
  node: LocalNode | undefined;
  /** Stops the node (putting the machine back as it was) and the control plane. */
  stop(): Promise<void>;
}

export interface DevClusterOptions {
  dir: string;
  /** Why there is no node (`--no-node`, not root, ...), or undefined to start one. */
  noNode: string | undefined;
  say: (line: string) => void;
}

export async function startDevCluster({ dir, noNode, say }: DevClusterOptions): Promise<DevCluster> {
  const network = noNode ? undefined : await ensureNodeNetwork();
  const crds = allCrds.map((d) => crdManifest(d) as unknown as KubeObject);
  const controlPlane = await startControlPlane({
    dir,
    ...(network ? { address: nodeIP } : {}),
    tokenUsers: exampleTenants,
    progress: say,
    beforeControllers: (kubeconfig) => installCrds(KubeClient.fromKubeconfig({ yaml: kubeconfig }), crds),
  });
  const client = KubeClient.fromKubeconfig({ path: controlPlane.adminKubeconfigPath });
  let node: LocalNode | undefined;
  const stop = async () => {
    if (node) {
      const left = await node.stop();
      say(
        left.length
          ? `tenantkit dev: node stopped; could not undo: ${left.join('; ')}`
          : 'tenantkit dev: node stopped, machine as before',
      );
    }
    await controlPlane.stop();
    await network?.release();
    say('tenantkit dev: control plane stopped');
  };
  try {
    if (!noNode) {
      node = await startNode(
        { server: controlPlane.server, caPem: controlPlane.caPem, issue: controlPlane.issue, admin: client },
        // Organizations apart on the network, as TenancyConfig's networkIsolation promises by default.
        { dir: join(dir, 'node'), progress: say, networkPolicies: true },
      );
    }
    // Again on a reused directory, whose control plane kept the CRDs of an older run.
    await installCrds(client, crds);
  } catch (err) {
    await stop();
    throw err;
  }
  return { controlPlane, client, node, stop };
}
