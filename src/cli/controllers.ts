// `tenantkit controllers`: every capability's controllers in one leader-elected process, with health
// and metrics on --metrics-port.
import { parseArgs } from 'node:util';
import { type CapabilityContext, selectCapabilities } from '../capabilities.ts';
import { KubeClient } from '../kube/client.ts';
import { startHealthServer } from '../kube/health.ts';
import { createLogger } from '../kube/log.ts';
import { LeadershipLostError, Manager } from '../kube/manager.ts';
import { shutdownSignal } from './signals.ts';

export async function controllers(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      namespace: { type: 'string' },
      'metrics-port': { type: 'string', default: '8080' },
      // Only for a single replica (debugging, tests): without the lease two replicas would both write.
      'leader-elect': { type: 'boolean', default: true },
      capabilities: { type: 'string' },
    },
    allowNegative: true,
  });
  const namespace = values.namespace ?? process.env.POD_NAMESPACE ?? 'tenantkit-system';
  const logger = createLogger('tenantkit-controllers');
  const client = KubeClient.fromDefault();
  const manager = new Manager({
    client,
    logger,
    component: 'tenantkit.io/controllers',
    ...(values['leader-elect'] ? { leaderElection: { namespace, name: 'tenantkit-controllers' } } : {}),
  });
  const ctx: CapabilityContext = { client, manager, namespace };
  for (const c of selectCapabilities(values.capabilities)) await c.controllers?.(ctx);
  // Ready once the caches are filled; standbys are ready too (they take over with warm caches).
  const health = await startHealthServer(Number(values['metrics-port']), () => manager.hasSynced(), {
    caches: () => manager.caches(),
  });
  const stop = shutdownSignal();
  try {
    await manager.start(stop.signal);
  } catch (err) {
    if (err instanceof LeadershipLostError) logger.error(err.message);
    throw err;
  } finally {
    health.close();
  }
}
