// A collector's sink on a managed cluster: batches go to the hub's indexer over HTTPS, authenticated by
// a bearer token of the hub. A 429 becomes BackPressureError, so the collector waits and resends.
import { request } from 'node:https';
import { BackPressureError, type IndexBatch, type IndexSink } from '../model.ts';
import { indexerPathPrefix } from './http.ts';

export interface RemoteSinkOptions {
  /** The hub indexer's base URL, e.g. https://search-indexer.tenantkit-system.svc:3010 */
  url: string;
  /** Returns the current bearer token (re-read on every batch, so a rotated token is picked up). */
  token: () => string | Promise<string>;
  /** PEM bundle to trust for the indexer's serving certificate (default: the system's). */
  ca?: string;
  timeoutMs?: number;
}

export class RemoteSink implements IndexSink {
  private readonly options: RemoteSinkOptions;

  constructor(options: RemoteSinkOptions) {
    this.options = options;
  }

  async write(batch: IndexBatch): Promise<void> {
    const url = new URL(`${indexerPathPrefix}${encodeURIComponent(batch.cluster)}/batches`, this.options.url);
    const body = JSON.stringify(batch);
    const token = await this.options.token();
    const { status, text, retryAfter } = await new Promise<{
      status: number;
      text: string;
      retryAfter?: string;
    }>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
          ...(this.options.ca ? { ca: this.options.ca } : {}),
          timeout: this.options.timeoutMs ?? 60_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              text: Buffer.concat(chunks).toString('utf8'),
              ...(typeof res.headers['retry-after'] === 'string'
                ? { retryAfter: res.headers['retry-after'] }
                : {}),
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('timeout', () =>
        req.destroy(new Error(`the indexer did not answer within ${this.options.timeoutMs ?? 60_000} ms`)),
      );
      req.on('error', reject);
      req.end(body);
    });
    if (status === 200) return;
    if (status === 429) {
      const parsed = JSON.parse(text || '{}') as { retryAfterMs?: number };
      throw new BackPressureError(parsed.retryAfterMs ?? Number(retryAfter ?? 1) * 1000);
    }
    let message = text;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? text;
    } catch {}
    throw new Error(`the hub indexer answered ${status}: ${message}`);
  }
}
