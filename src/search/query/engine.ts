// The query side of search on PostgreSQL: every query is the user's filters AND their access predicate,
// evaluated by the database. Only the parts of a result the client selected are computed.

import type pg from 'pg';
import type { Logger } from 'pino';
import { databaseUnavailable } from '../db/postgres.ts';
import type { ReadRouter } from '../db/replicas.ts';
import { searchMetrics } from '../metrics.ts';
import {
  type AccessSet,
  clusterOfUid,
  type Item,
  QueryError,
  type RelatedResult,
  type ResultSelection,
  type SearchBackend,
  type SearchEvent,
  type SearchInput,
  type SearchResult,
} from '../model.ts';
import { accessBranches, accessParts, accessPredicate } from './access-sql.ts';
import { defaultFilterLimits, type FilterLimits, inputConditions, orderBy } from './filters.ts';
import { formatItem } from './items.ts';
import { and, type Columns, Params, resourceColumns } from './sql.ts';
import { type Walk, walksSql } from './walk.ts';
import type { WatchHub } from './watch.ts';

export interface QueryLimits extends FilterLimits {
  /** Items returned when a search gives no limit (ACM's default: 1,000). */
  defaultLimit: number;
  /** The most items one search may ask for; `limit: -1` means this. */
  maxLimit: number;
  /** The most bytes of item data one search may return. */
  maxResultBytes: number;
  /** The most values searchComplete returns; its `limit: -1` means this. */
  maxCompleteLimit: number;
  /** The most related objects one search may reach. */
  maxRelated: number;
}

export const defaultQueryLimits: QueryLimits = {
  ...defaultFilterLimits,
  defaultLimit: 1_000,
  maxLimit: 10_000,
  maxResultBytes: 32 * 1024 * 1024,
  maxCompleteLimit: 10_000,
  maxRelated: 10_000,
};

export interface EngineOptions {
  pool: pg.Pool;
  hubCluster: string;
  logger: Logger;
  limits?: Partial<QueryLimits>;
  /** Serves `watch`; without it the subscription reports that watching is off. */
  watchHub?: WatchHub;
  /** Sends reads to fresh replicas; without it every query reads `pool`. */
  reads?: ReadRouter;
}

interface Row {
  uid: string;
  cluster: string;
  data: Record<string, unknown>;
}

/** Kinds that ACM does not walk through when following relationships deeper than one step. */
const hubKinds = new Set(['node', 'channel']);
/**
 * searchComplete's walk of a column's index reads this many rows a step per cluster it walks, where it
 * may (walk.ts), and at most `maxRowsPerStep`: a fleet's clusters hold the same names (coredns, every
 * namespace's kube-root-ca.crt), so a step of 16 rows over 20 clusters that all hold a name gave one
 * value, and a wide user's walk took 1,000 steps for 1,000 names. With 64 rows a cluster, 100 clusters
 * that hold the same names give 1,000 of them in about 16 steps (bench/search-wide.ts).
 */
const rowsPerStep = 64;
const maxRowsPerStep = 8192;
const stepRows = (clusters: number) => Math.min(maxRowsPerStep, rowsPerStep * Math.max(1, clusters));
/** Columns whose values a b-tree walk can list in order without visiting every row. */
// A Map, not an object: a property named `__proto__` or `constructor` must find nothing here.
const walkableColumns = new Map([
  ['name', '_name'],
  ['namespace', '_ns'],
  ['cluster', 'cluster'],
]);

/**
 * The columns of tenantkit_search.counts, which counts objects per cluster, type, kind and namespace.
 * Its rows have no name and no data: a condition that needs either cannot be answered from it.
 */
const unavailable = '\u0000not counted\u0000';
const countColumns: Columns = {
  cluster: 'c.cluster',
  gr: 'c._gr',
  kind: 'c._kind',
  namespace: 'c._ns',
  name: unavailable,
  data: unavailable,
};

/**
 * The WHERE clauses over tenantkit_search.counts, one per access branch, for a count whose filters and
 * access set name only clusters, types, kinds and namespaces; undefined when the objects themselves must
 * be counted.
 */
function countedConditions(
  access: AccessSet,
  input: SearchInput,
  hub: string,
  limits: FilterLimits,
): { wheres: string[]; params: Params } | undefined {
  const params = new Params();
  const branches = accessBranches(access, hub, countColumns, params);
  const conditions = inputConditions(input, countColumns, params, limits);
  const wheres = branches.map((allowed) => and([...conditions, allowed]));
  return wheres.some((w) => w.includes(unavailable)) ? undefined : { wheres, params };
}

/** One SELECT per access branch, read apart and put together (branches never overlap). */
const unionAll = (branches: string[], select: (allowed: string) => string): string =>
  branches.map(select).join('\n       UNION ALL ');

/** The sum of one scalar subquery per access branch (0 for none). */
const sumOf = (branches: string[], select: (allowed: string) => string): string =>
  branches.length === 0 ? '0' : branches.map((b) => `(${select(b)})`).join(' + ');

export class PostgresSearch implements SearchBackend {
  private readonly pool: pg.Pool;
  private readonly hub: string;
  private readonly limits: QueryLimits;
  private readonly logger: Logger;
  private readonly watchHub: WatchHub | undefined;
  private readonly reads: ReadRouter | undefined;

  constructor(options: EngineOptions) {
    this.pool = options.pool;
    this.reads = options.reads;
    this.hub = options.hubCluster;
    this.limits = { ...defaultQueryLimits, ...options.limits };
    this.logger = options.logger;
    this.watchHub = options.watchHub;
  }

  async search(access: AccessSet, input: SearchInput, selection: ResultSelection): Promise<SearchResult> {
    const limit = this.limitOf(input.limit, this.limits.defaultLimit, this.limits.maxLimit, 'limit');
    const offset = input.offset ?? 0;
    if (!Number.isInteger(offset) || offset < 0) {
      throw new QueryError('BAD_OFFSET', 'offset must be a whole number, 0 or more');
    }
    const result: SearchResult = {};
    const needRows = selection.items || selection.related !== false;
    const [rows, count] = await Promise.all([
      needRows ? this.rows(access, input, limit, offset) : undefined,
      selection.count ? this.count(access, input) : undefined,
    ]);
    if (count !== undefined) result.count = count;
    if (rows && selection.items) result.items = rows.map((r) => formatItem(r.uid, r.cluster, r.data));
    if (rows && selection.related) {
      result.related = await this.related(
        access,
        input,
        rows.map((r) => r.uid),
        selection.related,
      );
    }
    return result;
  }

  async complete(access: AccessSet, property: string, query: SearchInput | undefined, limit?: number) {
    if (typeof property !== 'string' || property.trim() === '') {
      throw new QueryError('BAD_PROPERTY', 'searchComplete needs a property name, e.g. "namespace"');
    }
    const max = this.limitOf(limit, 1_000, this.limits.maxCompleteLimit, 'limit');
    const p = new Params();
    const r = resourceColumns('r');
    const conditions = inputConditions(query, r, p, this.limits);
    const column = walkableColumns.get(property);
    const unfiltered = conditions.length === 0;
    let sql: string;
    if (column && unfiltered && this.isBroad(access)) {
      // Walk the column's index in order (walk.ts). Who sees everything walks it 16 rows a step; who sees
      // whole managed clusters walks those clusters the same way (their predicate names clusters only),
      // beside a walk of one row a step over what they may see in the hub, and gets the values of both
      // in order: a user of every cluster and 1,000 hub namespaces no longer walks every partition one
      // row a step. (For narrow access sets a plain DISTINCT over their few rows is cheaper.)
      const walks = this.walks(access, column, p);
      if (walks.length === 0) return [];
      sql = walksSql(walks, p.add(max));
    } else {
      const branches = accessBranches(access, this.hub, r, p);
      if (branches.length === 0) return [];
      const named = property === 'label' || property === 'cluster' ? '' : p.add(property);
      const values = unionAll(branches, (allowed) => {
        const where = and([...conditions, allowed]);
        if (property === 'label')
          return `SELECT l.key || '=' || l.value AS v FROM search.resources r, jsonb_each_text(r.data->'label') l
             WHERE ${where}`;
        // An object's cluster is its row's, not a property of its data.
        if (property === 'cluster') return `SELECT r.cluster AS v FROM search.resources r WHERE ${where}`;
        return `SELECT x.v FROM search.resources r, LATERAL (
               SELECT r.data->>${named} AS v WHERE jsonb_typeof(r.data->${named}) <> 'array'
               UNION ALL
               SELECT jsonb_array_elements_text(r.data->${named}) WHERE jsonb_typeof(r.data->${named}) = 'array') x
             WHERE ${where}`;
      });
      sql = `SELECT DISTINCT v FROM (${values}) s WHERE v IS NOT NULL AND v <> '' ORDER BY v LIMIT ${p.add(max)}`;
    }
    const rows = await this.query<{ v: string }>('complete', sql, p);
    return rows.map((row) => row.v);
  }

  async schema(access: AccessSet, query: SearchInput | undefined): Promise<string[]> {
    const p = new Params();
    const r = resourceColumns('r');
    const allowed = accessPredicate(access, this.hub, r, p);
    if (allowed === 'FALSE') return [];
    const where = and([...inputConditions(query, r, p, this.limits), allowed]);
    // Property names are kept per type at ingest. They are the user's to see only for a type the user
    // sees whole (a cluster-wide grant without resourceNames, a managed cluster, or everything): for any
    // other type only the names on objects the user can see count, so that a pod's hostIP seen only on
    // another tenant's pod is not shown.
    const whole = accessPredicate(
      { ...access, namespaced: [], clusterWide: access.clusterWide.filter((g) => !g.names) },
      this.hub,
      resourceColumns('t'),
      p,
    );
    const rows = await this.query<{ property: string }>(
      'schema',
      `WITH whole AS (SELECT t.cluster, t._gr FROM (SELECT DISTINCT cluster, gr AS _gr FROM tenantkit_search.properties) t
                      WHERE ${whole}),
        visible AS (SELECT w.cluster, w._gr FROM whole w WHERE EXISTS (
          SELECT 1 FROM search.resources r WHERE r.cluster = w.cluster AND r._gr = w._gr AND ${where}))
       SELECT p.property FROM tenantkit_search.properties p
         JOIN visible v ON v.cluster = p.cluster AND v._gr = p.gr
       WHERE p.property NOT LIKE '\\_%'
       UNION
       SELECT k.property FROM search.resources r, jsonb_object_keys(r.data) AS k(property)
       WHERE ${where} AND k.property NOT LIKE '\\_%'
         AND NOT EXISTS (SELECT 1 FROM whole w WHERE w.cluster = r.cluster AND w._gr = r._gr)`,
      p,
    );
    const names = new Set(rows.map((row) => row.property));
    if (names.size > 0) names.add('cluster');
    return [...names].sort();
  }

  watch(access: () => AccessSet, input: SearchInput, signal: AbortSignal): AsyncIterable<SearchEvent> {
    if (!this.watchHub) throw new QueryError('WATCH_DISABLED', 'this search service does not serve watch');
    // Validate now, so a bad filter fails the subscription at once instead of on the first event.
    inputConditions(input, resourceColumns('r'), new Params(), this.limits);
    return this.watchHub.subscribe(access, input, signal);
  }

  private async rows(access: AccessSet, input: SearchInput, limit: number, offset: number): Promise<Row[]> {
    const p = new Params();
    const r = resourceColumns('r');
    const branches = accessBranches(access, this.hub, r, p);
    if (branches.length === 0 || limit === 0) return [];
    const conditions = inputConditions(input, r, p, this.limits);
    const order = orderBy(input.orderBy, r, p);
    const page = `${order ? `ORDER BY ${order}, r.uid` : ''} LIMIT ${p.add(limit)} OFFSET ${p.add(offset)}`;
    const rows = await this.query<Row & { size: number }>(
      'items',
      branches.length === 1
        ? `SELECT r.uid, r.cluster, r.data, pg_column_size(r.data) AS size FROM search.resources r
           WHERE ${and([...conditions, branches[0]!])} ${page}`
        : // Every column, so that the order's expressions (r._name, r.data->...) mean the same outside.
          `SELECT r.uid, r.cluster, r.data, pg_column_size(r.data) AS size FROM (
             ${unionAll(branches, (allowed) => `SELECT r.* FROM search.resources r WHERE ${and([...conditions, allowed])}`)}
           ) r ${page}`,
      p,
    );
    let bytes = 0;
    for (const row of rows) bytes += row.size;
    if (bytes > this.limits.maxResultBytes) {
      throw new QueryError(
        'RESULT_TOO_LARGE',
        `the result holds more than ${Math.round(this.limits.maxResultBytes / 1048576)} MiB of data; lower the limit or add filters`,
      );
    }
    return rows;
  }

  private async count(access: AccessSet, input: SearchInput): Promise<number> {
    const counted = countedConditions(access, input, this.hub, this.limits);
    if (counted) {
      if (counted.wheres.length === 0) return 0;
      const rows = await this.query<{ n: number }>(
        'count',
        `SELECT (${sumOf(counted.wheres, (where) => `SELECT coalesce(sum(c.n), 0) FROM tenantkit_search.counts c WHERE ${where}`)})::int AS n`,
        counted.params,
      );
      return rows[0]?.n ?? 0;
    }
    const p = new Params();
    const r = resourceColumns('r');
    const branches = accessBranches(access, this.hub, r, p);
    if (branches.length === 0) return 0;
    const conditions = inputConditions(input, r, p, this.limits);
    const rows = await this.query<{ n: number }>(
      'count',
      `SELECT (${sumOf(branches, (allowed) => `SELECT count(*) FROM search.resources r WHERE ${and([...conditions, allowed])}`)})::int AS n`,
      p,
    );
    return rows[0]?.n ?? 0;
  }

  /**
   * Objects connected to `seeds` by edges, in both directions: one step, or three when the search is
   * about Applications (as ACM does), never walking on through Nodes or Channels. Only objects the user
   * may list are returned or walked through, so relationships never reveal anything else.
   */
  private async related(
    access: AccessSet,
    input: SearchInput,
    seeds: string[],
    want: { items: boolean; count: boolean },
  ): Promise<RelatedResult[]> {
    if (seeds.length === 0) return [];
    const wantedKinds = new Set((input.relatedKinds ?? []).filter(Boolean).map((k) => k.toLowerCase()));
    const kindFilter = (input.filters ?? []).find((f) => f.property === 'kind')?.values ?? [];
    const deep = [...wantedKinds, ...kindFilter.map((k) => k.toLowerCase())].includes('application');
    const levels = deep ? 3 : 1;
    const visited = new Set(seeds);
    const found = new Map<string, string>(); // uid -> kind
    let frontier = seeds;
    for (let level = 1; level <= levels && frontier.length > 0; level++) {
      const p = new Params();
      const n = resourceColumns('n');
      const f = p.list(frontier);
      // Edges stay inside a cluster: naming the frontier's clusters reads only their partitions.
      const c = p.list(clustersOf(frontier));
      const rows = await this.query<{ uid: string; kind: string }>(
        'related',
        `SELECT DISTINCT n.uid, n.data->>'kind' AS kind FROM (
           SELECT e.destid AS uid, e.cluster FROM search.edges e WHERE e.sourceid = ANY(${f}) AND e.cluster = ANY(${c})
           UNION SELECT e.sourceid, e.cluster FROM search.edges e WHERE e.destid = ANY(${f}) AND e.cluster = ANY(${c})) nb
         JOIN search.resources n ON n.uid = nb.uid AND n.cluster = nb.cluster AND n.cluster = ANY(${c})
         WHERE ${accessPredicate(access, this.hub, n, p)}`,
        p,
      );
      const next: string[] = [];
      for (const row of rows) {
        if (visited.has(row.uid)) continue;
        visited.add(row.uid);
        found.set(row.uid, row.kind);
        if (!hubKinds.has(row.kind.toLowerCase())) next.push(row.uid);
      }
      if (found.size > this.limits.maxRelated) {
        throw new QueryError(
          'TOO_MANY_RELATED',
          `more than ${this.limits.maxRelated} related objects; narrow the search or set relatedKinds`,
        );
      }
      frontier = next;
    }
    const byKind = new Map<string, string[]>();
    for (const [uid, kind] of found) {
      if (wantedKinds.size > 0 && !wantedKinds.has(kind.toLowerCase())) continue;
      byKind.set(kind, [...(byKind.get(kind) ?? []), uid]);
    }
    let items = new Map<string, Item>();
    if (want.items && byKind.size > 0) {
      const p = new Params();
      const uids = [...byKind.values()].flat();
      const rows = await this.query<Row>(
        'related',
        `SELECT uid, cluster, data FROM search.resources
         WHERE uid = ANY(${p.list(uids)}) AND cluster = ANY(${p.list(clustersOf(uids))})`,
        p,
      );
      items = new Map(rows.map((row) => [row.uid, formatItem(row.uid, row.cluster, row.data)]));
    }
    return [...byKind.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, uids]) => ({
        kind,
        ...(want.count ? { count: uids.length } : {}),
        ...(want.items
          ? { items: uids.map((u) => items.get(u)).filter((i): i is Item => i !== undefined) }
          : {}),
      }));
  }

  /** A user with cluster-wide grants, or grants in many namespaces, sees a large share of the index. */
  /** The walks that list a column's values for `access` (see complete). */
  private walks(access: AccessSet, column: string, p: Params): Walk[] {
    if (access.all) return [{ name: 'walk', column, rows: stepRows(access.managedClusters.length + 1) }];
    const { hub, managed } = accessParts(access, this.hub, resourceColumns('r'), p);
    return [
      ...(managed
        ? [{ name: 'managed', column, where: managed, rows: stepRows(access.managedClusters.length) }]
        : []),
      ...(hub
        ? [{ name: 'hub', column, where: hub, rows: 1, ...(managed ? { boundedBy: 'managed' } : {}) }]
        : []),
    ];
  }

  private isBroad(access: AccessSet): boolean {
    if (access.all || access.clusterWide.length > 0 || access.managedClusters.length > 0) return true;
    return access.namespaced.reduce((n, g) => n + g.namespaces.length, 0) > 50;
  }

  private limitOf(value: number | undefined | null, fallback: number, max: number, what: string): number {
    if (value === undefined || value === null) return fallback;
    if (value === -1) return max;
    if (!Number.isInteger(value) || value < 0) {
      throw new QueryError('BAD_LIMIT', `${what} must be a whole number from 0 to ${max}, or -1 for ${max}`);
    }
    if (value > max) {
      throw new QueryError(
        'LIMIT_TOO_HIGH',
        `${what} may be at most ${max}; page through results with offset`,
      );
    }
    return value;
  }

  /** Runs a read on a fresh replica, or the primary; a replica found gone is left out and the read retried. */
  private async read<T>(text: string, p: Params): Promise<T[]> {
    const target = this.reads?.pool();
    if (!target || target.pool === this.pool) {
      return (await this.pool.query({ text, values: p.values })).rows as T[];
    }
    try {
      return (await target.pool.query({ text, values: p.values })).rows as T[];
    } catch (err) {
      if (databaseUnavailable(err) === undefined && !isRecoveryConflict(err)) throw err;
      this.logger.warn(
        { replica: target.name, err: String(err) },
        'search read replica failed; reading the primary',
      );
      if (databaseUnavailable(err) !== undefined) this.reads!.failed(target.pool);
      return (await this.pool.query({ text, values: p.values })).rows as T[];
    }
  }

  private async query<T>(operation: string, text: string, p: Params): Promise<T[]> {
    const stop = searchMetrics.querySeconds.startTimer({ operation });
    try {
      return await this.read<T>(text, p);
    } catch (err) {
      const code = (err as { code?: string }).code;
      const gone = databaseUnavailable(err);
      if (gone !== undefined) {
        throw new QueryError(
          'UNAVAILABLE',
          `the search index is unavailable: its database cannot be reached (${gone}); retry in a few seconds`,
        );
      }
      if (code === '57014') {
        throw new QueryError(
          'TIMEOUT',
          'the search took too long and was stopped; add filters or lower the limit',
        );
      }
      if (code?.startsWith('22')) {
        // Data exceptions come from values the user sent (e.g. a malformed pattern).
        // PostgreSQL's own text stays in the log: it can quote internals (types, SQL) to the user.
        this.logger.info({ operation, code, err: String(err) }, 'search refused a value');
        throw new QueryError(
          'BAD_VALUE',
          `a filter value could not be used (PostgreSQL data error ${code}); check the values' format: numbers and dates for comparisons with <, >, <=, >=, and no control characters`,
        );
      }
      this.logger.error({ operation, err: String(err) }, 'search query failed');
      throw err;
    } finally {
      stop();
    }
  }
}

/** The distinct clusters of index uids. */
function clustersOf(uids: string[]): string[] {
  return [...new Set(uids.map(clusterOfUid))];
}

/** A standby cancelled the query because replaying the primary's changes needed what it read (40001). */
function isRecoveryConflict(err: unknown): boolean {
  return (err as { code?: string }).code === '40001';
}
