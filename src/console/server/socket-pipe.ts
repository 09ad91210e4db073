// Live search results: the page's GraphQL-over-WebSocket connection (graphql-ws) to the search API's
// `watch` subscription, passed through as bytes. Before anything opens, the caller's token (the upgrade's
// Authorization header from an authenticating proxy, or the page's token subprotocol) is checked with the
// API server (a SelfSubjectReview made with that very token) and the user's open sockets are counted: one
// user holds at most maxSocketsPerUser of them, so no tenant takes the console's whole share. The console
// then opens its own upgrade request upstream with only the WebSocket handshake headers and the caller's
// bearer token, never a cookie, and pipes the two sockets: it reads no frame and lends no identity.
import type { IncomingMessage } from 'node:http';
import { request } from 'node:https';
import type { Duplex } from 'node:stream';
import { DefaultSocketsPerUser, TokenProtocolPrefix, type Upstream } from '../model.ts';
import { bearerToken } from './forward.ts';

/** Open live-result sockets the console keeps at once; more are refused with 503 until some close. */
export const MaxSockets = 1000;
const HandshakeHeaders = ['sec-websocket-key', 'sec-websocket-version'];

/** The token a page offered as a subprotocol, and the subprotocols left to pass on. */
export function tokenProtocol(header: string | undefined): { token?: string; protocols: string[] } {
  const offered = (header ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const carrier = offered.find((p) => p.startsWith(TokenProtocolPrefix));
  const protocols = offered.filter((p) => !p.startsWith(TokenProtocolPrefix));
  if (!carrier) return { protocols };
  const token = Buffer.from(carrier.slice(TokenProtocolPrefix.length), 'base64url').toString('utf8');
  return /^[A-Za-z0-9._~+/=-]+$/.test(token) ? { token, protocols } : { protocols };
}

export class SocketPipe {
  private readonly upstream: Upstream;
  private readonly kube: Upstream;
  private readonly path: string;
  private readonly perUser: number;
  private readonly open = new Set<() => void>();
  /** Sockets open or opening, per user. */
  private readonly users = new Map<string, number>();

  constructor(upstream: Upstream, path: string, kube: Upstream, maxSocketsPerUser = DefaultSocketsPerUser) {
    this.upstream = upstream;
    this.kube = kube;
    this.path = path;
    this.perUser = maxSocketsPerUser;
  }

  /** Sockets `username` holds open (or is opening). */
  socketsOf(username: string): number {
    return this.users.get(username) ?? 0;
  }

  get sockets(): number {
    return this.open.size;
  }

  /** Closes every open connection (the server is stopping). */
  closeAll(): void {
    for (const close of [...this.open]) close();
  }

  /**
   * Connects `socket` (an upgrade request the server accepted) to the upstream's WebSocket endpoint, once
   * the caller's token names a user who holds fewer than maxSocketsPerUser sockets.
   */
  async connect(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    if (this.open.size >= MaxSockets) {
      refuseUpgrade(socket, 503, 'the console has too many live connections open; try again shortly');
      return;
    }
    const caller = await this.caller(req, socket);
    if (!caller) return;
    socket.once('close', this.claim(caller.username));
    this.pipe(req, socket, head, caller);
  }

  /** Who is asking, by the token the request carries; refused (undefined) when nobody or over the limit. */
  private async caller(
    req: IncomingMessage,
    socket: Duplex,
  ): Promise<{ token: string; username: string; protocols: string[] } | undefined> {
    const offered = tokenProtocol(req.headers['sec-websocket-protocol']);
    const token = bearerToken(req) ?? offered.token;
    if (!token) {
      refuseUpgrade(
        socket,
        401,
        `sign in: live results need your token, as "Authorization: Bearer <token>" or the subprotocol ${TokenProtocolPrefix}<base64url token>`,
      );
      return undefined;
    }
    let username: string | undefined;
    try {
      username = await whoIs(this.kube, token);
    } catch (err) {
      refuseUpgrade(
        socket,
        503,
        `the token could not be checked with the API server (${(err as Error).message}); try again`,
      );
      return undefined;
    }
    if (socket.destroyed) return undefined;
    if (!username) {
      refuseUpgrade(socket, 401, 'the token is not valid (expired or revoked); sign in again');
      return undefined;
    }
    const held = this.socketsOf(username);
    if (held >= this.perUser) {
      refuseUpgrade(
        socket,
        429,
        `user "${username}" already holds ${held} live-result connections, the most one user may (${this.perUser}); close another tab of the console, or ask your admin to raise the console's limit per user`,
      );
      return undefined;
    }
    return { token, username, protocols: offered.protocols };
  }

  /** Counts one more socket for `username`; the function returned gives it back (once). */
  private claim(username: string): () => void {
    this.users.set(username, this.socketsOf(username) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.socketsOf(username) - 1;
      if (left > 0) this.users.set(username, left);
      else this.users.delete(username);
    };
  }

  /** Opens the upstream WebSocket with the caller's token as the only credential and pipes the two. */
  private pipe(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    caller: { token: string; protocols: string[] },
  ): void {
    const headers: Record<string, string> = { connection: 'Upgrade', upgrade: 'websocket' };
    for (const name of HandshakeHeaders) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    if (caller.protocols.length > 0) headers['sec-websocket-protocol'] = caller.protocols.join(', ');
    // The caller's token, checked above, is the only credential passed on.
    headers.authorization = `Bearer ${caller.token}`;
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

/**
 * The user `token` authenticates as, by the API server's own answer to a SelfSubjectReview made with it
 * (no identity of the console's involved); undefined when the API server does not accept the token.
 */
export function whoIs(kube: Upstream, token: string): Promise<string | undefined> {
  const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  const target = new URL(
    `${kube.url.pathname.replace(/\/$/, '')}/apis/authentication.k8s.io/v1/selfsubjectreviews`,
    kube.url,
  );
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method: 'POST',
        ca: kube.caPem,
        agent: false,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode === 401) return resolve(undefined);
          if (res.statusCode !== 201 && res.statusCode !== 200) {
            return reject(new Error(`SelfSubjectReview answered ${res.statusCode}`));
          }
          try {
            const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
              status?: { userInfo?: { username?: string } };
            };
            resolve(review.status?.userInfo?.username || undefined);
          } catch (err) {
            reject(err as Error);
          }
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end(body);
  });
}

/** Answers an upgrade request that will not be upgraded, and closes it. */
export function refuseUpgrade(socket: Duplex, status: number, message: string): void {
  if (socket.destroyed) return;
  const body = `${message}\n`;
  socket.end(
    `HTTP/1.1 ${status} Refused\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
