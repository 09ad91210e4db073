// The page's only way out: its own origin's API, as the signed-in user. The token lives in this object
// (memory of this tab) and nowhere else: no localStorage, no cookie; signing out drops the object.
import { KubePrefix, SearchPath } from '../../model.ts';

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

export interface KubeList<T> {
  items: T[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    namespace?: string;
    uid?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

export class Api {
  readonly token: string;
  constructor(token: string) {
    this.token = token;
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
        authorization: `Bearer ${this.token}`,
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      credentials: 'omit',
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
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  );
  const info = review.status?.userInfo;
  return { username: info?.username ?? 'unknown', groups: info?.groups ?? [] };
}
