// `tenantkit webhooks`: every capability's admission webhooks behind one HTTPS server, on a certificate
// from --cert-dir or one it makes, rotates and keeps in --tls-secret.
import { parseArgs } from 'node:util';
import { KubeClient } from '../kube/client.ts';
import { createLogger } from '../kube/log.ts';
import { Manager } from '../kube/manager.ts';
import { SelfManagedTls } from '../webhook/self-managed-tls.ts';
import { WebhookServer } from '../webhook/server.ts';
import { type CapabilityContext, selectCapabilities } from './capabilities.ts';
import { shutdownSignal } from './signals.ts';

export async function webhooks(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      'cert-dir': { type: 'string' },
      port: { type: 'string', default: '9443' },
      namespace: { type: 'string' },
      capabilities: { type: 'string' },
      'tls-secret': { type: 'string' },
      service: { type: 'string', default: 'tenantkit-webhooks' },
      'webhook-configuration': { type: 'string', default: 'tenantkit' },
      'service-account': { type: 'string' },
    },
  });
  const selfManaged = values['tls-secret'];
  if (!values['cert-dir'] && !selfManaged) {
    throw new Error(
      '--cert-dir (a directory with tls.crt and tls.key) or --tls-secret (a Secret tenantkit keeps its own certificate in) is required',
    );
  }
  const namespace = values.namespace ?? process.env.POD_NAMESPACE ?? 'tenantkit-system';
  const logger = createLogger('tenantkit-webhooks');
  const client = KubeClient.fromDefault();
  const stop = shutdownSignal();
  // With --tls-secret the server makes, rotates and publishes its own certificate before it listens.
  const tls = selfManaged
    ? new SelfManagedTls({
        client,
        logger,
        namespace,
        secretName: selfManaged,
        dnsNames: [`${values.service}.${namespace}.svc`, `${values.service}.${namespace}.svc.cluster.local`],
        validatingWebhookConfigurations: [values['webhook-configuration']!],
        mutatingWebhookConfigurations: [values['webhook-configuration']!],
        ...(values['service-account'] ? { ownerServiceAccount: values['service-account'] } : {}),
      })
    : undefined;
  // Webhooks read caches but never reconcile, so every replica serves: no leader election here.
  const manager = new Manager({ client, logger, component: 'tenantkit.io/webhooks' });
  const ctx: CapabilityContext = { client, manager, namespace };
  const server = new WebhookServer({
    logger,
    host: '0.0.0.0',
    port: Number(values.port),
    certificate: tls
      ? await tls.reconcile()
      : { certFile: `${values['cert-dir']}/tls.crt`, keyFile: `${values['cert-dir']}/tls.key` },
    ready: () => manager.hasSynced(),
    // kube-apiserver keeps connections to each replica: let them move before this one closes.
    drainMs: 3000,
  });
  for (const c of selectCapabilities(values.capabilities)) server.register(...(c.webhooks?.(ctx) ?? []));
  await server.start();
  const upkeep = tls?.run((pair) => server.setCertificate(pair), stop.signal);
  await manager.start(stop.signal);
  await upkeep;
  await server.stop();
}
