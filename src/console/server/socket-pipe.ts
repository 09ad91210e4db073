// Live search results: the page's GraphQL-over-WebSocket connection (graphql-ws) to the search API's
// `watch` subscription, passed through as bytes. The console opens its own upgrade request upstream with
// only the WebSocket handshake headers and the caller's bearer token if the upgrade carried one (an
// authenticating proxy's), never a cookie, then pipes the two sockets. A page holding its token sends it
// inside the stream, in graphql-ws's connection_init payload; the search service authenticates either:
// the console reads no frame and holds no identity to lend.
import type { IncomingMessage } from 'node:http';
import { request } from 'node:https';
import type { Duplex } from 'node:stream';
import type { Upstream } from '../model.ts';
import { bearerToken } from './forward.ts';

/** Open live-result sockets the console keeps at once; more are refused with 503 until some close. */
export const MaxSockets = 1000;
const HandshakeHeaders = ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-protocol'];

export class SocketPipe {
  private readonly upstream: Upstream;
  private readonly path: string;
  private readonly open = new Set<() => void>();

  constructor(upstream: Upstream, path: string) {
    this.upstream = upstream;
    this.path = path;
  }

  get sockets(): number {
    return this.open.size;
  }

  /** Closes every open connection (the server is stopping). */
  closeAll(): void {
    for (const close of [...this.open]) close();
  }

  /** Connects `socket` (an upgrade request the server accepted) to the upstream's WebSocket endpoint. */
  connect(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.open.size >= MaxSockets) {
      refuseUpgrade(socket, 503, 'the console has too many live connections open; try again shortly');
      return;
    }
    const headers: Record<string, string> = { connection: 'Upgrade', upgrade: 'websocket' };
    for (const name of HandshakeHeaders) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    // Behind an authenticating proxy the upgrade request carries the user's token (the page has none to
    // send in the stream): passed on as the only credential, as for every other call.
    const token = bearerToken(req);
    if (token) headers.authorization = `Bearer ${token}`;
    const base = this.upstream.url;
    const target = new URL(base.pathname.replace(/\/$/, '') + this.path, base);
    const out = request(target, { headers, ca: this.upstream.caPem, agent: false });
    out.setTimeout(10_000, () => out.destroy(new Error('no answer within 10 s')));
    out.on('upgrade', (res, upstream, upstreamHead) => {
      out.setTimeout(0);
      const lines = [`HTTP/1.1 101 Switching Protocols`, 'connection: Upgrade', 'upgrade: websocket'];
      for (const name of ['sec-websocket-accept', 'sec-websocket-protocol']) {
        const value = res.headers[name];
        if (typeof value === 'string') lines.push(`${name}: ${value}`);
      }
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (upstreamHead.length > 0) socket.write(upstreamHead);
      if (head.length > 0) upstream.write(head);
      const close = () => {
        if (!this.open.delete(close)) return;
        socket.destroy();
        upstream.destroy();
      };
      this.open.add(close);
      socket.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
      socket.pipe(upstream);
      upstream.pipe(socket);
    });
    out.on('response', (res) => {
      res.resume();
      refuseUpgrade(socket, res.statusCode ?? 502, `the search service refused the connection`);
    });
    out.on('error', (err) => {
      refuseUpgrade(socket, 502, `the search service could not be reached (${err.message})`);
    });
    out.end();
  }
}

/** Answers an upgrade request that will not be upgraded, and closes it. */
export function refuseUpgrade(socket: Duplex, status: number, message: string): void {
  if (socket.destroyed) return;
  const body = `${message}\n`;
  socket.end(
    `HTTP/1.1 ${status} Refused\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
