// The contracts between the parts of search: what the collector sends to the indexer, and what the
// authorizer hands to the query engine. Each part depends on these types, never on another part.

/** The hub cluster's name in the index, as ACM names it. */
export const HubCluster = 'local-cluster';

/**
 * The cluster an index uid belongs to: uids are `<cluster>/<uid in that cluster>`, and a cluster's own row
 * is `cluster__<cluster>` (the indexer refuses any other shape, and cluster names hold no `/`).
 */
export function clusterOfUid(uid: string): string {
  const slash = uid.indexOf('/');
  if (slash >= 0) return uid.slice(0, slash);
  return uid.startsWith('cluster__') ? uid.slice('cluster__'.length) : uid;
}

/**
 * The properties of one indexed object, as ACM's collector writes them into `search.resources.data`:
 * `kind`, `kind_plural`, `apigroup` (absent for the core group), `apiversion`, `name`, `namespace` (absent
 * for cluster-scoped objects), `created`, `label`, `annotation`, `_hubClusterResource` (hub only), and the
 * per-kind properties (pod `status`, deployment `desired`, ...). Values are strings, numbers, booleans,
 * string arrays or string maps.
 */
export type ResourceData = {
  kind: string;
  kind_plural: string;
  apigroup?: string;
  apiversion: string;
  name: string;
  namespace?: string;
  created?: string;
  label?: Record<string, string>;
  annotation?: Record<string, string>;
  _hubClusterResource?: boolean;
} & Record<string, unknown>;

/**
 * An outgoing relationship of an object. The indexer resolves it into a `search.edges` row once the
 * destination is in the index (in either order of arrival), and drops it with its source.
 */
export type EdgeRef =
  /** By the destination's Kubernetes uid (ownerReferences). */
  | { type: string; uid: string }
  /** By kind and name (pod -> node, pod -> configmap, pvc -> pv, ingress -> service, ...). */
  | { type: string; kind: string; namespace?: string; name: string }
  /** Every object of `kind` in `namespace` whose labels contain `selector` (service -> pods). */
  | { type: string; kind: string; namespace: string; selector: Record<string, string> };

/** One row for `search.resources`, with the relationships that start at it. */
export interface IndexedResource {
  /** `<cluster>/<kubernetes uid>`. */
  uid: string;
  data: ResourceData;
  edges: EdgeRef[];
}

/** Identifies a resource type inside the index (`apigroup` is '' for the core group). */
export interface IndexedType {
  apigroup: string;
  kind_plural: string;
}

/**
 * One unit of work for the indexer, all for one cluster. Applied in one transaction, in this order:
 * upserts, deletes, then each resync (delete every row of that type that the collector did not list),
 * dropped types, and last the types to keep.
 */
/**
 * A batch's place in its collector's stream. The indexer applies the batches of one stream once each
 * and in order, whichever replica receives them and however often a timed-out one is resent.
 */
export interface BatchSequence {
  /** One run of a collector: `<its start, ms since the epoch>.<random hex>`; a later start supersedes. */
  stream: string;
  /** 1, 2, 3, … in the order the collector seals its batches. */
  seq: number;
}

export interface IndexBatch {
  cluster: string;
  /** Absent from collectors older than the fence: then the batch is applied as it comes. */
  sequence?: BatchSequence;
  upserts?: IndexedResource[];
  /** uids (`<cluster>/<kubernetes uid>`) of deleted objects. */
  deletes?: string[];
  /** After a full list of a type: these uids are all that exist; everything else of the type goes. */
  resyncs?: (IndexedType & { uids: string[] })[];
  /** Types the cluster no longer serves (a CRD went away): all their rows go. */
  dropTypes?: IndexedType[];
  /**
   * After a complete discovery: the only types the cluster serves. Rows of every other type go, such as
   * a CRD deleted while the collector was not running. Applied last.
   */
  keepTypes?: IndexedType[];
}

/**
 * Thrown by an {@link IndexSink} for a batch of a stream that a later-started collector of the same
 * cluster has replaced: applying it could undo that collector's newer batches.
 */
export class SupersededBatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SupersededBatchError';
  }
}

/** Thrown by an {@link IndexSink} that is behind: try again after `retryAfterMs`. */
export class BackPressureError extends Error {
  readonly retryAfterMs: number;
  constructor(retryAfterMs: number) {
    super(`the search index is behind; retry in ${retryAfterMs} ms`);
    this.name = 'BackPressureError';
    this.retryAfterMs = retryAfterMs;
  }
}

/** Where a collector sends its batches: the indexer in-process, or the hub's indexer over HTTPS. */
export interface IndexSink {
  /** Resolves once the batch is committed; rejects with {@link BackPressureError} when overloaded. */
  write(batch: IndexBatch): Promise<void>;
}

/** Who is asking, as TokenReview reports it. */
export interface SearchUser {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/**
 * List rights of the same shape as an RBAC rule, already narrowed to `list`: any (apiGroup, resource)
 * pair from the two lists, '*' meaning any; when `names` is present only objects with those names.
 */
export interface ResourceGrant {
  apiGroups: string[];
  resources: string[];
  names?: string[];
}

/** Everything one user may list, computed from RBAC; the query engine turns it into a SQL predicate. */
export interface AccessSet {
  /** In a privileged group (system:masters): every object, as kube-apiserver allows before RBAC. */
  all: boolean;
  /** Hold in every namespace and for cluster-scoped types (ClusterRoleBindings). */
  clusterWide: ResourceGrant[];
  /** Hold only in the listed namespaces (RoleBindings); namespaces with equal grants share one entry. */
  namespaced: { namespaces: string[]; grants: ResourceGrant[] }[];
  /** Managed clusters whose objects (except Secrets) the user may see. */
  managedClusters: string[];
  /** May use the search API at all. */
  canSearch: boolean;
  /** Stable digest of all of the above: equal digests mean equal sets. */
  digest: string;
}

/** One filter of a search: a property and the values it may take (OR), each optionally with an operator. */
export interface SearchFilter {
  property: string;
  values: string[];
}

/** A search as ACM's GraphQL API takes it (`SearchInput`). */
export interface SearchInput {
  keywords?: string[];
  filters?: SearchFilter[];
  /** Default 1000; -1 means the server's maximum. */
  limit?: number;
  offset?: number;
  /** "property asc" or "property desc". */
  orderBy?: string;
  relatedKinds?: string[];
}

/** Which parts of a `SearchResult` the client selected, so the engine runs only the queries needed. */
export interface ResultSelection {
  items: boolean;
  count: boolean;
  related: false | { items: boolean; count: boolean };
}

export type Item = Record<string, unknown>;

export interface RelatedResult {
  kind: string;
  count?: number;
  items?: Item[];
}

export interface SearchResult {
  count?: number;
  items?: Item[];
  related?: RelatedResult[];
}

/** A change in the index, as the `watch` subscription reports it. */
export interface SearchEvent {
  uid: string;
  operation: 'INSERT' | 'UPDATE' | 'DELETE';
  newData?: Item;
  oldData?: Item;
  timestamp: string;
}

/** A request the engine refuses (bad filter, over a cost limit): the message says what to change. */
export class QueryError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'QueryError';
    this.code = code;
  }
}

/** The query side of search, always within one user's access set. */
export interface SearchBackend {
  search(access: AccessSet, input: SearchInput, selection: ResultSelection): Promise<SearchResult>;
  /** Distinct values of `property` among the objects `query` matches, sorted. */
  complete(
    access: AccessSet,
    property: string,
    query: SearchInput | undefined,
    limit?: number,
  ): Promise<string[]>;
  /** Every property name among the objects `query` matches. */
  schema(access: AccessSet, query: SearchInput | undefined): Promise<string[]>;
  /**
   * Index changes that match `input` and the access set, until `signal` aborts. The set is a function,
   * read at each delivery, so an RBAC change applies to open watches too.
   */
  watch(access: () => AccessSet, input: SearchInput, signal: AbortSignal): AsyncIterable<SearchEvent>;
}

/** Turns a user into their access set, from local RBAC caches (no API call per user). */
export interface AccessProvider {
  forUser(user: SearchUser): AccessSet;
}
