// `tenantkit dev`: a local control plane with every tenantkit component, ready to try as admin and as
// two example tenants. Data lives in ./.tenantkit/ and is reused by the next run. The command composes the
// development environment's steps: the cluster, what it is seeded with, Velero, tenantkit's components.
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { capabilities } from '../../src/capabilities.ts';
import { nodeUnavailable } from '../node/launch.ts';
import { startDevCluster } from './cluster.ts';
import { removeDevWebhooks, startComponents, startDevVelero } from './components.ts';
import { devLogger } from './log.ts';
import { seedCluster } from './seed.ts';
import { welcome } from './welcome.ts';

/** Velero's namespace in dev; backup's configuration points there. */
const veleroNamespace = 'velero';

interface DevOptions {
  dir: string;
  logToTerminal: boolean;
  noNode: boolean;
}

function devOptions(args: string[]): DevOptions {
  const { values } = parseArgs({
    args,
    options: {
      dir: { type: 'string', default: '.tenantkit' },
      'log-to-terminal': { type: 'boolean', default: false },
      'no-node': { type: 'boolean', default: false },
    },
  });
  return { dir: resolve(values.dir!), logToTerminal: values['log-to-terminal']!, noNode: values['no-node']! };
}

export async function runDev(args: string[], stop: AbortController): Promise<void> {
  const options = devOptions(args);
  const { dir } = options;
  await mkdir(dir, { recursive: true });
  const logFile = join(dir, 'tenantkit.log');
  const logger = devLogger(logFile, options.logToTerminal);
  const say = (line: string) => process.stderr.write(`${line}\n`);

  // The local node (real Pods) needs root; without it everything else still runs and Pods stay Pending.
  const noNode = options.noNode ? 'tenantkit dev --no-node' : nodeUnavailable();
  if (noNode) say(`no local node (${noNode}): Pods will stay Pending`);
  const cluster = await startDevCluster({ dir, noNode, say });
  try {
    await removeDevWebhooks(cluster.client);
    await seedCluster(cluster.client, veleroNamespace);
    // A real Velero with an S3 store in dir/velero, before the controllers (they watch Velero's kinds).
    const velero = await startDevVelero(
      cluster.controlPlane.adminKubeconfigPath,
      veleroNamespace,
      dir,
      cluster.node,
      say,
    );
    const components = await startComponents(cluster, dir, logger, stop.signal);
    say(
      welcome({
        controlPlane: cluster.controlPlane,
        node: cluster.node,
        components,
        capabilityCount: capabilities.length,
        dir,
        logFile,
        logToTerminal: options.logToTerminal,
      }),
    );
    await components.stopped;
    await velero.stop();
    say('tenantkit dev: components stopped');
  } finally {
    await cluster.stop();
  }
}
