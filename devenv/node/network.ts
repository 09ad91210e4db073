// The local node's network: a bridge that carries the node's address and that Pods attach to (CNI's
// bridge plugin uses it as their gateway). It exists before the control plane starts when Pods must reach
// kube-apiserver, which then listens on the node's address instead of loopback.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const nodeName = 'tenantkit-node';
/** kubelet's cgroupRoot: every Pod's cgroup lives under it, in every hierarchy. */
export const podCgroupRoot = 'tenantkit-pods';

/** The bridge Pods attach to; its address is the node's InternalIP and the Pods' gateway. */
export const nodeBridge = 'tk-node0';
export const nodeIP = '10.244.0.1';
export const podSubnet = '10.244.0.0/16';

export interface NodeNetwork {
  /** Whether this call made the bridge (and `release` removes it). */
  created: boolean;
  release(): Promise<void>;
}

/** Makes the bridge with the node's address unless it is already there (a port-less bridge holds an address fine). */
export async function ensureNodeNetwork(): Promise<NodeNetwork> {
  const { stdout } = await run('ip', ['-o', '-4', 'addr', 'show', 'dev', nodeBridge]).catch(() => ({
    stdout: '',
  }));
  if (stdout.includes(` ${nodeIP}/`)) return { created: false, release: async () => {} };
  if (stdout === '') {
    // A bridge left by a run that was killed holds no address after its own cleanup failed; reuse it.
    await run('ip', ['link', 'add', nodeBridge, 'type', 'bridge']).catch((err: Error) => {
      if (!err.message.includes('File exists')) throw err;
    });
  }
  await run('ip', ['addr', 'replace', `${nodeIP}/16`, 'dev', nodeBridge]);
  await run('ip', ['link', 'set', nodeBridge, 'up']);
  return {
    created: true,
    release: async () => {
      await run('ip', ['link', 'delete', nodeBridge]).catch(() => {});
    },
  };
}

/**
 * The Pod addresses kube-proxy sends a Service's connections to on this node, from its nftables table:
 * one `endpoint-…-NAMESPACE/NAME/PROTOCOL/PORTNAME__IP/PORT` chain per ready endpoint. A Service whose
 * EndpointSlice is ready may still be refused here until kube-proxy's next sync writes these chains.
 */
export async function serviceEndpoints(namespace: string, service: string): Promise<string[]> {
  const { stdout } = await run('nft', ['list', 'table', 'ip', 'kube-proxy']).catch(() => ({ stdout: '' }));
  const wanted = `-${namespace}/${service}/`;
  const addresses = new Set<string>();
  for (const match of stdout.matchAll(/chain "?(endpoint-[^\s"]+)"? \{/g)) {
    const chain = match[1] ?? '';
    if (!chain.includes(wanted)) continue;
    addresses.add(chain.slice(chain.lastIndexOf('__') + 2));
  }
  return [...addresses].sort();
}
