// The console's HTTPS server: the built page, and the two things the page calls on its own origin, the
// Kubernetes API (allow-listed calls only) and the search API, both as the caller. A call must carry the
// caller's bearer token (the page keeps it in memory; no cookie exists for a forged cross-site request to
// ride) and, when the browser says where it comes from, come from this very origin.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { HttpsListener, readBody, type ServingCertificate } from '../../serving/https.ts';
import { type ConsoleOptions, KubePrefix, ProxySessionPath, SearchPath } from '../model.ts';
import { bodyRefusalOf, refusalOf } from './allow-list.ts';
import { Assets, SecurityHeaders } from './assets.ts';
import { bearerToken, Forwarder, sendJson } from './forward.ts';
import { refuseUpgrade, SocketPipe } from './socket-pipe.ts';

/** Largest body the console forwards: a tenant object, or a GraphQL query. */
export const MaxBodyBytes = 256 * 1024;

export interface ConsoleServerOptions extends ConsoleOptions {
  host?: string;
  port?: number;
  logger: Logger;
  certificate: ServingCertificate;
}

export class ConsoleServer {
  readonly listener: HttpsListener;
  readonly assets: Assets;
  private readonly kube: Forwarder;
  private readonly search: Forwarder | undefined;
  private readonly live: SocketPipe | undefined;

  private constructor(options: ConsoleServerOptions, assets: Assets) {
    this.assets = assets;
    this.kube = new Forwarder(options.kube);
    this.search = options.search ? new Forwarder(options.search) : undefined;
    this.live = options.search
      ? new SocketPipe(options.search, '/searchapi/graphql', options.kube, options.maxSocketsPerUser)
      : undefined;
    this.listener = new HttpsListener({
      ...(options.host ? { host: options.host } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
      logger: options.logger,
      certificate: options.certificate,
      handler: (req, res) => this.handle(req, res),
      route: (path) =>
        path.startsWith(`${KubePrefix}/`) ? KubePrefix : path.startsWith('/api/') ? path : 'page',
    });
    this.listener.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.upgrade(req, socket, head),
    );
  }

  static async start(options: ConsoleServerOptions): Promise<ConsoleServer> {
    const server = new ConsoleServer(options, await Assets.load(options.assetsDir));
    await server.listener.start();
    return server;
  }

  get url(): string {
    return `https://127.0.0.1:${this.listener.port}`;
  }

  async stop(): Promise<void> {
    this.live?.closeAll();
    await this.listener.stop();
    this.kube.close();
    this.search?.close();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for (const [name, value] of Object.entries(SecurityHeaders)) res.setHeader(name, value);
    const url = new URL(req.url ?? '/', 'https://console.invalid');
    if (url.pathname === '/healthz' || url.pathname === '/readyz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (!url.pathname.startsWith('/api/')) {
      this.assets.serve(req, res, url.pathname);
      return;
    }
    await this.api(req, res, url);
  }

  private async api(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const crossSite = crossSiteProblem(req);
    if (crossSite) return refuse(res, 403, 'CrossSiteRequest', crossSite);
    const token = bearerToken(req);
    if (url.pathname === ProxySessionPath) return sendJson(res, 200, { proxied: token !== undefined });
    if (!token) {
      return refuse(
        res,
        401,
        'Unauthorized',
        'sign in: the console needs your token as "Authorization: Bearer <token>"',
      );
    }
    const method = req.method ?? 'GET';
    if (url.pathname === SearchPath) {
      if (method !== 'POST') return refuse(res, 405, 'MethodNotAllowed', `${SearchPath} takes POST only`);
      if (!this.search)
        return refuse(
          res,
          503,
          'SearchUnavailable',
          'search is not configured for this console; ask your admin',
        );
      const body = await this.jsonBody(req, res);
      if (body === undefined) return;
      return this.search.forward(res, { method, path: '/searchapi/graphql', token, body });
    }
    if (!url.pathname.startsWith(`${KubePrefix}/`)) {
      return refuse(res, 404, 'NotFound', `${url.pathname} is not an API of the console`);
    }
    const path = url.pathname.slice(KubePrefix.length);
    const refusal = refusalOf(method, path, url.searchParams);
    if (refusal) return refuse(res, refusal.status, refusal.reason, refusal.message);
    const hasBody = method === 'POST' || method === 'PUT';
    const body = hasBody ? await this.jsonBody(req, res) : undefined;
    if (hasBody && body === undefined) return;
    const bodyRefusal = body !== undefined ? bodyRefusalOf(path, JSON.parse(body)) : undefined;
    if (bodyRefusal) return refuse(res, bodyRefusal.status, bodyRefusal.reason, bodyRefusal.message);
    const query = url.searchParams.size > 0 ? `?${url.searchParams}` : '';
    return this.kube.forward(res, {
      method,
      path: `${path}${query}`,
      token,
      ...(body !== undefined ? { body } : {}),
    });
  }

  /**
   * A WebSocket for live search results (graphql-ws, the search API's `watch`): piped to the search
   * service once the caller's token names a user under the per-user limit (see SocketPipe).
   */
  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const path = new URL(req.url ?? '/', 'https://console.invalid').pathname;
    const crossSite = crossSiteProblem(req);
    if (path !== SearchPath) refuseUpgrade(socket, 404, `only ${SearchPath} takes a WebSocket`);
    else if (crossSite) refuseUpgrade(socket, 403, crossSite);
    else if (!this.live)
      refuseUpgrade(socket, 503, 'search is not configured for this console; ask your admin');
    else
      this.live.connect(req, socket, head).catch(() => {
        refuseUpgrade(socket, 500, 'the live connection could not be opened; try again');
      });
  }

  /** The request's JSON body, or undefined after answering why it is not one. */
  private async jsonBody(req: IncomingMessage, res: ServerResponse): Promise<string | undefined> {
    if (!/^application\/json\b/.test(String(req.headers['content-type'] ?? ''))) {
      refuse(res, 415, 'UnsupportedMediaType', 'send the body as Content-Type: application/json');
      return undefined;
    }
    const body = await readBody(req, MaxBodyBytes);
    if (body === undefined) {
      refuse(
        res,
        413,
        'RequestTooLarge',
        `the body is larger than the ${MaxBodyBytes / 1024} KiB the console forwards`,
      );
      return undefined;
    }
    try {
      JSON.parse(body);
    } catch (err) {
      refuse(res, 400, 'InvalidJson', `the body is not JSON: ${(err as Error).message}`);
      return undefined;
    }
    return body;
  }
}

/** Why a request does not come from the console's own page, going by what the browser says. */
function crossSiteProblem(req: IncomingMessage): string | undefined {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    return `the console answers its own page only (Sec-Fetch-Site: ${site})`;
  }
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `https://${req.headers.host}`) {
    return `the console answers its own page only (Origin ${origin})`;
  }
  return undefined;
}

/** A refusal in the shape of a Kubernetes Status, so the page reads every error the same way. */
function refuse(res: ServerResponse, status: number, reason: string, message: string): void {
  sendJson(res, status, {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    code: status,
    reason,
    message,
  });
}
