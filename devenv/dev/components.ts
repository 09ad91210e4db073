// tenantkit's own components as `tenantkit dev` runs them, all in this one process: the controllers (no
// election: nobody else runs them), the webhooks (registered by URL), search on an embedded PostgreSQL and the
// console; and the real Velero they drive, on the local node when there is one.
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { type CapabilityContext, capabilities } from '../../src/capabilities.ts';
import { ConsoleServer } from '../../src/console/server/server.ts';
import { consoleAssets } from '../../src/console/web/build.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { Manager } from '../../src/kube/manager.ts';
import { Resources } from '../../src/kube/resources.ts';
import { portIsFree } from '../../src/ports.ts';
import { publishEndpoint } from '../../src/search/cli/publish.ts';
import { startSearchService } from '../../src/search/components/service.ts';
import { type CertificateAuthority, createCA, loadCA } from '../../src/serving/certs.ts';
import { registerWebhooks } from '../../src/webhook/registration.ts';
import { WebhookServer } from '../../src/webhook/server.ts';
import { ensureVeleroImage } from '../images/build.ts';
import type { LocalNode } from '../node/launch.ts';
import { startVelero, type VeleroOptions } from '../velero/launch.ts';
import type { DevCluster } from './cluster.ts';
import { fieldManager, systemNamespace } from './seed.ts';

const devSearchPort = 4010;
const devConsolePort = 4020;
const webhookConfigName = 'tenantkit-dev';

/** tenantkit's components, running; `stopped` resolves once they have stopped after the signal. */
export interface DevComponents {
  webhookPort: number;
  searchUrl: string;
  consoleUrl: string;
  /** Where the CA of every dev serving certificate is (for the browser and the CLI). */
  caFile: string;
  stopped: Promise<void>;
}

async function devCA(dir: string): Promise<CertificateAuthority> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const cert = join(dir, 'ca.crt');
  const key = join(dir, 'ca.key');
  if (existsSync(cert) && existsSync(key)) {
    return loadCA({ certPem: await readFile(cert, 'utf8'), keyPem: await readFile(key, 'utf8') });
  }
  const ca = await createCA('tenantkit-dev-webhook-ca');
  await writeFile(cert, ca.certPem);
  await writeFile(key, ca.keyPem, { mode: 0o600 });
  return ca;
}

/**
 * Velero (built from devenv/go/velero on first use) writing to a local S3 store, non-admin backups enabled
 * for its namespace, and the tenant roles that let namespace admins use them. With the local node, Velero
 * runs there as `velero install` runs it, with its node-agent (file-system backups of tenants' volumes);
 * otherwise as a process here (resources only).
 */
export async function startDevVelero(
  kubeconfigPath: string,
  namespace: string,
  dir: string,
  node: LocalNode | undefined,
  say: (l: string) => void,
) {
  let onNode: VeleroOptions['onNode'];
  if (node) {
    const image = await ensureVeleroImage({ progress: say });
    await node.importImage(image);
    onNode = { image: image.ref, address: node.ip, kubeletDir: node.kubeletDir };
  }
  const velero = await startVelero({
    kubeconfigPath,
    namespace,
    dir: join(dir, 'velero'),
    progress: say,
    ...(onNode ? { onNode } : {}),
  });
  return velero;
}

/** The search service on an embedded PostgreSQL in `dir`, collecting this cluster, published for clients. */
async function startDevSearch(
  client: KubeClient,
  ca: CertificateAuthority,
  dir: string,
  signal: AbortSignal,
  logger: Logger,
): Promise<{ url: string; done: Promise<void> }> {
  const serving = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
  const port = (await portIsFree(devSearchPort)) ? devSearchPort : 0;
  const service = await startSearchService(
    {
      client,
      logger: logger.child({ subsystem: 'search' }),
      embeddedDir: join(dir, 'search-db'),
      certificate: serving,
      port,
      hubCollector: { client },
    },
    signal,
  );
  const url = `https://127.0.0.1:${service.port}`;
  await publishEndpoint(client, url, ca.certPem, fieldManager);
  return { url, done: service.done };
}

/**
 * A previous run that was killed could not remove its fail-closed webhooks, which would refuse every
 * namespace write with nobody serving them: they go before anything is written, and are registered anew.
 */
export async function removeDevWebhooks(client: KubeClient): Promise<void> {
  await client.delete(Resources.validatingWebhookConfigurations, webhookConfigName).catch(() => {});
  await client.delete(Resources.mutatingWebhookConfigurations, webhookConfigName).catch(() => {});
}

/** Starts every capability's controllers and webhooks, search and the console; stops them on `signal`. */
export async function startComponents(
  cluster: DevCluster,
  dir: string,
  logger: Logger,
  signal: AbortSignal,
): Promise<DevComponents> {
  const { client, controlPlane } = cluster;
  // One process runs everything here, so there is nobody to elect: controllers start at once.
  const manager = new Manager({ client, logger, component: 'tenantkit.io/dev' });
  const ctx: CapabilityContext = { client, manager, namespace: systemNamespace };
  const ca = await devCA(join(dir, 'webhook-pki'));
  const serving = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
  const server = new WebhookServer({ logger, certificate: serving, ready: () => manager.hasSynced() });
  for (const c of capabilities) {
    await c.controllers?.(ctx);
    server.register(...((await c.webhooks?.(ctx)) ?? []));
  }
  const webhookPort = await server.start();
  await registerWebhooks(
    client,
    webhookConfigName,
    server.definitions(),
    { url: `https://127.0.0.1:${webhookPort}` },
    ca.certPem,
  );
  const running = manager.start(signal);
  const search = await startDevSearch(client, ca, dir, signal, logger);
  const tenantConsole = await ConsoleServer.start({
    logger: logger.child({ subsystem: 'console' }),
    certificate: serving,
    port: (await portIsFree(devConsolePort)) ? devConsolePort : 0,
    kube: { url: new URL(controlPlane.server), caPem: controlPlane.caPem },
    search: { url: new URL(search.url), caPem: ca.certPem },
    assetsDir: await consoleAssets(),
  });
  const stopped = (async () => {
    await running;
    await search.done;
    await tenantConsole.stop();
    // Fail-closed webhooks must not outlive their server, or the next start could be blocked by them.
    await removeDevWebhooks(client);
    await server.stop();
  })();
  return {
    webhookPort,
    searchUrl: search.url,
    consoleUrl: tenantConsole.url,
    caFile: join(dir, 'webhook-pki', 'ca.crt'),
    stopped,
  };
}
