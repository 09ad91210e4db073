// Prometheus metrics of the collectors, on the process-wide registry that /metrics serves.
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../../kube/metrics.ts';

export const collectorMetrics = {
  types: new Gauge({
    name: 'tenantkit_search_collector_types',
    help: 'Resource types the collector lists and watches, per cluster.',
    labelNames: ['cluster'],
    registers: [registry],
  }),
  objects: new Counter({
    name: 'tenantkit_search_collector_objects_total',
    help: 'Objects the collector queued for the index, per cluster and operation (upsert, delete).',
    labelNames: ['cluster', 'operation'],
    registers: [registry],
  }),
  skipped: new Counter({
    name: 'tenantkit_search_collector_skipped_total',
    help: 'Objects left out of the index because they could not be turned into a valid row (logged).',
    labelNames: ['cluster', 'resource'],
    registers: [registry],
  }),
  lists: new Counter({
    name: 'tenantkit_search_collector_lists_total',
    help: 'Full lists of a type, by reason: start, gone (410 after a watch fell behind), resync, expired (continue token).',
    labelNames: ['cluster', 'reason'],
    registers: [registry],
  }),
  watchErrors: new Counter({
    name: 'tenantkit_search_collector_watch_errors_total',
    help: 'Failed lists and watches (retried with backoff), per cluster.',
    labelNames: ['cluster'],
    registers: [registry],
  }),
  watchPauses: new Counter({
    name: 'tenantkit_search_collector_watch_pauses_total',
    help: 'Watches paused because too many objects were queued; each resumes from where it stopped.',
    labelNames: ['cluster'],
    registers: [registry],
  }),
  pending: new Gauge({
    name: 'tenantkit_search_collector_pending_objects',
    help: 'Objects queued and not yet committed by the index, per cluster.',
    labelNames: ['cluster'],
    registers: [registry],
  }),
  batches: new Counter({
    name: 'tenantkit_search_collector_batches_total',
    help: 'Batches committed by the index, per cluster.',
    labelNames: ['cluster'],
    registers: [registry],
  }),
  batchSeconds: new Histogram({
    name: 'tenantkit_search_collector_batch_seconds',
    help: 'Time for the index to accept one batch, retries included.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  }),
  backPressure: new Counter({
    name: 'tenantkit_search_collector_backpressure_total',
    help: 'Times the index asked the collector to wait and resend, per cluster.',
    labelNames: ['cluster'],
    registers: [registry],
  }),
  sinkErrors: new Counter({
    name: 'tenantkit_search_collector_sink_errors_total',
    help: 'Failed batch writes (retried with capped exponential backoff), per cluster.',
    labelNames: ['cluster'],
    registers: [registry],
  }),
};
