// Who is calling: bearer tokens (or ACM's console cookie) checked with the API server's TokenReview, and
// the answer kept for 60 s under a hash of the token (never the token itself), as the seed asks. A token
// that expires sooner (a JWT with `exp`) is not trusted past its expiry; failures are kept for a few
// seconds so that a flood of bad tokens does not become a flood of reviews. A ServiceAccount's deletion
// (watched by the service) ends its tokens at once, cached or not.
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
      const raw = part.slice(eq + 1).trim();
      // A malformed percent-encoding is not a token (the caller answers 401), never an exception.
      let value: string;
      try {
        value = decodeURIComponent(raw);
      } catch {
        return undefined;
      }
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

/** How long a deleted ServiceAccount's UID stays refused: longer than the API server's token cache (10 s). */
const revokedForMs = 10 * 60_000;

export class TokenAuthenticator {
  private readonly cache = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<SearchUser | undefined>>();
  private readonly client: KubeClient;
  private readonly ttl: number;
  private readonly negativeTtl: number;
  private readonly max: number;
  /** TokenReviews sent, for tests and metrics. */
  reviews = 0;

  /** Users whose identity was deleted (a ServiceAccount, by UID), and when: refused whatever a review says. */
  private readonly revoked = new Map<string, number>();

  /**
   * A ServiceAccount was deleted: its tokens stop working now, not when a cached review expires (up to
   * the TTL later). The API server itself keeps accepting such a token for a few seconds (its own
   * token cache), so the UID stays refused for longer than that.
   */
  revoke(user: { uid: string; username: string }): void {
    const now = Date.now();
    for (const [uid, at] of this.revoked) if (now - at > revokedForMs) this.revoked.delete(uid);
    this.revoked.set(user.uid, now);
    for (const [key, entry] of this.cache) {
      if (entry.user?.uid === user.uid || entry.user?.username === user.username) this.cache.delete(key);
    }
  }

  private isRevoked(user: SearchUser | undefined): boolean {
    const at = user?.uid ? this.revoked.get(user.uid) : undefined;
    return at !== undefined && Date.now() - at <= revokedForMs;
  }

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
    if (hit && hit.until > now) return this.isRevoked(hit.user) ? undefined : hit.user;
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const review = this.review(token).then((reviewed) => {
      const user = this.isRevoked(reviewed) ? undefined : reviewed;
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
