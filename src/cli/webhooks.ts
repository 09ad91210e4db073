// `tenantkit webhooks`: every capability's admission webhooks behind one HTTPS server, on a certificate
// from --cert-dir or one it makes, rotates and keeps in --tls-secret.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { type CapabilityContext, selectCapabilities } from '../capabilities.ts';
import { KubeClient } from '../kube/client.ts';
import { createLogger } from '../kube/log.ts';
import { Manager } from '../kube/manager.ts';
import { servingTls, servingTlsOptions } from '../serving/options.ts';
import { WebhookServer } from '../webhook/server.ts';
import { shutdownSignal } from './signals.ts';

export async function webhooks(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      ...servingTlsOptions('tenantkit-webhooks'),
      port: { type: 'string', default: '9443' },
      capabilities: { type: 'string' },
      'webhook-configuration': { type: 'string', default: 'tenantkit' },
      // The CA of kube-apiserver's webhook client certificate: reviews from anyone else are refused.
      'client-ca-file': { type: 'string' },
    },
  });
  const logger = createLogger('tenantkit-webhooks');
  const client = KubeClient.fromDefault();
  const stop = shutdownSignal();
  // With --tls-secret the server makes, rotates and publishes its own certificate before it listens.
  const { namespace, certificate, tls } = await servingTls(
    values,
    logger,
    {
      validatingWebhookConfigurations: [values['webhook-configuration']!],
      mutatingWebhookConfigurations: [values['webhook-configuration']!],
    },
    client,
  );
  // Webhooks read caches but never reconcile, so every replica serves: no leader election here.
  const manager = new Manager({ client, logger, component: 'tenantkit.io/webhooks' });
  const ctx: CapabilityContext = { client, manager, namespace };
  const server = new WebhookServer({
    logger,
    host: '0.0.0.0',
    port: Number(values.port),
    certificate,
    ready: () => manager.hasSynced(),
    // kube-apiserver keeps connections to each replica: let them move before this one closes.
    drainMs: 3000,
    ...(values['client-ca-file'] ? { clientCaPem: await readFile(values['client-ca-file'], 'utf8') } : {}),
  });
  for (const c of selectCapabilities(values.capabilities))
    server.register(...((await c.webhooks?.(ctx)) ?? []));
  await server.start();
  const upkeep = tls?.run((pair) => server.setCertificate(pair), stop.signal);
  await manager.start(stop.signal);
  await upkeep;
  await server.stop();
}
