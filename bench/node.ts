// The end of a bench that ran its own control plane with the local node: the node stopped (saying what it
// could not put back on the machine), the control plane stopped, the bridge released, the directory gone.
import { rm } from 'node:fs/promises';
import type { LocalNode } from '../src/controlplane/node-launch.ts';

export async function stopBenchNode(
  node: LocalNode,
  controlPlane: { stop(): Promise<void> },
  network: { release(): Promise<void> },
  dir: string,
): Promise<void> {
  const left = await node.stop();
  if (left.length > 0) console.error(`the node left behind: ${left.join(', ')}`);
  await controlPlane.stop();
  await network.release();
  await rm(dir, { recursive: true, force: true });
}
