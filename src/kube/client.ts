// A small, generic Kubernetes REST client: JSON over HTTPS with the credentials of a kubeconfig, for any
// resource (built-in or custom), including server-side apply and streaming watches. Authentication
// comes from credentials.ts (kubeconfig or the Pod's service account).
import { readFileSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { type Credentials, defaultCredentials, kubeconfigCredentials } from './credentials.ts';
import { metrics } from './metrics.ts';
import { type KubeObject, type ResourceType, resourcePath } from './resources.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const PatchType = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

/** A Kubernetes API error, carrying the Status object the server returned. */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly body: unknown;
  constructor(status: number, reason: string, message: string, body: unknown) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.reason = reason;
    this.body = body;
  }
}

/**
 * Accept headers that ask kube-apiserver for PartialObjectMetadata (a list's, a watch's): the objects'
 * metadata only, for readers that need no spec or status.
 */
export const metadataListAccept =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
export const metadataWatchAccept =
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

export const isNotFound = (err: unknown): boolean => err instanceof ApiError && err.status === 404;
export const isConflict = (err: unknown): boolean => err instanceof ApiError && err.status === 409;
export const isInvalid = (err: unknown): boolean => err instanceof ApiError && err.status === 422;
export const isAlreadyExists = (err: unknown): boolean =>
  err instanceof ApiError && err.status === 409 && err.reason === 'AlreadyExists';
export const isGone = (err: unknown): boolean => err instanceof ApiError && err.status === 410;
export const isForbidden = (err: unknown): boolean => err instanceof ApiError && err.status === 403;

export interface RequestParams {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Resolve with the body as text instead of parsed JSON (e.g. `pods/log`). */
  text?: boolean;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
}

export interface ObjectList<T> {
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  timeoutSeconds?: number;
  signal?: AbortSignal;
  /** Called when the server has accepted the watch (HTTP 200): the connection works. */
  onOpen?: () => void;
}

export interface ApplyOptions {
  fieldManager: string;
  force?: boolean;
  subresource?: 'status';
}

export interface DeleteOptions {
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  preconditions?: { uid?: string; resourceVersion?: string };
}

function queryString(query: RequestParams['query']): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== '') params.set(key, String(value));
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

function errorFrom(status: number, text: string): ApiError {
  let body: unknown = text;
  let reason = '';
  let message = `HTTP ${status}`;
  try {
    body = JSON.parse(text);
    const s = body as { reason?: string; message?: string };
    reason = s.reason ?? '';
    message = s.message ?? message;
  } catch {
    if (text) message = `${message}: ${text.slice(0, 500)}`;
  }
  return new ApiError(status, reason, message, body);
}

export class KubeClient {
  readonly credentials: Credentials;
  readonly server: URL;
  /** The user name of the current context, for logs and messages. */
  readonly userName: string;
  /** Non-GET requests this client sent (creates, updates, patches, deletes, reviews). */
  writes = 0;
  /** Receives the API server's warnings (Warning headers, e.g. from admission webhooks), as kubectl shows them. */
  onWarning: (warning: string) => void = () => {};
  /** Sent with every request in addition to the credentials' own (see {@link withHeaders}). */
  private extraHeaders: Record<string, string | string[]> = {};

  constructor(credentials: Credentials) {
    this.credentials = credentials;
    this.server = credentials.server;
    this.userName = credentials.userName;
  }

  /**
   * Loads a kubeconfig from YAML text or, when `source` is a path, from that file; its current context
   * unless `context` names another.
   */
  static fromKubeconfig(source: { yaml: string } | { path: string }, context?: string): KubeClient {
    const options = context ? { context } : {};
    return new KubeClient(
      'yaml' in source
        ? kubeconfigCredentials(source.yaml, options)
        : kubeconfigCredentials(readFileSync(source.path, 'utf8'), { ...options, path: source.path }),
    );
  }

  /** Loads the kubeconfig from $KUBECONFIG, ~/.kube/config or the in-cluster service account. */
  static fromDefault(context?: string): KubeClient {
    return new KubeClient(defaultCredentials(context));
  }

  /**
   * The same credentials, also sending `headers` with every request: e.g. `Impersonate-User` and
   * `Impersonate-Group` (a list is sent as one header line per value) to act as another user.
   */
  withHeaders(headers: Record<string, string | string[]>): KubeClient {
    const copy = new KubeClient(this.credentials);
    copy.extraHeaders = { ...this.extraHeaders, ...headers };
    copy.onWarning = this.onWarning;
    return copy;
  }

  private async httpsOptions(
    method: HttpMethod,
    path: string,
    params: RequestParams,
  ): Promise<RequestOptions> {
    const options: RequestOptions = {
      method,
      protocol: this.server.protocol,
      hostname: this.server.hostname,
      port: this.server.port,
      path: `${this.server.pathname.replace(/\/$/, '')}${path}${queryString(params.query)}`,
      headers: { Accept: 'application/json' },
    };
    // A keep-alive agent per identity: sockets are reused across requests (a TCP and TLS handshake per
    // request was most of a controller's CPU under load).
    await this.credentials.apply(options);
    Object.assign(options.headers as Record<string, string | string[]>, this.extraHeaders);
    if (params.body !== undefined) {
      (options.headers as Record<string, string>)['Content-Type'] = params.contentType ?? 'application/json';
    }
    return options;
  }

  /** Sends one request and parses the JSON reply; non-2xx replies become {@link ApiError}. */
  async request<T>(method: HttpMethod, path: string, params: RequestParams = {}): Promise<T> {
    const options = await this.httpsOptions(method, path, params);
    const payload = params.body === undefined ? undefined : Buffer.from(JSON.stringify(params.body));
    // Always framed: Node sends a DELETE body without Content-Length or chunking, which the server reads
    // as no body at all (DeleteOptions lost) and, on a kept-alive socket, as the start of the next request.
    if (payload) (options.headers as Record<string, string>)['Content-Length'] = String(payload.length);
    return new Promise<T>((resolve, reject) => {
      const req = httpsRequest(options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          metrics.kubeRequests.inc({ method, code: status });
          for (const warning of parseWarnings(res.headers.warning)) this.onWarning(warning);
          if (method !== 'GET') this.writes++;
          if (status < 200 || status >= 300) return reject(errorFrom(status, text));
          if (params.text) return resolve(text as T);
          try {
            resolve((text ? JSON.parse(text) : {}) as T);
          } catch (err) {
            reject(err);
          }
        });
      });
      req.setTimeout(params.timeoutMs ?? 30_000, () =>
        req.destroy(new Error(`${method} ${path}: timed out`)),
      );
      req.on('error', reject);
      if (params.signal)
        params.signal.addEventListener('abort', () => req.destroy(new Error('aborted')), { once: true });
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  async get<T extends KubeObject>(
    type: ResourceType,
    name: string,
    namespace?: string,
  ): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', resourcePath(type, namespace, name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list<T extends KubeObject>(type: ResourceType, options: ListOptions = {}): Promise<ObjectList<T>> {
    const { namespace, ...query } = options;
    return this.request<ObjectList<T>>('GET', resourcePath(type, namespace), { query: { ...query } });
  }

  /** Lists every item, following `continue` tokens. */
  async listAll<T extends KubeObject>(type: ResourceType, options: ListOptions = {}): Promise<ObjectList<T>> {
    const items: T[] = [];
    // An empty PartialObjectMetadataList (metadata-only Accept) has `items: null`.
    let page = await this.list<T>(type, { limit: 500, ...options });
    items.push(...(page.items ?? []));
    while (page.metadata.continue) {
      page = await this.list<T>(type, { limit: 500, ...options, continue: page.metadata.continue });
      items.push(...(page.items ?? []));
    }
    return { metadata: page.metadata, items };
  }

  async create<T extends KubeObject>(
    type: ResourceType,
    object: T,
    options: { fieldManager?: string } = {},
  ): Promise<T> {
    return this.request<T>('POST', resourcePath(type, object.metadata.namespace), {
      body: withTypeMeta(type, object),
      query: { fieldManager: options.fieldManager },
    });
  }

  async replace<T extends KubeObject>(type: ResourceType, object: T, subresource?: 'status'): Promise<T> {
    const path = resourcePath(type, object.metadata.namespace, object.metadata.name, subresource);
    return this.request<T>('PUT', path, { body: withTypeMeta(type, object) });
  }

  async patch<T extends KubeObject>(
    type: ResourceType,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    patchType: (typeof PatchType)[keyof typeof PatchType] = PatchType.merge,
    subresource?: 'status',
  ): Promise<T> {
    return this.request<T>('PATCH', resourcePath(type, namespace, name, subresource), {
      body: patch,
      contentType: patchType,
    });
  }

  /** Server-side apply: the caller states the fields it owns; the server merges and tracks ownership. */
  async apply<T extends KubeObject>(
    type: ResourceType,
    object: KubeObject,
    options: ApplyOptions,
  ): Promise<T> {
    const name = object.metadata.name;
    if (!name) throw new Error('server-side apply needs metadata.name');
    const body = withTypeMeta(type, object);
    return this.request<T>(
      'PATCH',
      resourcePath(type, object.metadata.namespace, name, options.subresource),
      {
        body,
        contentType: PatchType.apply,
        query: { fieldManager: options.fieldManager, force: options.force ? true : undefined },
      },
    );
  }

  /** Deletes an object; a missing object counts as deleted (returns false). */
  async delete(
    type: ResourceType,
    name: string,
    namespace?: string,
    options: DeleteOptions = {},
  ): Promise<boolean> {
    try {
      await this.request('DELETE', resourcePath(type, namespace, name), {
        body: { apiVersion: 'v1', kind: 'DeleteOptions', ...options },
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * Streams watch events until the server closes the stream, the signal aborts, or `onEvent` throws.
   * Resolves on a clean end; rejects with {@link ApiError} (e.g. 410 Gone) or a transport error.
   */
  async watch<T extends KubeObject>(
    type: ResourceType,
    options: WatchOptions,
    onEvent: (event: WatchEvent<T>) => void,
  ): Promise<void> {
    const params: RequestParams = {
      query: {
        watch: true,
        allowWatchBookmarks: true,
        resourceVersion: options.resourceVersion,
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        timeoutSeconds: options.timeoutSeconds ?? 300,
      },
    };
    if (options.signal?.aborted) return;
    const httpOptions = await this.httpsOptions('GET', resourcePath(type, options.namespace), params);
    // Aborted while the options were made (a token read): the abort event has fired already and would
    // never end the request below.
    if (options.signal?.aborted) return;
    await new Promise<void>((resolve, reject) => {
      const req = httpsRequest(httpOptions, (res) => {
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            text += c;
          });
          res.on('end', () => reject(errorFrom(status, text)));
          return;
        }
        options.onOpen?.();
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let newline = buffer.indexOf('\n');
          while (newline >= 0) {
            const line = buffer.slice(0, newline);
            buffer = buffer.slice(newline + 1);
            newline = buffer.indexOf('\n');
            if (!line.trim()) continue;
            try {
              const event = JSON.parse(line) as WatchEvent<T>;
              if (event.type === 'ERROR') {
                const s = event.object as unknown as { code?: number; reason?: string; message?: string };
                req.destroy();
                return reject(new ApiError(s.code ?? 500, s.reason ?? '', s.message ?? 'watch error', s));
              }
              onEvent(event);
            } catch (err) {
              req.destroy();
              return reject(err);
            }
          }
        });
        res.on('end', () => resolve());
        res.on('error', reject);
      });
      req.on('error', (err) => (options.signal?.aborted ? resolve() : reject(err)));
      // A watch that goes silent (no events, no bookmarks) for long is treated as broken.
      req.setTimeout(((options.timeoutSeconds ?? 300) + 30) * 1000, () =>
        req.destroy(new Error('watch stalled')),
      );
      options.signal?.addEventListener('abort', () => req.destroy(), { once: true });
      req.end();
    });
  }
}

export function apiVersionOf(type: ResourceType): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** Custom resources must name their apiVersion and kind in every write; fill them from the type. */
function withTypeMeta<T extends KubeObject>(type: ResourceType, object: T): T {
  return { ...object, apiVersion: object.apiVersion ?? apiVersionOf(type), kind: object.kind ?? type.kind };
}

/** Warning headers look like `299 - "text"`; several may arrive, joined by commas. */
function parseWarnings(header: string | string[] | undefined): string[] {
  const values = Array.isArray(header) ? header : header ? [header] : [];
  const out: string[] = [];
  for (const value of values) {
    for (const match of value.matchAll(/\d{3} \S+ "((?:[^"\\]|\\.)*)"/g))
      out.push(match[1]!.replace(/\\(.)/g, '$1'));
  }
  return out;
}
