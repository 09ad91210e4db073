// Who is calling: bearer tokens (or ACM's console cookie) checked with the API server's TokenReview, and
// the answer kept for 60 s under a hash of the token (never the token itself), as the seed asks. A token
// that expires sooner (a JWT with `exp`) is not trusted past its expiry; failures are kept for a few
// seconds so that a flood of bad tokens does not become a flood of reviews.
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { KubeClient } from '../../kube/client.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import type { SearchUser } from '../model.ts';

/** The cookie ACM's console sends its token in. */
export const AcmTokenCookie = 'acm-access-token-cookie';

/** The caller's token from `Authorization: Bearer` or ACM's cookie; undefined when there is none. */
export function tokenFromHeaders(headers: IncomingHttpHeaders): string | undefined {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1];
  if (bearer) return bearer;
  for (const part of (headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === AcmTokenCookie) {
      const value = decodeURIComponent(part.slice(eq + 1).trim());
      if (value) return value;
    }
  }
  return undefined;
}

interface TokenReview extends KubeObject {
  status?: {
    authenticated?: boolean;
    error?: string;
    user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  };
}

/** Seconds since the epoch at which a JWT says it expires, if the token is a JWT that says so. */
function jwtExpiry(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp : undefined;
  } catch {
    return undefined;
  }
}

export interface TokenAuthenticatorOptions {
  /** How long a successful review is trusted (default 60 s). */
  ttlMs?: number;
  /** How long a failed review is remembered (default 5 s). */
  negativeTtlMs?: number;
  /** Entries kept at most (default 10,000). */
  maxEntries?: number;
}

interface Entry {
  user: SearchUser | undefined;
  until: number;
}

export class TokenAuthenticator {
  private readonly cache = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<SearchUser | undefined>>();
  private readonly client: KubeClient;
  private readonly ttl: number;
  private readonly negativeTtl: number;
  private readonly max: number;
  /** TokenReviews sent, for tests and metrics. */
  reviews = 0;

  constructor(client: KubeClient, options: TokenAuthenticatorOptions = {}) {
    this.client = client;
    this.ttl = options.ttlMs ?? 60_000;
    this.negativeTtl = options.negativeTtlMs ?? 5_000;
    this.max = options.maxEntries ?? 10_000;
  }

  /**
   * The user behind `token`, or undefined when the API server does not accept it. Rejects only when the
   * review itself could not be made (the caller answers 503: it cannot tell either way).
   */
  async authenticate(token: string): Promise<SearchUser | undefined> {
    const key = createHash('sha256').update(token).digest('hex');
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && hit.until > now) return hit.user;
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const review = this.review(token).then((user) => {
      const exp = jwtExpiry(token);
      const ttl = user ? this.ttl : this.negativeTtl;
      const until = Math.min(Date.now() + ttl, exp !== undefined ? exp * 1000 : Number.POSITIVE_INFINITY);
      if (this.cache.size >= this.max) {
        for (const [k, e] of this.cache) if (e.until <= Date.now()) this.cache.delete(k);
        if (this.cache.size >= this.max) this.cache.delete(this.cache.keys().next().value!);
      }
      this.cache.set(key, { user, until });
      return user;
    });
    this.inFlight.set(key, review);
    try {
      return await review;
    } finally {
      this.inFlight.delete(key);
    }
  }

  private async review(token: string): Promise<SearchUser | undefined> {
    this.reviews++;
    const result = await this.client.create<TokenReview>(Resources.tokenReviews, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      metadata: {},
      spec: { token },
    } as KubeObject);
    const user = result.status?.user;
    if (!result.status?.authenticated || !user?.username) return undefined;
    return {
      username: user.username,
      groups: user.groups ?? [],
      ...(user.uid ? { uid: user.uid } : {}),
      ...(user.extra ? { extra: user.extra } : {}),
    };
  }
}
