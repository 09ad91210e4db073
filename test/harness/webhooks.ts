// Runs a webhook server inside the test process, with its own generated CA, and registers its
// webhooks with the real API server by URL. stop() unregisters them before closing the server.

import { silentLogger } from '../../src/kube/log.ts';
import { Resources } from '../../src/kube/resources.ts';
import { createCA } from '../../src/serving/certs.ts';
import { registerWebhooks, type WebhookDefinition } from '../../src/webhook/registration.ts';
import { WebhookServer } from '../../src/webhook/server.ts';
import { clusterInfo, type TestCluster } from './cluster.ts';

export interface TestWebhooks {
  server: WebhookServer;
  configName: string;
  stop(): Promise<void>;
}

export async function startTestWebhooks(
  cluster: TestCluster,
  definitions: WebhookDefinition[],
  options: { configName?: string } = {},
): Promise<TestWebhooks> {
  const ca = await createCA('tenantkit-test-webhook-ca');
  const serving = await ca.issue({
    commonName: '127.0.0.1',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
    dnsNames: ['localhost'],
  });
  // Reviews only from kube-apiserver: it presents the client certificate the global setup gave it.
  const server = new WebhookServer({
    logger: silentLogger,
    certificate: serving,
    clientCaPem: clusterInfo().webhookClient.caPem,
  });
  server.register(...definitions);
  const port = await server.start();
  const configName = options.configName ?? cluster.unique('tenantkit-test');
  await registerWebhooks(
    cluster.admin,
    configName,
    definitions,
    { url: `https://127.0.0.1:${port}` },
    ca.certPem,
  );
  const stop = async () => {
    await cluster.admin.delete(Resources.validatingWebhookConfigurations, configName);
    await cluster.admin.delete(Resources.mutatingWebhookConfigurations, configName);
    await server.stop();
  };
  cluster.defer(stop);
  return { server, configName, stop };
}
