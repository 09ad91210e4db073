// Prometheus metrics of search, on the process-wide registry that /metrics serves.
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../kube/metrics.ts';

const buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const searchMetrics = {
  replicaLag: new Gauge({
    name: 'tenantkit_search_replica_lag_seconds',
    help: 'How far each read replica is behind the primary, as the last poll found it (-1: unreachable). Reads go to a replica only while its staleness is within the bound.',
    labelNames: ['replica'],
    registers: [registry],
  }),
  reads: new Counter({
    name: 'tenantkit_search_reads_total',
    help: 'Search queries by where they were read: a replica (by name) or the primary.',
    labelNames: ['target'],
    registers: [registry],
  }),
  indexerBatchSeconds: new Histogram({
    name: 'tenantkit_search_indexer_batch_seconds',
    help: 'Time to apply one collector batch to the index.',
    buckets,
    registers: [registry],
  }),
  indexerRows: new Counter({
    name: 'tenantkit_search_indexer_rows_total',
    help: 'Objects received, changed (written) and deleted by the indexer, per cluster.',
    labelNames: ['cluster', 'change'],
    registers: [registry],
  }),
  indexerBatches: new Counter({
    name: 'tenantkit_search_indexer_batches_total',
    help: 'Collector batches by outcome: applied, duplicate (a resend of one applied before, acknowledged only), superseded (of a collector stream a newer one replaced: refused).',
    labelNames: ['cluster', 'outcome'],
    registers: [registry],
  }),
  indexerQueued: new Gauge({
    name: 'tenantkit_search_indexer_queued_batches',
    help: 'Batches waiting to be applied, per cluster.',
    labelNames: ['cluster'],
    registers: [registry],
  }),
  indexerBytesInFlight: new Gauge({
    name: 'tenantkit_search_indexer_bytes_in_flight',
    help: "Bytes of managed clusters' batches the indexer endpoint holds (read, queued or being applied).",
    registers: [registry],
  }),
  indexerRejected: new Counter({
    name: 'tenantkit_search_indexer_backpressure_total',
    help: "Batches refused because the cluster's queue or the endpoint's bytes in flight were full (HTTP 429 for remote collectors).",
    labelNames: ['cluster'],
    registers: [registry],
  }),
  indexerErrors: new Counter({
    name: 'tenantkit_search_indexer_errors_total',
    help: 'Batches that failed to apply.',
    labelNames: ['cluster'],
    registers: [registry],
  }),
  apiSeconds: new Histogram({
    name: 'tenantkit_search_api_request_seconds',
    help: 'Time to answer one GraphQL request over HTTP, by status code.',
    labelNames: ['code'],
    buckets,
    registers: [registry],
  }),
  querySeconds: new Histogram({
    name: 'tenantkit_search_query_seconds',
    help: 'Time of one index query, by operation.',
    labelNames: ['operation'],
    buckets,
    registers: [registry],
  }),
};
