// `tenantkit console`: the tenant console's HTTPS server. The page is served from the build (dist in a
// package, built on first use in a checkout); Kubernetes calls go to the API server (in a Pod: the
// in-cluster address and CA) and search calls to the search service, always as the signed-in user.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConsoleServer } from '../console/server/server.ts';
import { consoleAssets } from '../console/web/build.ts';
import { createLogger } from '../kube/log.ts';
import { servingTls, servingTlsOptions } from '../serving/options.ts';
import { shutdownSignal } from './signals.ts';

const serviceAccountCa = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';

export async function consoleCommand(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      ...servingTlsOptions('tenantkit-console'),
      port: { type: 'string', default: '8443' },
      'kube-server': { type: 'string' },
      'kube-ca': { type: 'string' },
      'search-url': { type: 'string' },
      'search-ca': { type: 'string' },
      'max-sockets-per-user': { type: 'string' },
    },
  });
  const inCluster = process.env.KUBERNETES_SERVICE_HOST
    ? `https://${process.env.KUBERNETES_SERVICE_HOST}:${process.env.KUBERNETES_SERVICE_PORT ?? '443'}`
    : undefined;
  const kubeServer = values['kube-server'] ?? inCluster;
  if (!kubeServer) throw new Error('--kube-server URL is required outside a cluster (and --kube-ca FILE)');
  const logger = createLogger('tenantkit-console');
  const stop = shutdownSignal();
  // With --tls-secret the console makes, rotates and keeps its own certificate: the one thing its own
  // credentials are for (every forwarded call carries the user's token instead).
  const { certificate, tls } = await servingTls(values, logger);
  const server = await ConsoleServer.start({
    logger,
    host: '0.0.0.0',
    port: Number(values.port),
    certificate,
    kube: { url: new URL(kubeServer), caPem: readFileSync(values['kube-ca'] ?? serviceAccountCa, 'utf8') },
    ...(values['search-url']
      ? {
          search: {
            url: new URL(values['search-url']),
            caPem: readFileSync(values['search-ca'] ?? serviceAccountCa, 'utf8'),
          },
        }
      : {}),
    assetsDir: await consoleAssets(),
    ...(values['max-sockets-per-user'] !== undefined
      ? { maxSocketsPerUser: socketsPerUser(values['max-sockets-per-user']) }
      : {}),
  });
  logger.info(
    { port: server.listener.port, kube: kubeServer, search: values['search-url'] },
    'console serving',
  );
  const stopped = new Promise<void>((resolve) =>
    stop.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  await tls?.run((pair) => server.listener.setCertificate(pair), stop.signal);
  await stopped;
  await server.stop();
}

/** --max-sockets-per-user: a whole number of at least 1. */
function socketsPerUser(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) {
    throw new Error(`--max-sockets-per-user must be a whole number of at least 1, not "${text}"`);
  }
  return n;
}
