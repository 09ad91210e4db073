// Sends one call the console accepted to its upstream (the API server, or the search service) as the
// caller: the request is built anew, carrying only the caller's bearer token, the body and a JSON
// content type. Nothing else of the browser's request passes (no cookies, no Impersonate-* headers), and
// the connection trusts the upstream's CA without presenting any certificate of the console's own: the API
// server would otherwise take the console's identity over the token.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent, request } from 'node:https';
import type { Upstream } from '../model.ts';

/** Time an upstream has to answer (a search on a large index included). */
export const UpstreamTimeoutMs = 30_000;

export class Forwarder {
  private readonly upstream: Upstream;
  private readonly agent: Agent;

  constructor(upstream: Upstream) {
    this.upstream = upstream;
    this.agent = new Agent({ keepAlive: true, ca: upstream.caPem, maxSockets: 64 });
  }

  /** Forwards `method path` with `token` and `body`; the upstream's status and JSON body go back as they are. */
  forward(
    res: ServerResponse,
    call: { method: string; path: string; token: string; body?: string },
  ): Promise<void> {
    const base = this.upstream.url;
    const target = new URL(base.pathname.replace(/\/$/, '') + call.path, base);
    const headers: Record<string, string> = {
      authorization: `Bearer ${call.token}`,
      accept: 'application/json',
    };
    if (call.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(call.body));
    }
    return new Promise((resolve) => {
      const req = request(target, { method: call.method, headers, agent: this.agent }, (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, {
          'content-type': upstream.headers['content-type'] ?? 'application/json',
          'cache-control': 'no-store',
        });
        upstream.pipe(res);
        upstream.on('end', resolve);
        upstream.on('error', () => {
          res.destroy();
          resolve();
        });
      });
      req.setTimeout(UpstreamTimeoutMs, () =>
        req.destroy(new Error(`no answer within ${UpstreamTimeoutMs / 1000} s`)),
      );
      req.on('error', (err) => {
        if (!res.headersSent) {
          sendJson(res, 502, {
            reason: 'UpstreamUnavailable',
            message: `${target.origin} could not be reached (${err.message}); try again, or ask your admin whether it is running`,
          });
        } else res.destroy();
        resolve();
      });
      req.end(call.body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** A JSON answer of the console's own (a refusal, an error), never cached. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}

/** The caller's bearer token; the console accepts no other credential (no cookie: CSRF has nothing to ride). */
export function bearerToken(req: IncomingMessage): string | undefined {
  return /^Bearer ([A-Za-z0-9._~+/=-]+)$/.exec(req.headers.authorization ?? '')?.[1];
}
