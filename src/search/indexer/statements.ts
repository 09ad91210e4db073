// The SQL of one index batch. Everything is set-based (one statement per step for the whole batch),
// and edges are a pure function of (declared references, indexed objects): whenever an object changes,
// every edge that touches it is recomputed from the references, whichever end arrived first.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { EdgeRef, IndexedResource } from '../model.ts';

type Sql = Pick<pg.PoolClient, 'query'>;

/** Upserts objects, skipping those whose data and references are unchanged; returns the changed uids. */
export async function upsertResources(
  sql: Sql,
  cluster: string,
  resources: IndexedResource[],
): Promise<string[]> {
  // One statement tells every object apart: `prior` is the index before it (the same snapshot), so an
  // object without a prior row is new, and one whose references digest differs declares new references.
  const { rows } = await sql.query<{ uid: string; inserted: boolean; refs_changed: boolean }>(
    `WITH prior AS (SELECT uid, _refs FROM search.resources WHERE uid = ANY($1) AND cluster = $2),
     up AS (INSERT INTO search.resources AS r (uid, cluster, data, _refs)
       SELECT u, $2, d::jsonb, decode(h, 'hex') FROM unnest($1::text[], $3::text[], $4::text[]) AS t(u, d, h)
     ON CONFLICT (uid, cluster) DO UPDATE SET data = EXCLUDED.data, _refs = EXCLUDED._refs
       WHERE r.data IS DISTINCT FROM EXCLUDED.data OR r._refs IS DISTINCT FROM EXCLUDED._refs
     RETURNING uid, _refs)
     SELECT up.uid, prior.uid IS NULL AS inserted, prior._refs IS DISTINCT FROM up._refs AS refs_changed
     FROM up LEFT JOIN prior USING (uid)`,
    [
      resources.map((r) => r.uid),
      cluster,
      resources.map((r) => JSON.stringify(r.data)),
      resources.map((r) => refsDigest(r.edges)),
    ],
  );
  if (rows.length === 0) return [];
  await replaceReferences(
    sql,
    cluster,
    resources,
    rows.filter((r) => r.refs_changed),
  );
  await addPropertyNames(sql, cluster, resources, rows);
  // Edges to drop before they are rebuilt can only touch objects that were indexed before this batch.
  const touched = rows.map((r) => r.uid);
  const existed = rows.filter((r) => !r.inserted).map((r) => r.uid);
  await recomputeEdges(sql, cluster, touched, existed);
  return touched;
}

/**
 * Records the property names of the changed objects' types (for searchSchema), each distinct name of
 * the batch once. Names are never removed, which at worst offers a filter that matches nothing.
 */
async function addPropertyNames(
  sql: Sql,
  cluster: string,
  resources: IndexedResource[],
  changed: { uid: string }[],
): Promise<void> {
  const uids = new Set(changed.map((r) => r.uid));
  const groups: string[] = [];
  const names: string[] = [];
  const seen = new Set<string>();
  for (const r of resources) {
    if (!uids.has(r.uid)) continue;
    const d = r.data;
    // The same value as the _gr column: coalesce(apigroup, '') || '/' || coalesce(kind_plural, '').
    const gr = `${d.apigroup == null ? '' : String(d.apigroup)}/${d.kind_plural == null ? '' : String(d.kind_plural)}`;
    for (const key of Object.keys(d)) {
      const pair = `${gr} ${key}`;
      if (seen.has(pair)) continue;
      seen.add(pair);
      groups.push(gr);
      names.push(key);
    }
  }
  await sql.query(
    `INSERT INTO tenantkit_search.properties (cluster, gr, property)
       SELECT $1, g, k FROM unnest($2::text[], $3::text[]) AS t(g, k)
     ON CONFLICT DO NOTHING`,
    [cluster, groups, names],
  );
}

/** Stores the references of the objects whose references changed, in place of those stored before. */
async function replaceReferences(
  sql: Sql,
  cluster: string,
  resources: IndexedResource[],
  changed: { uid: string; inserted: boolean }[],
): Promise<void> {
  if (changed.length === 0) return;
  const uids = new Set(changed.map((r) => r.uid));
  // An object seen for the first time has no stored references to replace.
  const replaced = changed.filter((r) => !r.inserted).map((r) => r.uid);
  if (replaced.length > 0) {
    await sql.query('DELETE FROM tenantkit_search.edge_refs WHERE sourceid = ANY($1) AND cluster = $2', [
      replaced,
      cluster,
    ]);
  }
  const rows = resources.filter((r) => uids.has(r.uid)).flatMap((r) => r.edges.map((e) => refRow(r.uid, e)));
  if (rows.length > 0) {
    await sql.query(
      `INSERT INTO tenantkit_search.edge_refs (sourceid, cluster, edgetype, destuid, destkind, destns, destname, selector)
         SELECT s, $1, t, u, k, n, m, sel::jsonb
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
           AS x(s, t, u, k, n, m, sel)`,
      [
        cluster,
        rows.map((r) => r.source),
        rows.map((r) => r.type),
        rows.map((r) => r.uid),
        rows.map((r) => r.kind),
        rows.map((r) => r.namespace),
        rows.map((r) => r.name),
        rows.map((r) => r.selector),
      ],
    );
  }
}

function refRow(source: string, e: EdgeRef) {
  const none = { uid: null, kind: null, namespace: null, name: null, selector: null };
  if ('uid' in e) return { ...none, source, type: e.type, uid: e.uid };
  const base = { ...none, source, type: e.type, kind: e.kind.toLowerCase(), namespace: e.namespace ?? null };
  return 'selector' in e ? { ...base, selector: JSON.stringify(e.selector) } : { ...base, name: e.name };
}

/** What an object's references are, in 16 bytes (hex): equal digests, equal references. */
function refsDigest(edges: EdgeRef[]): string {
  return createHash('sha256').update(JSON.stringify(edges)).digest().subarray(0, 16).toString('hex');
}

const insertEdges = `INSERT INTO search.edges (sourceid, sourcekind, destid, destkind, edgetype, cluster)`;
const edgeValues = `s.uid, s.data->>'kind', d.uid, d.data->>'kind', r.edgetype, r.cluster`;
// Each way a reference can name its destination, as a join condition between a reference r and an
// object d that uses the indexes on both sides (no OR, no IS NOT DISTINCT FROM: those defeat them).
// Both are of the batch's cluster ($2), which every lookup names, so it reads that cluster's partitions only.
const destinations = [
  `r.destuid IS NOT NULL AND d.uid = r.destuid`,
  `r.destname IS NOT NULL AND r.destns IS NOT NULL AND d._name = r.destname
     AND d._kind = r.destkind AND d._ns = r.destns`,
  `r.destname IS NOT NULL AND r.destns IS NULL AND d._name = r.destname
     AND d._kind = r.destkind AND d._ns IS NULL`,
  `r.selector IS NOT NULL AND r.destkind = d._kind AND r.destns = d._ns AND d.data->'label' @> r.selector`,
];

/**
 * Drops and rebuilds every edge of `cluster` that starts or ends at one of `uids`; `existed` are those of
 * them indexed before this batch (only they can have edges to drop).
 */
export async function recomputeEdges(
  sql: Sql,
  cluster: string,
  uids: string[],
  existed = uids,
): Promise<void> {
  if (existed.length > 0) {
    await sql.query(
      'DELETE FROM search.edges WHERE (sourceid = ANY($1) OR destid = ANY($1)) AND cluster = $2',
      [existed, cluster],
    );
  }
  // Driven by the batch: every step is a LATERAL lookup fenced by OFFSET 0, so PostgreSQL walks the
  // indexes from each batch row instead of joining whole tables (cost grows with the batch, not the index).
  // Outgoing: the references these objects declare, to whatever is indexed now.
  const outgoing = destinations.map(
    (on) => `SELECT ${edgeValues} FROM unnest($1::text[]) b(uid)
      CROSS JOIN LATERAL (SELECT * FROM tenantkit_search.edge_refs r WHERE r.sourceid = b.uid AND r.cluster = $2 OFFSET 0) r
      CROSS JOIN LATERAL (SELECT * FROM search.resources d WHERE ${on} AND d.cluster = $2 OFFSET 0) d
      CROSS JOIN LATERAL (SELECT * FROM search.resources s WHERE s.uid = b.uid AND s.cluster = $2 OFFSET 0) s`,
  );
  // Incoming: references other objects declared that these objects now satisfy.
  const incoming = destinations.map(
    (on) => `SELECT ${edgeValues} FROM unnest($1::text[]) b(uid)
      CROSS JOIN LATERAL (SELECT * FROM search.resources d WHERE d.uid = b.uid AND d.cluster = $2 OFFSET 0) d
      CROSS JOIN LATERAL (SELECT * FROM tenantkit_search.edge_refs r WHERE ${on} AND r.cluster = $2 OFFSET 0) r
      CROSS JOIN LATERAL (SELECT * FROM search.resources s WHERE s.uid = r.sourceid AND s.cluster = $2 OFFSET 0) s`,
  );
  await sql.query(`${insertEdges} ${[...outgoing, ...incoming].join(' UNION ALL ')} ON CONFLICT DO NOTHING`, [
    uids,
    cluster,
  ]);
}

/** Removes objects of `cluster` with their references and every edge that touches them. */
export async function deleteResources(sql: Sql, cluster: string, uids: string[]): Promise<number> {
  if (uids.length === 0) return 0;
  // Only this cluster's rows: a collector can never remove another cluster's objects by uid.
  const gone = await sql.query<{ uid: string }>(
    'DELETE FROM search.resources WHERE uid = ANY($1) AND cluster = $2 RETURNING uid',
    [uids, cluster],
  );
  const removed = gone.rows.map((r) => r.uid);
  if (removed.length === 0) return 0;
  await sql.query('DELETE FROM tenantkit_search.edge_refs WHERE sourceid = ANY($1) AND cluster = $2', [
    removed,
    cluster,
  ]);
  await sql.query(
    'DELETE FROM search.edges WHERE (sourceid = ANY($1) OR destid = ANY($1)) AND cluster = $2',
    [removed, cluster],
  );
  return removed.length;
}

/** Deletes the objects of one type in `cluster` that are not in `keep`. */
export async function pruneType(sql: Sql, cluster: string, gr: string, keep: string[]): Promise<number> {
  const stale = await sql.query<{ uid: string }>(
    'SELECT uid FROM search.resources WHERE cluster = $1 AND _gr = $2 AND NOT (uid = ANY($3))',
    [cluster, gr, keep],
  );
  return deleteResources(
    sql,
    cluster,
    stale.rows.map((r) => r.uid),
  );
}

/** Deletes the objects of `cluster` whose type is not one of `keep` (`<apigroup>/<plural>`). */
export async function pruneTypesExcept(sql: Sql, cluster: string, keep: string[]): Promise<number> {
  const stale = await sql.query<{ uid: string }>(
    'SELECT uid FROM search.resources WHERE cluster = $1 AND NOT (_gr = ANY($2))',
    [cluster, keep],
  );
  return deleteResources(
    sql,
    cluster,
    stale.rows.map((r) => r.uid),
  );
}
