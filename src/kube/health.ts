// Plain-HTTP liveness, readiness and metrics endpoints for processes that serve no HTTPS of their own.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { registry } from './metrics.ts';

export async function startHealthServer(
  port: number,
  ready: () => boolean,
  host = '0.0.0.0',
): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return void res.writeHead(200).end('ok');
    if (path === '/readyz')
      return void (ready() ? res.writeHead(200).end('ok') : res.writeHead(503).end('not ready'));
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
