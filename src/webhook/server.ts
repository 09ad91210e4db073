// The HTTPS admission webhook server: one path per webhook, AdmissionReview v1 in and out, a deadline
// per request, health and metrics endpoints, and a serving certificate that can be swapped live (when
// the files change on disk, e.g. a rotated Secret, or by calling setCertificate).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { metrics, registry } from '../kube/metrics.ts';
import type { KeyPair } from '../pki/certs.ts';
import { type AdmissionReview, toResponse, type Verdict } from './admission.ts';
import { HttpsListener, readBody, type ServingCertificate } from './https.ts';
import type { WebhookDefinition } from './registration.ts';

export interface WebhookServerOptions {
  host?: string;
  port?: number;
  logger: Logger;
  /** In-memory certificate, or files that are re-read whenever they change. */
  certificate: ServingCertificate;
  /** Extra readiness check (e.g. caches synced); /readyz answers 503 until it returns true. */
  ready?: () => boolean;
}

const maxBodyBytes = 3 * 1024 * 1024;

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
    if (req.method === 'GET' && path === '/healthz') return void res.writeHead(200).end('ok');
    if (req.method === 'GET' && path === '/readyz') {
      const ready = this.listening && (this.options.ready?.() ?? true);
      return void res.writeHead(ready ? 200 : 503).end(ready ? 'ok' : 'not ready');
    }
    if (req.method === 'GET' && path === '/metrics') {
      const body = await registry.metrics();
      return void res.writeHead(200, { 'Content-Type': registry.contentType }).end(body);
    }
    const webhook = req.method === 'POST' ? this.webhooks.get(path.replace(/^\//, '')) : undefined;
    if (!webhook) return void res.writeHead(404).end('not found');

    const body = await readBody(req, maxBodyBytes);
    if (body === undefined) {
      metrics.webhookErrors.inc({ webhook: webhook.name, reason: 'too_large' });
      return void res.writeHead(413).end('request body too large');
    }
    let review: AdmissionReview;
    try {
      review = JSON.parse(body) as AdmissionReview;
    } catch {
      metrics.webhookErrors.inc({ webhook: webhook.name, reason: 'bad_json' });
      return void res.writeHead(400).end('body is not JSON');
    }
    // `null`, a number or an array parse as JSON too: only an object can be a review.
    const request = typeof review === 'object' && review !== null ? review.request : undefined;
    if (
      !request ||
      review.apiVersion !== 'admission.k8s.io/v1' ||
      review.kind !== 'AdmissionReview' ||
      !request?.uid
    ) {
      metrics.webhookErrors.inc({ webhook: webhook.name, reason: 'bad_review' });
      return void res.writeHead(400).end('expected an admission.k8s.io/v1 AdmissionReview with request.uid');
    }
    const started = performance.now();
    const verdict = await this.decide(webhook, request);
    metrics.webhookDuration.observe(
      { webhook: webhook.name, allowed: String(verdict.allowed) },
      (performance.now() - started) / 1000,
    );
    const out: AdmissionReview = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: toResponse(request.uid, verdict),
    };
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
          timer = setTimeout(() => reject(new Error(`no verdict within ${budget} ms`)), budget);
        }),
      ]);
    } catch (err) {
      abort.abort();
      const message = err instanceof Error ? err.message : String(err);
      metrics.webhookErrors.inc({ webhook: webhook.name, reason: 'handler' });
      this.options.logger.error(
        { webhook: webhook.name, uid: request.uid, err: message },
        'admission handler failed',
      );
      if (webhook.failurePolicy === 'Ignore') {
        return {
          allowed: true,
          warnings: [`tenantkit webhook ${webhook.name} could not check this request: ${message}`],
        };
      }
      return {
        allowed: false,
        code: 500,
        reason: 'InternalError',
        message: `tenantkit webhook ${webhook.name} could not check this request (${message}); retry, and tell your cluster admin if it persists`,
      };
    } finally {
      clearTimeout(timer);
    }
  }
}
