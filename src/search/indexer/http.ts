// The indexer's HTTPS endpoint for collectors on managed clusters:
//   POST /searchindexer/clusters/<cluster>/batches   (body: an IndexBatch for that cluster)
//   DELETE /searchindexer/clusters/<cluster>          (removes every object of the cluster from the index)
// The caller authenticates with a bearer token of the hub; it may write only the clusters RBAC lets it
// `update` as `clusters.search.tenantkit.io/<cluster>`, and remove only those it may `delete` there.
// A full queue, or more batch bytes in flight than the endpoint holds (budget.ts), answers 429 with
// Retry-After.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { readBody } from '../../serving/https.ts';
import { searchMetrics } from '../metrics.ts';
import {
  BackPressureError,
  type IndexBatch,
  type IndexSink,
  type SearchUser,
  SupersededBatchError,
} from '../model.ts';
import { InvalidBatchError, validClusterName } from '../policy/batch.ts';
import { ByteBudget } from './budget.ts';

export const indexerPathPrefix = '/searchindexer/clusters/';
/** The RBAC attributes a collector needs on the hub to write one cluster's rows. */
export const clusterWriteAttributes = (cluster: string) => ({
  group: 'search.tenantkit.io',
  resource: 'clusters',
  verb: 'update',
  name: cluster,
});
/** The RBAC attributes it takes to remove one cluster from the index. */
export const clusterRemoveAttributes = (cluster: string) => ({
  ...clusterWriteAttributes(cluster),
  verb: 'delete',
});

export interface IndexerEndpointOptions {
  sink: IndexSink;
  logger: Logger;
  /** The user behind a bearer token, or undefined when the token is not valid. */
  authenticate(token: string): Promise<SearchUser | undefined>;
  /** Whether `user` may write `cluster`'s rows. */
  mayWrite(user: SearchUser, cluster: string): Promise<boolean>;
  /** Whether `user` may remove `cluster` from the index (asked afresh each time: it is rare and final). */
  mayRemove(user: SearchUser, cluster: string): Promise<boolean>;
  /** Removes every object of `cluster`; resolves to how many there were. */
  removeCluster(cluster: string): Promise<number>;
  /** Largest accepted body (default 64 MiB: a resync of a few hundred thousand uids). */
  maxBodyBytes?: number;
  /** Bytes of batches held at once across every cluster (default 8 MiB; one batch is always let in). */
  maxBytesInFlight?: number;
}

export const defaultMaxBytesInFlight = 8 * 1024 * 1024;
/** What a collector refused for bytes in flight waits before it resends. */
const budgetRetryMs = 1000;

/** Handles the request if it is for the indexer; returns false to let the caller route it elsewhere. */
export function indexerEndpoint(options: IndexerEndpointOptions) {
  const budget = new ByteBudget(options.maxBytesInFlight ?? defaultMaxBytesInFlight);
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const url = new URL(req.url ?? '/', 'https://indexer');
    if (!url.pathname.startsWith(indexerPathPrefix)) return false;
    const rest = url.pathname.slice(indexerPathPrefix.length);
    const batches = /^([^/]+)\/batches$/.exec(rest);
    const whole = /^([^/]+)$/.exec(rest);
    if (!(batches && req.method === 'POST') && !(whole && req.method === 'DELETE')) {
      reply(res, 404, {
        message: `use POST ${indexerPathPrefix}<cluster>/batches, or DELETE ${indexerPathPrefix}<cluster> to remove a cluster`,
      });
      return true;
    }
    const cluster = decodeURIComponent((batches ?? whole)![1]!);
    const token = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const user = token ? await options.authenticate(token).catch(() => undefined) : undefined;
    if (!user) {
      reply(res, 401, { message: 'a valid bearer token of the hub cluster is required' });
      return true;
    }
    if (req.method === 'DELETE') {
      await removeCluster(options, user, cluster, res);
      return true;
    }
    if (!(await options.mayWrite(user, cluster).catch(() => false))) {
      const a = clusterWriteAttributes(cluster);
      reply(res, 403, {
        message: `${user.username} may not write cluster ${cluster}: grant verb "${a.verb}" on resource "${a.resource}" in API group "${a.group}" with resourceNames ["${cluster}"]`,
      });
      return true;
    }
    // The declared size is taken before the body is read, so refused batches are never held; a body
    // without one is taken once read.
    const declared = Number(req.headers['content-length']);
    let held = Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined;
    if (held !== undefined && !budget.take(held)) {
      refuseForBudget(res, budget, cluster);
      return true;
    }
    try {
      const max = options.maxBodyBytes ?? 64 * 1024 * 1024;
      const body = await readBody(req, max);
      if (body === undefined) {
        reply(res, 413, { message: `the batch is larger than ${max} bytes; send smaller batches` });
        return true;
      }
      if (held === undefined) {
        if (!budget.take(body.length)) {
          refuseForBudget(res, budget, cluster);
          return true;
        }
        held = body.length;
      }
      await applyBody(options, cluster, body, res);
    } finally {
      if (held !== undefined) budget.release(held);
    }
    return true;
  };
}

async function applyBody(
  options: IndexerEndpointOptions,
  cluster: string,
  body: string,
  res: ServerResponse,
): Promise<void> {
  let batch: IndexBatch;
  try {
    batch = JSON.parse(body) as IndexBatch;
  } catch (err) {
    reply(res, 400, { message: `unreadable batch: ${(err as Error).message}` });
    return;
  }
  if (batch?.cluster !== cluster) {
    reply(res, 400, {
      message: `the batch is for cluster ${JSON.stringify(batch?.cluster)}, the URL for ${cluster}`,
    });
    return;
  }
  try {
    await options.sink.write(batch);
    reply(res, 200, { applied: true });
  } catch (err) {
    if (err instanceof BackPressureError) {
      refuse(res, err.message, err.retryAfterMs);
    } else if (err instanceof InvalidBatchError) {
      reply(res, 400, { message: err.message });
    } else if (err instanceof SupersededBatchError) {
      reply(res, 409, { message: err.message });
    } else {
      options.logger.error({ cluster, err: String(err) }, 'index batch failed');
      reply(res, 503, { message: 'the index could not apply the batch; retry' });
    }
  }
}

function refuseForBudget(res: ServerResponse, budget: ByteBudget, cluster: string): void {
  searchMetrics.indexerRejected.inc({ cluster });
  const mib = (n: number) => (n / 1024 / 1024).toFixed(1);
  refuse(
    res,
    `the search indexer holds ${mib(budget.inUse)} MiB of batches, its limit is ${mib(budget.max)} MiB (--max-batch-bytes-in-flight); retry in ${budgetRetryMs} ms`,
    budgetRetryMs,
  );
}

/** 429: the collector waits `retryAfterMs` and sends the batch again. */
function refuse(res: ServerResponse, message: string, retryAfterMs: number): void {
  res.setHeader('Retry-After', String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
  reply(res, 429, { message, retryAfterMs });
}

async function removeCluster(
  options: IndexerEndpointOptions,
  user: SearchUser,
  cluster: string,
  res: ServerResponse,
): Promise<void> {
  if (!validClusterName(cluster)) {
    reply(res, 400, {
      message: `${JSON.stringify(cluster)} is not a valid cluster name (lowercase DNS name)`,
    });
    return;
  }
  if (!(await options.mayRemove(user, cluster).catch(() => false))) {
    const a = clusterRemoveAttributes(cluster);
    reply(res, 403, {
      message: `${user.username} may not remove cluster ${cluster} from the index: grant verb "${a.verb}" on resource "${a.resource}" in API group "${a.group}" with resourceNames ["${cluster}"]`,
    });
    return;
  }
  try {
    const removed = await options.removeCluster(cluster);
    options.logger.info({ cluster, user: user.username, objects: removed }, 'cluster removed from the index');
    reply(res, 200, { cluster, removed });
  } catch (err) {
    options.logger.error({ cluster, err: String(err) }, 'removing a cluster failed');
    reply(res, 503, { message: `the index could not remove cluster ${cluster} now; retry` });
  }
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
