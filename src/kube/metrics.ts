// Prometheus metrics of the runtime. One registry per process; the webhook server and `tenantkit
// controllers` expose it on /metrics.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'tenantkit_' });

const durationBuckets = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const metrics = {
  reconcileTotal: new Counter({
    name: 'tenantkit_reconcile_total',
    help: 'Reconciliations by controller and result (success, error, requeue).',
    labelNames: ['controller', 'result'],
    registers: [registry],
  }),
  reconcileDuration: new Histogram({
    name: 'tenantkit_reconcile_duration_seconds',
    help: 'Time spent in one reconcile call.',
    labelNames: ['controller'],
    buckets: durationBuckets,
    registers: [registry],
  }),
  queueDepth: new Gauge({
    name: 'tenantkit_workqueue_depth',
    help: 'Keys waiting in a controller work queue.',
    labelNames: ['controller'],
    registers: [registry],
  }),
  queueRetries: new Counter({
    name: 'tenantkit_workqueue_retries_total',
    help: 'Keys re-queued with backoff after an error.',
    labelNames: ['controller'],
    registers: [registry],
  }),
  informerRelists: new Counter({
    name: 'tenantkit_informer_relists_total',
    help: 'Full relists after a watch expired (410 Gone).',
    labelNames: ['resource'],
    registers: [registry],
  }),
  informerObjects: new Gauge({
    name: 'tenantkit_informer_objects',
    help: 'Objects an informer holds, by resource and the selector it caches (what its memory grows with).',
    labelNames: ['resource', 'selector'],
    registers: [registry],
  }),
  kubeRequests: new Counter({
    name: 'tenantkit_kube_requests_total',
    help: 'Requests to the Kubernetes API by method and status code (watches excluded).',
    labelNames: ['method', 'code'],
    registers: [registry],
  }),
  leader: new Gauge({
    name: 'tenantkit_leader',
    help: '1 while this process holds the leader lease.',
    labelNames: ['lease'],
    registers: [registry],
  }),
  webhookDuration: new Histogram({
    name: 'tenantkit_webhook_duration_seconds',
    help: 'Admission review handling time by webhook and verdict.',
    labelNames: ['webhook', 'allowed'],
    buckets: durationBuckets,
    registers: [registry],
  }),
  httpsRequestDuration: new Histogram({
    name: 'tenantkit_https_request_duration_seconds',
    help: "Time from a request's headers to the end of its response, by path (body read, parse, handler, reply).",
    labelNames: ['path'],
    buckets: durationBuckets,
    registers: [registry],
  }),
  webhookPhase: new Histogram({
    name: 'tenantkit_webhook_phase_seconds',
    help: "Where an admission request's time in the webhook server goes, by webhook and phase: body (headers to the whole body), checks (parsing and shape checks), reply (handing the reply to the socket until it is written).",
    labelNames: ['webhook', 'phase'],
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05],
    registers: [registry],
  }),
  httpsConnections: new Counter({
    name: 'tenantkit_https_connections_total',
    help: "TLS connections accepted by this process's HTTPS server (clients that reuse connections open few).",
    registers: [registry],
  }),
  webhookErrors: new Counter({
    name: 'tenantkit_webhook_errors_total',
    help: 'Admission reviews that failed inside tenantkit (bad request, handler error, timeout).',
    labelNames: ['webhook', 'reason'],
    registers: [registry],
  }),
};
