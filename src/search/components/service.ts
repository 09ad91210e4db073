// One search process: the index (a PostgreSQL URL or the embedded server), the access provider on RBAC
// informers, token authentication, and the HTTPS server with the GraphQL API and/or the collectors'
// endpoint. `tenantkit search api|indexer` and `tenantkit dev` all start here; the hub's collector is
// started beside it (see collector/).
import type { Logger } from 'pino';
import { subjectCan } from '../../kube/access.ts';
import type { KubeClient } from '../../kube/client.ts';
import { Informer } from '../../kube/informer.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import type { ServingCertificate } from '../../serving/https.ts';
import { RbacAccessProvider } from '../access/provider.ts';
import { Collector } from '../collector/collector.ts';
import { TokenAuthenticator } from '../graphql/authn.ts';
import type { Message } from '../graphql/resolvers.ts';
import { type SearchApiLimits, SearchServer } from '../graphql/server.ts';
import { clusterWriteAuthorizer } from '../indexer/authorize.ts';
import { clusterRemoveAttributes, indexerEndpoint } from '../indexer/http.ts';
import { frontProxyConfig } from '../projects/front-proxy.ts';
import type { Namespace } from '../projects/projects.ts';
import { ProjectsServer } from '../projects/server.ts';
import type { QueryLimits } from '../query/engine.ts';
import { type IndexStore, openIndexStore } from './index-store.ts';

export interface SearchServiceOptions {
  client: KubeClient;
  logger: Logger;
  /** A PostgreSQL URL; without one, the embedded server runs in `embeddedDir`. */
  databaseUrl?: string;
  embeddedDir?: string;
  /** Read replicas of `databaseUrl`, and the staleness their reads may have (see IndexStoreOptions). */
  replicaUrls?: string[];
  maxReplicaLagMs?: number;
  certificate: ServingCertificate;
  host?: string;
  port?: number;
  /** Serve the GraphQL API (default true). */
  api?: boolean;
  /** Serve the collectors' endpoint for managed clusters (default true). */
  indexer?: boolean;
  /** Bytes of managed clusters' batches the endpoint holds at once (default 32 MiB; see indexer/budget.ts). */
  maxBatchBytesInFlight?: number;
  queryLimits?: Partial<QueryLimits>;
  apiLimits?: Partial<SearchApiLimits>;
  /** Origins besides the API's own whose pages may use ACM's cookie (see SearchServerOptions). */
  allowedOrigins?: readonly string[];
  /** Extra conditions for `messages` (e.g. the hub collector still listing). */
  messages?: () => Message[];
  /** How long to wait for a database that does not accept connections yet (default: fail at once). */
  waitForDatabaseMs?: number;
  /** Token reviews are trusted this long (default 60 s). */
  tokenTtlMs?: number;
  /**
   * Also serve the Projects API (project.openshift.io/v1) for kube-apiserver's aggregation layer on this
   * port (0: any free one), when kube-apiserver publishes a front-proxy CA; default: not served.
   */
  projectsPort?: number;
  /** Also collect the hub cluster itself into the index, with this client (default: none). */
  hubCollector?: { client: KubeClient; sensitiveFields?: string[]; resyncPeriodMs?: number };
}

export interface SearchService {
  store: IndexStore;
  server: SearchServer;
  access: RbacAccessProvider;
  authenticator: TokenAuthenticator;
  collector?: Collector;
  /** The Projects API, when served. */
  projects?: ProjectsServer;
  port: number;
  /** Resolves when `signal` aborts and everything has stopped. */
  done: Promise<void>;
}

/**
 * The CAs kube-apiserver trusts for client certificates, as it publishes them for extension API
 * servers. Reading it needs the `extension-apiserver-authentication-reader` Role in kube-system; without
 * it, callers authenticate by token only.
 */
async function clusterAuthentication(
  client: KubeClient,
  logger: Logger,
): Promise<Record<string, string> | undefined> {
  try {
    const cm = await client.get<KubeObject & { data?: Record<string, string> }>(
      Resources.configMaps,
      'extension-apiserver-authentication',
      'kube-system',
    );
    return cm?.data;
  } catch (err) {
    logger.warn(
      { err: String(err) },
      'cannot read the cluster client CA (kube-system/extension-apiserver-authentication); client certificates are not accepted',
    );
    return undefined;
  }
}

/** The hub's own collector, streaming this cluster into the index (when asked for). */
function hubCollector(options: SearchServiceOptions, store: IndexStore): Collector | undefined {
  const hub = options.hubCollector;
  if (!hub) return undefined;
  return new Collector({
    client: hub.client,
    sink: store.indexer,
    cluster: store.hubCluster,
    hub: true,
    logger: options.logger.child({ part: 'collector' }),
    ...(hub.sensitiveFields ? { sensitiveFields: hub.sensitiveFields } : {}),
    ...(hub.resyncPeriodMs !== undefined ? { resyncPeriodMs: hub.resyncPeriodMs } : {}),
  });
}

/** What the API tells every caller besides results: the index still filling, and the caller's own. */
function serviceMessages(options: SearchServiceOptions, collector: Collector | undefined): () => Message[] {
  return () => [
    ...(collector && !collector.stats().synced
      ? [
          {
            id: 'index-syncing',
            kind: 'information' as const,
            description: 'the index is still being filled from the cluster; results may be incomplete',
          },
        ]
      : []),
    ...(options.messages?.() ?? []),
  ];
}

/**
 * Callers' bearer tokens, reviewed by the API server and cached; a deleted ServiceAccount's tokens are
 * refused at once, not when their cached review expires (its informer runs in `running`).
 */
function tokenAuthenticator(
  options: SearchServiceOptions,
  running: Promise<unknown>[],
  signal: AbortSignal,
): TokenAuthenticator {
  const { client, logger } = options;
  const authenticator = new TokenAuthenticator(client, {
    ...(options.tokenTtlMs !== undefined ? { ttlMs: options.tokenTtlMs } : {}),
  });
  // Only names and uids matter here: metadata-only, so a ServiceAccount's secrets lists are never held.
  const serviceAccounts = new Informer<KubeObject>(client, Resources.serviceAccounts, {
    logger,
    metadataOnly: true,
  });
  serviceAccounts.addHandlers({
    onDelete: (sa) =>
      authenticator.revoke({
        uid: sa.metadata.uid ?? '',
        username: `system:serviceaccount:${sa.metadata.namespace}:${sa.metadata.name}`,
      }),
  });
  running.push(serviceAccounts.run(signal));
  return authenticator;
}

/** The HTTPS server: the GraphQL API and/or the collectors' endpoint, as the options ask. */
function searchServer(
  options: SearchServiceOptions,
  parts: {
    store: IndexStore;
    access: RbacAccessProvider;
    authenticator: TokenAuthenticator;
    messages: () => Message[];
    clientCaPem: string | undefined;
  },
): SearchServer {
  const { client, logger } = options;
  const { store, access, authenticator, messages, clientCaPem } = parts;
  const authenticate = (token: string) => authenticator.authenticate(token);
  return new SearchServer({
    logger,
    ...(clientCaPem ? { clientCaPem } : {}),
    certificate: options.certificate,
    ...(options.host ? { host: options.host } : {}),
    ...(options.port !== undefined ? { port: options.port } : {}),
    authenticate,
    mayReadMetrics: (user) => subjectCan(client, user, { nonResource: { path: '/metrics', verb: 'get' } }),
    ...(options.allowedOrigins ? { allowedOrigins: options.allowedOrigins } : {}),
    ...(options.api !== false
      ? {
          api: {
            backend: store.engine,
            access,
            messages,
            ...(options.apiLimits ? { limits: options.apiLimits } : {}),
          },
        }
      : {}),
    ...(options.indexer !== false
      ? {
          indexer: indexerEndpoint({
            sink: store.indexer,
            logger,
            authenticate,
            mayWrite: clusterWriteAuthorizer(client),
            mayRemove: (user, cluster) =>
              subjectCan(client, user, { resource: clusterRemoveAttributes(cluster) }),
            removeCluster: (cluster) => store.indexer.removeCluster(cluster),
            ...(options.maxBatchBytesInFlight !== undefined
              ? { maxBytesInFlight: options.maxBatchBytesInFlight }
              : {}),
          }),
        }
      : {}),
    ready: () => access.hasSynced(),
  });
}

export async function startSearchService(
  options: SearchServiceOptions,
  signal: AbortSignal,
): Promise<SearchService> {
  const { client, logger } = options;
  const store = await openIndexStore({
    logger,
    ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
    ...(options.replicaUrls?.length ? { replicaUrls: options.replicaUrls } : {}),
    ...(options.maxReplicaLagMs !== undefined ? { maxReplicaLagMs: options.maxReplicaLagMs } : {}),
    ...(options.embeddedDir ? { embeddedDir: options.embeddedDir } : {}),
    ...(options.queryLimits ? { limits: options.queryLimits } : {}),
    ...(options.waitForDatabaseMs ? { waitForDatabaseMs: options.waitForDatabaseMs } : {}),
  });
  const access = new RbacAccessProvider({ client, logger });
  const running: Promise<unknown>[] = [access.start(signal), store.run(signal)];
  if (options.indexer !== false) {
    // A removal cut short by a crash of the last process is finished now (its tombstone is in place).
    running.push(
      store.indexer
        .resumeRemovals()
        .catch((err: unknown) =>
          logger.error(
            { err: String(err) },
            'finishing cluster removals cut short failed; the next removal or batch of the cluster retries',
          ),
        ),
    );
  }
  const collector = hubCollector(options, store);
  if (collector) running.push(collector.run(signal));
  const authenticator = tokenAuthenticator(options, running, signal);
  const authentication = await clusterAuthentication(client, logger);
  const server = searchServer(options, {
    store,
    access,
    authenticator,
    messages: serviceMessages(options, collector),
    clientCaPem: authentication?.['client-ca-file'],
  });
  const projects = await projectsServer(options, authentication, access, running, signal);
  let port: number;
  try {
    await access.waitForSync();
    port = await server.start();
    await projects?.start();
  } catch (err) {
    await store.close();
    throw err;
  }
  const done = (async () => {
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await server.stop();
    await projects?.stop();
    await Promise.allSettled(running);
    await store.close();
  })();
  return {
    store,
    server,
    access,
    authenticator,
    port,
    done,
    ...(collector ? { collector } : {}),
    ...(projects ? { projects } : {}),
  };
}

/** The Projects API server, when asked for and kube-apiserver publishes a front proxy to trust. */
async function projectsServer(
  options: SearchServiceOptions,
  authentication: Record<string, string> | undefined,
  access: RbacAccessProvider,
  running: Promise<unknown>[],
  signal: AbortSignal,
): Promise<ProjectsServer | undefined> {
  if (options.projectsPort === undefined) return undefined;
  const frontProxy = frontProxyConfig(authentication);
  if (!frontProxy) {
    options.logger.warn(
      'the Projects API is not served: kube-apiserver publishes no request-header CA (--requestheader-client-ca-file) in kube-system/extension-apiserver-authentication',
    );
    return undefined;
  }
  const namespaces = new Informer<Namespace>(options.client, Resources.namespaces, {
    logger: options.logger,
  });
  running.push(namespaces.run(signal));
  await namespaces.waitForSync();
  return new ProjectsServer({
    logger: options.logger.child({ part: 'projects' }),
    certificate: options.certificate,
    frontProxy,
    namespaces,
    access,
    port: options.projectsPort,
    ...(options.host ? { host: options.host } : {}),
  });
}
