// `tenantkit search ...`: run the search service's parts (api, indexer, collector) or, for everyone
// else, search the cluster as the kubeconfig's user and print the results like kubectl.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { KubeClient } from '../../kube/client.ts';
import { startHealthServer } from '../../kube/health.ts';
import { createLogger } from '../../kube/log.ts';
import { servingTls, servingTlsOptions } from '../../serving/options.ts';
import { RbacAccessProvider } from '../access/provider.ts';
import { compareWithRulesReview } from '../access/verify.ts';
import { Collector } from '../collector/collector.ts';
import { openIndexStore } from '../components/index-store.ts';
import { startSearchService } from '../components/service.ts';
import { RemoteSink } from '../indexer/remote-sink.ts';
import type { Item } from '../model.ts';
import { parseSearchText } from '../text/query-text.ts';
import { renderTable } from '../text/table.ts';
import { discoverEndpoint, graphql, type SearchEndpoint } from './client.ts';

export const searchUsage = `Usage:
  tenantkit search QUERY [-o table|json|yaml|name] [--limit N] [--search-url URL] [--ca-file FILE]
      search as the current kubeconfig user, e.g. tenantkit search 'kind:Pod namespace:team-a name:web*'
  tenantkit search api --cert-dir DIR | --tls-secret NAME --service S [--service-account SA] [--namespace NS]
                       [--port 4010] [--database-url URL | --db-dir DIR] [--sensitive-field F]...
                       [--database-replica-url URL]... [--max-replica-lag 1s] [--max-batch-bytes-in-flight 8Mi]
      serve the GraphQL API, the collectors' endpoint (--no-indexer: off; it holds at most
      --max-batch-bytes-in-flight of batches, or $TENANTKIT_SEARCH_MAX_BATCH_BYTES_IN_FLIGHT, and answers
      429 past it) and collect this cluster
      (--no-collector: off); queries read the replicas (or $TENANTKIT_SEARCH_DATABASE_REPLICA_URLS, comma-
      separated) while they are at most --max-replica-lag behind, the primary otherwise; F is [group/]Kind:path, e.g. apps/Deployment:spec.template.metadata.annotations.token.
      TLS from tls.crt/tls.key in DIR (reloaded on change), or a certificate for Service S made, rotated and
      kept in Secret NAME (owned by ServiceAccount SA) in NS; --projects-port P also serves the Projects
      API (project.openshift.io/v1) for kube-apiserver's aggregation layer on port P (with --tls-secret,
      the CA goes into APIService --api-service, default v1.project.openshift.io)
  tenantkit search collector --hub [--database-url URL]
  tenantkit search collector --cluster NAME --indexer-url URL --token-file FILE [--ca-file FILE]
      collect the hub into its index, or a managed cluster ($KUBECONFIG) through the hub's indexer;
      --metrics-port P serves /healthz, /readyz (every type listed once into the index, which accepts its
      batches; a 503 says why not) and /metrics
  tenantkit search verify-access --user NAME [--group G]... --namespace NS
      compare the locally computed access set with a SelfSubjectRulesReview (for webhook authorizers)
`;

/** A database that starts beside search (the chart's bundled one) is waited for this long. */
const waitForDatabaseMs = 5 * 60_000;

const serviceSubcommands = new Set(['api', 'collector', 'verify-access']);

/**
 * A collector: the hub's own (`--hub`: straight into the index database) or a managed cluster's
 * (`--cluster NAME --indexer-url URL`: pushed to the hub's indexer over HTTPS).
 */
async function collect(args: string[], signal: AbortSignal): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      hub: { type: 'boolean', default: false },
      'database-url': { type: 'string' },
      cluster: { type: 'string' },
      'indexer-url': { type: 'string' },
      'token-file': { type: 'string' },
      'ca-file': { type: 'string' },
      'sensitive-field': { type: 'string', multiple: true, default: [] },
      'metrics-port': { type: 'string' },
    },
  });
  const logger = createLogger('tenantkit-search-collector');
  // Probes and metrics: live from the start, ready once the first list of every type is in the index and
  // while the index accepts its batches (Collector.notReady says why not).
  let collector: Collector | undefined;
  const health =
    values['metrics-port'] !== undefined
      ? await startHealthServer(Number(values['metrics-port']), () => {
          const reason = collector ? collector.notReady() : 'the index database is not open yet';
          return reason ?? true;
        })
      : undefined;
  signal.addEventListener('abort', () => health?.close(), { once: true });
  const common = {
    client: KubeClient.fromDefault(),
    logger,
    sensitiveFields: values['sensitive-field']!,
  };
  if (values.hub) {
    const databaseUrl = values['database-url'] ?? process.env.TENANTKIT_SEARCH_DATABASE_URL;
    if (!databaseUrl) throw new Error('--hub needs --database-url URL (or $TENANTKIT_SEARCH_DATABASE_URL)');
    const store = await openIndexStore({ databaseUrl, logger, connections: 4, waitForDatabaseMs });
    try {
      collector = new Collector({
        ...common,
        sink: store.indexer,
        cluster: store.hubCluster,
        hub: true,
      });
      await collector.run(signal);
    } finally {
      await store.close();
    }
    return;
  }
  if (!values.cluster || !values['indexer-url'] || !values['token-file']) {
    throw new Error(
      'give --hub, or --cluster NAME, --indexer-url URL and --token-file FILE (a hub token allowed to update clusters.search.tenantkit.io/NAME)',
    );
  }
  const tokenFile = values['token-file'];
  const sink = new RemoteSink({
    url: values['indexer-url'],
    // Re-read for every batch, so a rotated (projected) token is picked up.
    token: async () => (await readFile(tokenFile, 'utf8')).trim(),
    ...(values['ca-file'] ? { ca: await readFile(values['ca-file'], 'utf8') } : {}),
  });
  collector = new Collector({ ...common, sink, cluster: values.cluster, hub: false });
  await collector.run(signal);
}

/** Runs `tenantkit search <args>`; `stop` aborts long-running modes. */
export async function searchCommand(args: string[], stop: () => AbortSignal): Promise<void> {
  const sub = args[0];
  if (sub === 'api') return serveApi(args.slice(1), stop());
  if (sub === 'verify-access') return verifyAccess(args.slice(1));
  if (sub === 'collector') return collect(args.slice(1), stop());
  if (sub === 'help' || sub === '--help' || sub === '-h' || sub === undefined) {
    process.stdout.write(searchUsage);
    return;
  }
  return query(args);
}

async function serveApi(args: string[], signal: AbortSignal): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      ...servingTlsOptions('tenantkit-search'),
      port: { type: 'string', default: '4010' },
      host: { type: 'string', default: '0.0.0.0' },
      'database-url': { type: 'string' },
      'db-dir': { type: 'string' },
      // Read replicas of the database (streaming replication), and how stale their reads may be.
      'database-replica-url': { type: 'string', multiple: true, default: [] },
      'max-replica-lag': { type: 'string', default: process.env.TENANTKIT_SEARCH_MAX_REPLICA_LAG || '1s' },
      indexer: { type: 'boolean', default: true },
      // Bytes of managed clusters' batches the indexer endpoint holds at once; past it, 429 and a retry.
      'max-batch-bytes-in-flight': {
        type: 'string',
        default: process.env.TENANTKIT_SEARCH_MAX_BATCH_BYTES_IN_FLIGHT || '8Mi',
      },
      collector: { type: 'boolean', default: true },
      'sensitive-field': { type: 'string', multiple: true, default: [] },
      // Origins besides the API's own whose pages may use ACM's cookie (e.g. https://console.example).
      'allowed-origin': { type: 'string', multiple: true, default: [] },
      // The Projects API for kube-apiserver's aggregation layer, on its own port (and, with a
      // self-managed certificate, the APIService whose caBundle it keeps).
      'projects-port': { type: 'string' },
      'api-service': { type: 'string', default: 'v1.project.openshift.io' },
    },
    allowNegative: true,
  });
  const projectsPort = values['projects-port'] === undefined ? undefined : Number(values['projects-port']);
  if (
    projectsPort !== undefined &&
    !(Number.isInteger(projectsPort) && projectsPort >= 0 && projectsPort < 65536)
  )
    throw new Error(`--projects-port ${values['projects-port']} is not a port number (0-65535)`);
  const databaseUrl = values['database-url'] ?? process.env.TENANTKIT_SEARCH_DATABASE_URL;
  if (!databaseUrl && !values['db-dir']) {
    throw new Error(
      'give --database-url (or $TENANTKIT_SEARCH_DATABASE_URL), or --db-dir for an embedded PostgreSQL',
    );
  }
  const replicaUrls = [
    ...values['database-replica-url']!,
    ...(process.env.TENANTKIT_SEARCH_DATABASE_REPLICA_URLS ?? '').split(/[\s,]+/).filter(Boolean),
  ];
  if (replicaUrls.length > 0 && !databaseUrl) {
    throw new Error('read replicas (--database-replica-url) need the primary as --database-url');
  }
  const maxReplicaLagMs = parseLag(values['max-replica-lag']!);
  const maxBatchBytesInFlight = parseBytes(
    '--max-batch-bytes-in-flight',
    values['max-batch-bytes-in-flight']!,
  );
  const logger = createLogger('tenantkit-search');
  const client = KubeClient.fromDefault();
  const { certificate, tls } = await servingTls(
    values,
    logger,
    projectsPort !== undefined ? { apiServices: [values['api-service']!] } : {},
    client,
  );
  const service = await startSearchService(
    {
      client,
      ...(values.collector ? { hubCollector: { client, sensitiveFields: values['sensitive-field']! } } : {}),
      logger,
      ...(databaseUrl ? { databaseUrl } : { embeddedDir: values['db-dir']! }),
      replicaUrls,
      maxReplicaLagMs,
      certificate,
      host: values.host!,
      port: Number(values.port),
      indexer: values.indexer!,
      maxBatchBytesInFlight,
      waitForDatabaseMs,
      allowedOrigins: values['allowed-origin']!,
      ...(projectsPort !== undefined ? { projectsPort } : {}),
    },
    signal,
  );
  await tls?.run((pair) => {
    service.server.setCertificate(pair);
    service.projects?.setCertificate(pair);
  }, signal);
  await service.done;
}

/** A size such as 32Mi, 512Ki, 1Gi or a plain number of bytes. */
export function parseBytes(flag: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi)?$/.exec(text.trim());
  if (!m) throw new Error(`${flag} ${JSON.stringify(text)} is not a size such as 32Mi, 512Ki or 1048576`);
  const unit = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[m[2] as 'Ki' | 'Mi' | 'Gi'] ?? 1;
  return Math.round(Number(m[1]) * unit);
}

/** `--max-replica-lag`: a duration such as 500ms, 1s or 2.5s. */
function parseLag(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(text.trim());
  if (!m) throw new Error(`--max-replica-lag ${JSON.stringify(text)} is not a duration such as 500ms or 1s`);
  return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
}

async function verifyAccess(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      user: { type: 'string' },
      group: { type: 'string', multiple: true, default: [] },
      namespace: { type: 'string', multiple: true, default: [] },
    },
  });
  if (!values.user || values.namespace!.length === 0) {
    throw new Error(
      'give --user NAME and at least one --namespace NS (and --group for each of their groups)',
    );
  }
  const client = KubeClient.fromDefault();
  const stop = new AbortController();
  const provider = new RbacAccessProvider({ client });
  void provider.start(stop.signal);
  try {
    await provider.waitForSync();
    const user = { username: values.user, groups: [...values.group!, 'system:authenticated'] };
    const set = provider.forUser(user);
    let differences = 0;
    for (const namespace of values.namespace!) {
      const result = await compareWithRulesReview(client, user, set, namespace);
      for (const d of result.differences) {
        differences++;
        const names = (v: unknown) => (v === null ? 'all' : v === undefined ? 'none' : JSON.stringify(v));
        process.stdout.write(
          `${namespace}\t${d.apiGroup || 'core'}/${d.resource}\tcomputed: ${names(d.computed)}\treviewed: ${names(d.reviewed)}\n`,
        );
      }
      if (result.incomplete) {
        process.stdout.write(
          `${namespace}\tthe review is incomplete (${result.evaluationError ?? 'no reason given'})\n`,
        );
      }
    }
    process.stdout.write(differences === 0 ? 'access sets agree with the authorizer\n' : '');
    if (differences > 0) process.exitCode = 1;
  } finally {
    stop.abort();
  }
}

const searchQuery = /* GraphQL */ `
  query ($input: [SearchInput]) {
    search(input: $input) {
      items
    }
  }
`;

async function query(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      output: { type: 'string', short: 'o', default: 'table' },
      limit: { type: 'string' },
      'search-url': { type: 'string' },
      'ca-file': { type: 'string' },
    },
  });
  if (positionals.length > 0 && serviceSubcommands.has(positionals[0]!)) throw new Error(searchUsage);
  const text = positionals.join(' ').trim();
  if (!text)
    throw new Error(`give a query, e.g. tenantkit search 'kind:Pod namespace:team-a'\n\n${searchUsage}`);
  const output = values.output!;
  if (!['table', 'json', 'yaml', 'name'].includes(output)) {
    throw new Error(`unknown output format "${output}": use table, json, yaml or name`);
  }
  const input = parseSearchText(text);
  if (values.limit !== undefined) input.limit = Number(values.limit);
  const kube = KubeClient.fromDefault();
  const url = values['search-url'] ?? process.env.TENANTKIT_SEARCH_URL;
  const endpoint: SearchEndpoint = url
    ? { url, ...(values['ca-file'] ? { ca: await readFile(values['ca-file'], 'utf8') } : {}) }
    : await discoverEndpoint(kube);
  if (!url && values['ca-file']) endpoint.ca = await readFile(values['ca-file'], 'utf8');
  const data = await graphql<{ search: { items: Item[] }[] }>(endpoint, kube, searchQuery, {
    input: [input],
  });
  const items = data.search[0]?.items ?? [];
  if (output === 'json') process.stdout.write(`${JSON.stringify({ items }, null, 2)}\n`);
  else if (output === 'yaml') process.stdout.write(stringify({ items }));
  else if (output === 'name') {
    for (const i of items) process.stdout.write(`${String(i.kind).toLowerCase()}/${String(i.name)}\n`);
  } else process.stdout.write(renderTable(items));
}
