// The tenant console's contract: the page (web/) and its same-origin backend (server/) agree on these
// paths. The backend forwards only the Kubernetes API calls the page needs (server/allow-list.ts), each
// with the caller's own bearer token, and the search API's GraphQL; it holds no identity of its own that a
// page could borrow.

/** Kubernetes API calls: `/api/kube` + the API server's own path (e.g. `/api/kube/api/v1/namespaces`). */
export const KubePrefix = '/api/kube';
/**
 * Whether this request reached the console with a bearer token the page did not add: an authenticating
 * proxy in front adds the user's (`{ "proxied": true }`). The page asks on arrival, without a token.
 */
export const ProxySessionPath = '/api/proxy-session';
/** The search API's GraphQL endpoint (ACM's `searchResult`, `searchComplete`, ...). */
export const SearchPath = '/api/search/graphql';

/**
 * Saved searches live in the cluster, in a ConfigMap of this name in a namespace the user picks (one key
 * per user): whoever may read ConfigMaps there may read them, and nobody else.
 */
export const SavedSearchesConfigMap = 'tenantkit-saved-searches';

/** Where the backend sends what it forwards, and which CA it trusts there. */
export interface Upstream {
  url: URL;
  /** PEM bundle of the CAs that sign the upstream's serving certificate. */
  caPem: string;
}

export interface ConsoleOptions {
  /** The Kubernetes API server. Never given the console's own credentials: only the caller's token. */
  kube: Upstream;
  /** The search service (its base URL; `/searchapi/graphql` is added). Without it, search answers 503. */
  search?: Upstream;
  /** The built page: index.html, app.js, app.css and their assets. */
  assetsDir: string;
  /** Live-result sockets one user may hold open at once (default DefaultSocketsPerUser). */
  maxSocketsPerUser?: number;
}

/** Live-result sockets one user holds at most by default: a few tabs, not the whole console's share. */
export const DefaultSocketsPerUser = 10;

/**
 * A browser's WebSocket carries no header of the page's: the page offers its token as a subprotocol of
 * this prefix and the token in base64url (the API server's own convention for WebSockets), so that the
 * console knows the user before anything opens. The console never passes this subprotocol on.
 */
export const TokenProtocolPrefix = 'base64url.bearer.authorization.k8s.io.';

/** What the backend answers when it refuses a call: why, and what to do instead. */
export interface Refusal {
  status: number;
  reason: string;
  message: string;
}
