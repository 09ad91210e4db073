// The page's only way out: its own origin's API (Kubernetes and search calls, the live search socket), as
// the signed-in user. The token lives in this object (memory of this tab) and nowhere else: no localStorage,
// no cookie; signing out drops the object.
import { type Client, createClient } from 'graphql-ws/client';
import type { KubeObject } from '../../../../kube/resources.ts';
import { KubePrefix, ProxySessionPath, SearchPath, TokenProtocolPrefix } from '../../../model.ts';
import { apiVersionOf, pathOf, resources } from '../generated/resources.ts';

/** What every Kubernetes object has (apiVersion, kind, metadata); each kind's type is in src/crds. */
export type { KubeObject };

/** A refused or failed call, with the message the server (API server, admission, console) gave. */
export class ApiFailure extends Error {
  readonly status: number;
  readonly reason: string;
  constructor(status: number, reason: string, message: string) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

/**
 * An object as the API server may return it when its CRD does not require a spec (the non-admin kinds):
 * perhaps without one.
 */
export type MaybeSpec<T extends { spec: unknown }> = Omit<T, 'spec'> & { spec?: T['spec'] };

export interface KubeList<T> {
  items: T[];
}

/** One change the search API's `watch` subscription reports. */
export interface SearchEvent {
  uid: string;
  operation: 'INSERT' | 'UPDATE' | 'DELETE';
  newData?: Record<string, unknown> | null;
}

const watchQuery = /* GraphQL */ `
  subscription Watch($input: SearchInput) {
    watch(input: $input) {
      uid
      operation
      newData
    }
  }
`;

export class Api {
  readonly token: string;
  /** The WebSocket for live results, opened on the first subscription and closed on sign-out. */
  private live: Client | undefined;

  constructor(token: string) {
    this.token = token;
  }

  /**
   * Changes to what `input` matches, as the user may see them, until the returned function is called.
   * The token goes in the connection's first message (a browser WebSocket carries no header of ours).
   */
  watch(input: unknown, onEvent: (e: SearchEvent) => void, onError: (message: string) => void): () => void {
    this.live ??= createClient({
      url: `wss://${window.location.host}${SearchPath}`,
      // The token also rides as a subprotocol, so the console knows the user before anything opens.
      ...(this.token ? { webSocketImpl: withTokenProtocol(this.token) } : {}),
      // Behind an authenticating proxy the upgrade request carries the user's token instead.
      ...(this.token ? { connectionParams: { authorization: `Bearer ${this.token}` } } : {}),
      lazy: true,
      retryAttempts: 5,
    });
    return this.live.subscribe<{ watch: SearchEvent | null }>(
      { query: watchQuery, variables: { input } },
      {
        next: (message) => {
          if (message.errors?.length) onError(message.errors.map((e) => e.message).join('; '));
          else if (message.data?.watch) onEvent(message.data.watch);
        },
        error: (err) => onError(err instanceof Error ? err.message : 'the live connection closed'),
        complete: () => {},
      },
    );
  }

  /** Whether the user signed in through an authenticating proxy (the page holds no token). */
  get viaProxy(): boolean {
    return this.token === '';
  }

  /** Forgets the live connection (signing out). */
  close(): void {
    void this.live?.dispose();
    this.live = undefined;
  }

  async kube<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T> {
    return this.call<T>(method, `${KubePrefix}${path}`, body);
  }

  /** One GraphQL operation against the search API; GraphQL errors become an ApiFailure. */
  async search<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    const reply = await this.call<{ data?: T; errors?: { message: string }[] }>('POST', SearchPath, {
      query,
      variables,
    });
    if (reply.errors?.length) {
      throw new ApiFailure(200, 'SearchError', reply.errors.map((e) => e.message).join('; '));
    }
    return reply.data as T;
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(path, {
      method,
      headers: {
        // No token of the page's own: an authenticating proxy in front adds the user's.
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      // A page holding its token sends no cookie at all; behind a proxy, the proxy's session cookie.
      credentials: this.token ? 'omit' : 'same-origin',
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new ApiFailure(
        response.status,
        'NotJson',
        `the server answered ${response.status}: ${text.slice(0, 200)}`,
      );
    }
    if (!response.ok) {
      const status = parsed as { reason?: string; message?: string } | undefined;
      throw new ApiFailure(
        response.status,
        status?.reason ?? String(response.status),
        status?.message ?? `the server answered ${response.status}`,
      );
    }
    return parsed as T;
  }
}

/** Who the token belongs to, as the API server sees it (SelfSubjectReview). */
export async function whoAmI(api: Api): Promise<{ username: string; groups: string[] }> {
  const review = await api.kube<{ status?: { userInfo?: { username?: string; groups?: string[] } } }>(
    'POST',
    pathOf(resources.SelfSubjectReview),
    { apiVersion: apiVersionOf(resources.SelfSubjectReview), kind: resources.SelfSubjectReview.kind },
  );
  const info = review.status?.userInfo;
  return { username: info?.username ?? 'unknown', groups: info?.groups ?? [] };
}

/** Whether an authenticating proxy in front adds the user's token to this page's requests. */
export async function proxied(): Promise<boolean> {
  const response = await fetch(ProxySessionPath, {
    credentials: 'omit',
    headers: { accept: 'application/json' },
  });
  return response.ok && ((await response.json()) as { proxied?: boolean }).proxied === true;
}

/** A WebSocket class that offers `token` as the console's token subprotocol beside graphql-ws's own. */
function withTokenProtocol(token: string): typeof WebSocket {
  const carrier = `${TokenProtocolPrefix}${btoa(token).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')}`;
  return class extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, [...(protocols === undefined ? [] : [protocols].flat()), carrier]);
    }
  };
}
