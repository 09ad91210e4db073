// The search service's HTTPS endpoint: the GraphQL API at /searchapi/graphql (HTTP and graphql-ws on the
// same path) and, when this process indexes, the collectors' endpoint at /searchindexer/. Every request
// is authenticated (bearer token or ACM's cookie, TokenReview) and, for the API, authorized from the
// caller's local access set: no API call per request once the token is cached. A cookie rides along on
// any request a browser makes, so it counts only from the service's own origin (see cookieOriginProblem);
// /metrics names clusters, so it answers only a caller the API server lets `get /metrics`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import {
  type ASTVisitor,
  GraphQLError,
  type GraphQLSchema,
  specifiedRules,
  type ValidationContext,
  type ValidationRule,
  validate,
} from 'graphql';
import { createHandler, type Request as GraphQLHttpRequest, type Handler } from 'graphql-http';
import { useServer } from 'graphql-ws/use/ws';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { registry } from '../../kube/metrics.ts';
import type { KeyPair } from '../../serving/certs.ts';
import {
  HttpsListener,
  MaxJsonDepth,
  nestedDeeperThan,
  readBody,
  type ServingCertificate,
} from '../../serving/https.ts';
import {
  SearchApiGroup,
  SearchResource,
  SearchUserClusterRoleName,
  SearchVerb,
} from '../access/search-api.ts';
import { searchMetrics } from '../metrics.ts';
import type { AccessProvider, AccessSet, SearchBackend, SearchUser } from '../model.ts';
import { AcmTokenCookie, tokenFromHeaders } from './authn.ts';
import { parseBounded } from './document-limits.ts';
import { type Message, type SearchContext, searchRoot } from './resolvers.ts';
import { searchSchema } from './schema.ts';

export const graphqlPath = '/searchapi/graphql';

type AuthenticatedRequest = IncomingMessage & { searchUser?: SearchUser };

export interface SearchApiLimits {
  /** SearchInputs in one `search` call (default 20). */
  maxInputs: number;
  /** Request body size (default 1 MiB). */
  maxBodyBytes: number;
  /** Fields in one operation, aliases included (default 200): a query cannot multiply its own cost. */
  maxFields: number;
}

export interface SearchServerOptions {
  host?: string;
  port?: number;
  logger: Logger;
  certificate: ServingCertificate;
  /**
   * CAs of the cluster's client certificates (kube-system/extension-apiserver-authentication): a caller
   * presenting one is the certificate's CN, in its O groups, as kube-apiserver would see them.
   */
  clientCaPem?: string;
  /** The user behind a token; undefined when the token is not valid; rejects when it cannot tell. */
  authenticate(token: string): Promise<SearchUser | undefined>;
  /** Serve the GraphQL API. */
  api?: {
    backend: SearchBackend;
    access: AccessProvider;
    messages?: () => Message[];
    limits?: Partial<SearchApiLimits>;
  };
  /**
   * The collectors' endpoint (managed clusters push here), served beside the API when this process
   * indexes: it answers the requests it takes (true) and leaves the others to the API.
   */
  indexer?: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
  /** /readyz answers 503 until this returns true. */
  ready?: () => boolean;
  /**
   * Origins besides the service's own (`https://<Host>`) whose pages may use ACM's cookie here, e.g. the
   * console that embeds search. A bearer token in an Authorization header is accepted from anywhere.
   */
  allowedOrigins?: readonly string[];
  /** Whether `user` may read /metrics (the API server's `get` on the non-resource URL /metrics). */
  mayReadMetrics?: (user: SearchUser) => Promise<boolean>;
}

const defaultLimits: SearchApiLimits = { maxInputs: 20, maxBodyBytes: 1024 * 1024, maxFields: 200 };

/** A set that shows nothing: what someone who may not use search sees (e.g. on a watch after revocation). */
const nothing: AccessSet = {
  all: false,
  clusterWide: [],
  namespaced: [],
  managedClusters: [],
  canSearch: false,
  digest: 'nothing',
};

function fieldLimitRule(max: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    let fields = 0;
    return {
      Field() {
        fields++;
        if (fields === max + 1) {
          context.reportError(
            new GraphQLError(`the query selects more than ${max} fields; split it into several requests`, {
              extensions: { code: 'QUERY_TOO_COMPLEX' },
            }),
          );
        }
      },
    };
  };
}

function replyJson(res: ServerResponse, status: number, code: string, message: string, headers = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ message, errors: [{ message, extensions: { code } }] }));
}

/** A GraphQL reply whose every error is UNAVAILABLE (and so whose data holds no answer). */
export function onlyUnavailable(text: string): boolean {
  if (!text.includes('"UNAVAILABLE"')) return false;
  try {
    const { errors } = JSON.parse(text) as { errors?: { extensions?: { code?: string } }[] };
    return !!errors?.length && errors.every((e) => e.extensions?.code === 'UNAVAILABLE');
  } catch {
    return false;
  }
}

export const forbiddenMessage = (user: SearchUser) =>
  `user "${user.username}" may not use search: it needs verb "${SearchVerb}" on "${SearchResource}.${SearchApiGroup}" in some namespace; ask an admin to bind the ClusterRole ${SearchUserClusterRoleName} (also part of the admin, edit and view roles)`;

/** The user of a verified client certificate (the listener checked it against the client CAs). */
function certificateUser(req: IncomingMessage): SearchUser | undefined {
  const socket = req.socket as TLSSocket;
  if (!socket.authorized) return undefined;
  const cert = socket.getPeerCertificate();
  const cn = cert?.subject?.CN;
  if (typeof cn !== 'string' || cn === '') return undefined;
  const o = cert.subject.O;
  const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return { username: cn, groups: [...groups, 'system:authenticated'] };
}

/** The credential of a request is ACM's cookie (no Authorization header carries a token). */
function cookieBorne(req: IncomingMessage): boolean {
  return (
    tokenFromHeaders({ authorization: req.headers.authorization }) === undefined &&
    tokenFromHeaders({ cookie: req.headers.cookie }) !== undefined
  );
}

/**
 * Why a request that authenticates with ACM's cookie may not: the browser says it comes from a page of
 * another origin (a cross-site WebSocket or fetch would otherwise read the user's results). A request
 * without Origin is not a browser's cross-origin one; a bearer token is never sent by a browser on its own.
 */
export function cookieOriginProblem(
  req: IncomingMessage,
  allowed: readonly string[] = [],
): string | undefined {
  if (!cookieBorne(req)) return undefined;
  const origin = req.headers.origin;
  const site = req.headers['sec-fetch-site'];
  if (origin === undefined) {
    if (site === undefined || site === 'same-origin' || site === 'none') return undefined;
    return `the ${AcmTokenCookie} cookie is accepted only from search's own origin (Sec-Fetch-Site: ${site}); send the token as "Authorization: Bearer <token>" instead`;
  }
  if (origin === `https://${req.headers.host}` || allowed.includes(origin)) return undefined;
  return `the ${AcmTokenCookie} cookie is accepted only from search's own origin, not from ${origin}; send the token as "Authorization: Bearer <token>", or ask the admin to add ${origin} to the search API's allowed origins`;
}

export class SearchServer {
  private readonly options: SearchServerOptions;
  private readonly listener: HttpsListener;
  private readonly schema: GraphQLSchema;
  private readonly limits: SearchApiLimits;
  private readonly contexts = new WeakMap<IncomingMessage, SearchContext>();
  private readonly handleGraphql: Handler<IncomingMessage, undefined>;
  private readonly ws: WebSocketServer;
  private disposeWs?: () => Promise<void> | void;

  constructor(options: SearchServerOptions) {
    this.options = options;
    this.limits = { ...defaultLimits, ...options.api?.limits };
    this.schema = searchSchema();
    const root = options.api
      ? searchRoot({
          backend: options.api.backend,
          logger: options.logger,
          maxInputs: this.limits.maxInputs,
          ...(options.api.messages ? { messages: options.api.messages } : {}),
        })
      : {};
    const validationRules = [...specifiedRules, fieldLimitRule(this.limits.maxFields)];
    this.handleGraphql = createHandler<IncomingMessage, undefined, SearchContext>({
      schema: this.schema,
      rootValue: root,
      validationRules,
      parse: parseBounded,
      context: (req) => this.contexts.get(req.raw)!,
    });
    this.ws = new WebSocketServer({ noServer: true, maxPayload: this.limits.maxBodyBytes });
    this.disposeWs = useServer<Record<string, unknown>, { user?: SearchUser }>(
      {
        schema: this.schema,
        roots: { query: root, subscription: root },
        parse: parseBounded,
        // graphql-ws parses without catching: a document it cannot parse would close the socket (4500).
        // Parsed here first, a refusal is an error message on this subscription and the socket stays.
        onSubscribe: (_ctx, _id, payload) => {
          try {
            parseBounded(payload.query);
          } catch (err) {
            if (err instanceof GraphQLError) return [err];
            throw err;
          }
          return undefined;
        },
        validate: (schema, document) => validate(schema, document, validationRules),
        onConnect: async (ctx) => {
          // The upgrade request was authenticated already (see upgrade); connectionParams may carry a
          // token instead, as some GraphQL clients send it there.
          const upgraded = (ctx.extra.request as AuthenticatedRequest).searchUser;
          if (upgraded) {
            ctx.extra.user = upgraded;
            return true;
          }
          const param = ctx.connectionParams?.authorization ?? ctx.connectionParams?.Authorization;
          const token = typeof param === 'string' ? tokenFromHeaders({ authorization: param }) : undefined;
          const user = token ? await options.authenticate(token).catch(() => undefined) : undefined;
          if (!user || !this.mayUse(user)) return false;
          ctx.extra.user = user;
          return true;
        },
        context: (ctx) => this.contextFor(ctx.extra.user!),
      },
      this.ws,
    ).dispose;
    this.listener = new HttpsListener({
      ...(options.host ? { host: options.host } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
      logger: options.logger,
      certificate: options.certificate,
      ...(options.clientCaPem ? { clientCaPem: options.clientCaPem } : {}),
      handler: (req, res) => this.handle(req, res),
    });
    this.listener.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.upgrade(req, socket, head).catch((err: unknown) => {
        options.logger.warn({ err: String(err) }, 'websocket upgrade failed');
        socket.destroy();
      });
    });
  }

  get port(): number {
    return this.listener.port;
  }

  /** Replaces the serving certificate; new TLS handshakes use it, open connections keep theirs. */
  setCertificate(pair: KeyPair): void {
    this.listener.setCertificate(pair);
  }

  async start(): Promise<number> {
    const port = await this.listener.start();
    this.options.logger.info(
      { port, api: Boolean(this.options.api), indexer: Boolean(this.options.indexer) },
      'search server listening',
    );
    return port;
  }

  async stop(): Promise<void> {
    for (const client of this.ws.clients) client.terminate();
    await this.disposeWs?.();
    await this.listener.stop();
  }

  private mayUse(user: SearchUser): boolean {
    return this.options.api?.access.forUser(user).canSearch === true;
  }

  private contextFor(user: SearchUser): SearchContext {
    const access = this.options.api!.access;
    return {
      user,
      access: () => {
        const set = access.forUser(user);
        return set.canSearch ? set : nothing;
      },
    };
  }

  /** The caller, or undefined after answering 401/503 (no token, a rejected token, no TokenReview). */
  private async caller(req: IncomingMessage, res: ServerResponse): Promise<SearchUser | undefined> {
    const crossOrigin = cookieOriginProblem(req, this.options.allowedOrigins);
    if (crossOrigin) {
      replyJson(res, 403, 'CROSS_ORIGIN', crossOrigin);
      return undefined;
    }
    const token = tokenFromHeaders(req.headers);
    if (!token) {
      const fromCertificate = certificateUser(req);
      if (fromCertificate) return fromCertificate;
      replyJson(
        res,
        401,
        'UNAUTHENTICATED',
        'send a bearer token of the cluster: Authorization: Bearer <token>',
      );
      return undefined;
    }
    try {
      const user = await this.options.authenticate(token);
      if (!user)
        replyJson(res, 401, 'UNAUTHENTICATED', 'the token is not valid (expired or revoked); log in again');
      return user;
    } catch (err) {
      this.options.logger.warn({ err: String(err) }, 'token review failed');
      replyJson(res, 503, 'UNAVAILABLE', 'the token could not be checked with the API server; retry', {
        'retry-after': '1',
      });
      return undefined;
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && (path === '/livez' || path === '/healthz'))
      return void res.writeHead(200).end('ok');
    if (req.method === 'GET' && path === '/readyz') {
      const ready = this.options.ready?.() ?? true;
      return void res.writeHead(ready ? 200 : 503).end(ready ? 'ok' : 'not ready');
    }
    if (req.method === 'GET' && path === '/metrics') return this.metrics(req, res);
    if (this.options.indexer && (await this.options.indexer(req, res))) return;
    if (path !== graphqlPath || !this.options.api) return void res.writeHead(404).end('not found');

    const stop = searchMetrics.apiSeconds.startTimer();
    let status = 0;
    try {
      const user = await this.caller(req, res);
      if (!user) return;
      if (!this.mayUse(user)) {
        replyJson(res, 403, 'FORBIDDEN', forbiddenMessage(user));
        return;
      }
      const body = req.method === 'POST' ? await readBody(req, this.limits.maxBodyBytes) : '';
      if (body === undefined) {
        replyJson(res, 413, 'BAD_REQUEST', `the request is larger than ${this.limits.maxBodyBytes} bytes`);
        return;
      }
      if (nestedDeeperThan(body, MaxJsonDepth)) {
        replyJson(res, 400, 'BAD_REQUEST', `the request's JSON is nested deeper than ${MaxJsonDepth} levels`);
        return;
      }
      this.contexts.set(req, this.contextFor(user));
      const request: GraphQLHttpRequest<IncomingMessage, undefined> = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        body,
        raw: req,
        context: undefined,
      };
      const [text, init] = await this.handleGraphql(request);
      // Nothing but "the index is unavailable" (its database is down): the HTTP status says so too, so
      // that clients and proxies retry instead of taking an empty answer for the truth.
      if (init.status === 200 && typeof text === 'string' && onlyUnavailable(text)) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5' }).end(text);
        return;
      }
      res.writeHead(init.status, init.statusText, init.headers as Record<string, string>).end(text);
    } finally {
      status = res.statusCode;
      stop({ code: String(status) });
    }
  }

  /** The process's metrics, to a caller the API server lets `get /metrics` (they name clusters). */
  private async metrics(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const user = await this.caller(req, res);
    if (!user) return;
    const allowed = this.options.mayReadMetrics
      ? await this.options.mayReadMetrics(user).catch((err: unknown) => {
          this.options.logger.warn({ err: String(err) }, 'metrics access review failed');
          return false;
        })
      : false;
    if (!allowed) {
      return replyJson(
        res,
        403,
        'FORBIDDEN',
        `user "${user.username}" may not read /metrics: it needs verb "get" on the non-resource URL /metrics (e.g. ClusterRole system:monitoring)`,
      );
    }
    res.writeHead(200, { 'content-type': registry.contentType }).end(await registry.metrics());
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const refuse = (status: number, text: string, detail = text) => {
      const body = `${detail}\n`;
      socket.end(
        `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    };
    if (path !== graphqlPath || !this.options.api) return refuse(404, 'Not Found');
    const crossOrigin = cookieOriginProblem(req, this.options.allowedOrigins);
    if (crossOrigin) return refuse(403, 'Forbidden', crossOrigin);
    const token = tokenFromHeaders(req.headers);
    let user: SearchUser | undefined = token ? undefined : certificateUser(req);
    if (user && !this.mayUse(user)) return refuse(403, 'Forbidden');
    if (token) {
      user = await this.options.authenticate(token).catch(() => undefined);
      if (!user) return refuse(401, 'Unauthorized');
      if (!this.mayUse(user)) return refuse(403, 'Forbidden');
    }
    this.ws.handleUpgrade(req, socket, head, (client) => {
      // graphql-ws reads the user from `extra`, which it builds from the upgrade request.
      if (user) (req as AuthenticatedRequest).searchUser = user;
      this.ws.emit('connection', client, req);
    });
  }
}
