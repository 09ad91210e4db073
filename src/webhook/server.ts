// The HTTPS admission webhook server: one path per webhook, AdmissionReview v1 in and out, a deadline
// per request, health and metrics endpoints, and a serving certificate that can be swapped live (when
// the files change on disk, e.g. a rotated Secret, or by calling setCertificate).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { metrics, registry } from '../kube/metrics.ts';
import type { KeyPair } from '../serving/certs.ts';
import {
  HttpsListener,
  MaxJsonDepth,
  nestedDeeperThan,
  readBody,
  type ServingCertificate,
} from '../serving/https.ts';
import { type AdmissionReview, toResponse, type Verdict } from './admission.ts';
import type { WebhookDefinition } from './registration.ts';
import { requestProblem, specProblem } from './review-shape.ts';

export interface WebhookServerOptions {
  host?: string;
  port?: number;
  logger: Logger;
  /** In-memory certificate, or files that are re-read whenever they change. */
  certificate: ServingCertificate;
  /** Extra readiness check (e.g. caches synced); /readyz answers 503 until it returns true. */
  ready?: () => boolean;
  /** On stop, keep serving this long with `Connection: close` (see HttpsListenerOptions.drainMs). */
  drainMs?: number;
  /**
   * PEM bundle of the CAs that sign kube-apiserver's webhook client certificate (AdmissionConfiguration
   * `kubeConfigFile`). When set, a review from a caller without such a certificate is refused (403)
   * before its body is read: nobody but the API server gets a decision. Health, readiness and metrics
   * stay open (kubelet probes present no certificate).
   */
  clientCaPem?: string;
}

const maxBodyBytes = 3 * 1024 * 1024;

/** A refusal of the HTTP request itself: a machine-readable code and a message naming the limit or field. */
function refuse(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ code, message }));
}

/** The handler did not answer in time (our own deadline, not an error in the handler). */
class DeadlineExceeded extends Error {}

export class WebhookServer {
  private readonly options: WebhookServerOptions;
  private readonly webhooks = new Map<string, WebhookDefinition>();
  private listener?: HttpsListener;
  private listening = false;

  constructor(options: WebhookServerOptions) {
    this.options = options;
  }

  register(...definitions: WebhookDefinition[]): void {
    for (const def of definitions) {
      if (this.webhooks.has(def.name)) throw new Error(`webhook ${def.name} registered twice`);
      this.webhooks.set(def.name, def);
    }
  }

  definitions(): WebhookDefinition[] {
    return [...this.webhooks.values()];
  }

  get port(): number {
    return this.listener?.port ?? 0;
  }

  /** Replaces the serving certificate; new TLS handshakes use it, open connections keep theirs. */
  setCertificate(pair: KeyPair): void {
    this.listener?.setCertificate(pair);
  }

  async start(): Promise<number> {
    this.listener = new HttpsListener({
      ...(this.options.host ? { host: this.options.host } : {}),
      ...(this.options.port ? { port: this.options.port } : {}),
      logger: this.options.logger,
      certificate: this.options.certificate,
      ...(this.options.drainMs ? { drainMs: this.options.drainMs } : {}),
      ...(this.options.clientCaPem ? { clientCaPem: this.options.clientCaPem } : {}),
      handler: (req, res) => this.handle(req, res),
    });
    await this.listener.start();
    this.listening = true;
    this.options.logger.info(
      { port: this.port, webhooks: [...this.webhooks.keys()] },
      'webhook server listening',
    );
    return this.port;
  }

  async stop(): Promise<void> {
    this.listening = false;
    await this.listener?.stop();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && (await this.probe(path, res))) return;
    const webhook = req.method === 'POST' ? this.webhooks.get(path.replace(/^\//, '')) : undefined;
    if (!webhook) return void res.writeHead(404).end('not found');
    if (this.options.clientCaPem && !(req.socket as TLSSocket).authorized) {
      metrics.webhookErrors.inc({ webhook: webhook.name, reason: 'unauthenticated' });
      return refuse(
        res,
        403,
        'ClientCertificateRequired',
        'this webhook server answers only the API server: present the client certificate its admission configuration (kubeConfigFile) names, signed by the CA the server was given',
      );
    }

    const arrived = performance.now();
    const body = await readBody(req, maxBodyBytes);
    const read = performance.now();
    metrics.webhookPhase.observe({ webhook: webhook.name, phase: 'body' }, (read - arrived) / 1000);
    const review = readReview(body);
    if ('refusal' in review) {
      const { metric, status, reason, message } = review.refusal;
      metrics.webhookErrors.inc({ webhook: webhook.name, reason: metric });
      return refuse(res, status, reason, message);
    }
    const { uid, request } = review;
    // A review the API server would never send gets a denial naming the field, before any handler
    // reads it: never a JavaScript error, and never an allowance because a handler could not read it.
    const problem =
      requestProblem(request) ??
      (webhook.specSchema
        ? specProblem(webhook.specSchema, request as object, webhook.specRequired)
        : undefined);
    if (problem) {
      metrics.webhookErrors.inc({ webhook: webhook.name, reason: 'bad_review' });
      return this.reply(res, webhook.name, uid, {
        allowed: false,
        code: 400,
        reason: 'BadRequest',
        message: `tenantkit webhook ${webhook.name} cannot read this request: ${problem}`,
      });
    }
    const admission = request as NonNullable<AdmissionReview['request']>;
    const started = performance.now();
    metrics.webhookPhase.observe({ webhook: webhook.name, phase: 'checks' }, (started - read) / 1000);
    const verdict = await this.decide(webhook, admission);
    metrics.webhookDuration.observe(
      { webhook: webhook.name, allowed: String(verdict.allowed) },
      (performance.now() - started) / 1000,
    );
    this.reply(res, webhook.name, uid, verdict);
  }

  /** Answers the health, readiness and metrics endpoints (true), or leaves the request alone (false). */
  private async probe(path: string, res: ServerResponse): Promise<boolean> {
    if (path === '/healthz') {
      res.writeHead(200).end('ok');
      return true;
    }
    if (path === '/readyz') {
      const ready = this.listening && (this.options.ready?.() ?? true);
      res.writeHead(ready ? 200 : 503).end(ready ? 'ok' : 'not ready');
      return true;
    }
    if (path === '/metrics') {
      const body = await registry.metrics();
      res.writeHead(200, { 'Content-Type': registry.contentType }).end(body);
      return true;
    }
    return false;
  }

  private reply(res: ServerResponse, name: string, uid: string, verdict: Verdict): void {
    const out: AdmissionReview = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: toResponse(uid, verdict),
    };
    const replying = performance.now();
    res.once('finish', () =>
      metrics.webhookPhase.observe({ webhook: name, phase: 'reply' }, (performance.now() - replying) / 1000),
    );
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(out));
  }

  /** Runs the handler under the webhook's deadline; failures follow the webhook's failure policy. */
  private async decide(
    webhook: WebhookDefinition,
    request: NonNullable<AdmissionReview['request']>,
  ): Promise<Verdict> {
    // Answer before the API server gives up on us, so our verdict (not a timeout) decides.
    const budget = Math.max(200, (webhook.timeoutSeconds ?? 10) * 1000 - 500);
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        Promise.resolve(webhook.handler(request, abort.signal)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new DeadlineExceeded(`no verdict within ${budget} ms`)), budget);
        }),
      ]);
    } catch (err) {
      abort.abort();
      const late = err instanceof DeadlineExceeded;
      // The client learns the error's id, never its text (a JavaScript error says nothing useful to a
      // tenant and may say too much); the log has both.
      const id = randomUUID().slice(0, 8);
      metrics.webhookErrors.inc({ webhook: webhook.name, reason: late ? 'deadline' : 'handler' });
      this.options.logger.error(
        {
          webhook: webhook.name,
          uid: request.uid,
          errorId: id,
          err: err instanceof Error ? err.stack : String(err),
        },
        'admission handler failed',
      );
      const what = late ? `no verdict within ${budget} ms` : `error ${id}`;
      // Advice (a validating webhook that fails open) may let the request pass; defaults may not: an
      // object a tenant could make a defaulting webhook choke on must not get in without them.
      if (webhook.failurePolicy === 'Ignore' && webhook.type === 'validating') {
        return {
          allowed: true,
          warnings: [`tenantkit webhook ${webhook.name} could not check this request (${what})`],
        };
      }
      return {
        allowed: false,
        code: 500,
        reason: 'InternalError',
        message:
          webhook.type === 'mutating'
            ? `tenantkit webhook ${webhook.name} could not apply its defaults to this request (${what}), so it is refused rather than admitted without them; retry, and tell your cluster admin if it persists`
            : `tenantkit webhook ${webhook.name} could not check this request (${what}); retry, and tell your cluster admin if it persists`,
      };
    } finally {
      clearTimeout(timer);
    }
  }
}

interface ReviewRefusal {
  /** The reason label of the error metric. */
  metric: string;
  status: number;
  reason: string;
  message: string;
}

/**
 * The AdmissionReview in a request body, or why the HTTP request itself is refused: too large, nested too
 * deep, not JSON, or not an admission.k8s.io/v1 AdmissionReview with a string uid to answer to (`null`, a
 * number or an array parse as JSON too: only an object can be a review).
 */
function readReview(
  body: string | undefined,
): { refusal: ReviewRefusal } | { uid: string; request: unknown } {
  if (body === undefined) {
    const message = `request body too large: the limit is ${maxBodyBytes} bytes`;
    return { refusal: { metric: 'too_large', status: 413, reason: 'RequestTooLarge', message } };
  }
  if (nestedDeeperThan(body, MaxJsonDepth)) {
    const message = `JSON nested deeper than ${MaxJsonDepth} levels; no AdmissionReview is`;
    return { refusal: { metric: 'too_deep', status: 400, reason: 'NestedTooDeep', message } };
  }
  let review: AdmissionReview;
  try {
    review = JSON.parse(body) as AdmissionReview;
  } catch {
    return {
      refusal: { metric: 'bad_json', status: 400, reason: 'InvalidJSON', message: 'body is not JSON' },
    };
  }
  const envelope =
    typeof review === 'object' && review !== null && !Array.isArray(review) ? review : undefined;
  const request = envelope?.request as unknown;
  const uid =
    typeof request === 'object' && request !== null ? (request as { uid?: unknown }).uid : undefined;
  if (
    envelope?.apiVersion !== 'admission.k8s.io/v1' ||
    envelope.kind !== 'AdmissionReview' ||
    typeof uid !== 'string' ||
    uid === '' ||
    uid.length > 128
  ) {
    const message =
      'expected an admission.k8s.io/v1 AdmissionReview whose request.uid is a string of 1 to 128 characters';
    return { refusal: { metric: 'bad_review', status: 400, reason: 'InvalidReview', message } };
  }
  return { uid, request };
}
