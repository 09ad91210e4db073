// Plain-HTTP liveness, readiness and metrics endpoints for processes that serve no HTTPS of their own.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { registry } from './metrics.ts';

/**
 * Serves /healthz, /readyz and /metrics on `port`. `ready` answers true, or false or the reason why not
 * (the 503's body, which kubelet's probe Events and `curl` show).
 */
export async function startHealthServer(
  port: number,
  ready: () => boolean | string,
  options: {
    host?: string;
    /** Served as JSON at /debug/caches: what each informer's cache holds (sizes and digests, no objects). */
    caches?: () => unknown;
  } = {},
): Promise<Server> {
  const { host = '0.0.0.0', caches } = options;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return void res.writeHead(200).end('ok');
    if (path === '/debug/caches' && caches) {
      return void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(caches()));
    }
    if (path === '/readyz') {
      const answer = ready();
      if (answer === true) return void res.writeHead(200).end('ok');
      return void res.writeHead(503).end(`not ready${typeof answer === 'string' ? `: ${answer}` : ''}`);
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(body),
        () => res.writeHead(500).end(),
      );
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

export const portOf = (server: Server) => (server.address() as AddressInfo).port;
