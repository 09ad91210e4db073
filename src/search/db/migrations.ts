// The index's schema, applied at start-up. `search.resources` and `search.edges` keep ACM search's layout,
// so tools written against ACM's index read tenantkit's; everything tenantkit adds lives beside them:
// generated columns and indexes on `search.resources` (ACM's writers and readers name their columns,
// so extra columns are invisible to them), and the `tenantkit_search` schema.
// Migrations only ever append: a released step is never edited.
import type pg from 'pg';

const migrations: { version: number; what: string; sql: string }[] = [
  {
    version: 1,
    what: 'ACM tables, query columns and indexes, relationship references, watch events',
    sql: `
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE SCHEMA IF NOT EXISTS search;
CREATE TABLE IF NOT EXISTS search.resources (uid text PRIMARY KEY, cluster text, data jsonb);
CREATE TABLE IF NOT EXISTS search.edges (
  sourceid text, sourcekind text, destid text, destkind text, edgetype text, cluster text,
  PRIMARY KEY (sourceid, destid, edgetype));

-- Columns the access predicate and the common filters use, so those queries are index-only scans.
-- "C" collation: byte order, which also lets b-tree indexes serve prefix wildcards (name:web*).
ALTER TABLE search.resources
  ADD COLUMN _kind text COLLATE "C" GENERATED ALWAYS AS (lower(data->>'kind')) STORED,
  ADD COLUMN _ns text COLLATE "C" GENERATED ALWAYS AS (data->>'namespace') STORED,
  ADD COLUMN _name text COLLATE "C" GENERATED ALWAYS AS (data->>'name') STORED,
  ADD COLUMN _gr text COLLATE "C"
    GENERATED ALWAYS AS (coalesce(data->>'apigroup', '') || '/' || coalesce(data->>'kind_plural', '')) STORED;
CREATE INDEX resources_by_kind ON search.resources (_kind, cluster, _ns, _gr, _name);
CREATE INDEX resources_by_namespace ON search.resources (_ns, _kind, cluster, _gr, _name);
CREATE INDEX resources_by_name ON search.resources (_name, cluster, _ns, _gr);
CREATE INDEX resources_by_type ON search.resources (cluster, _gr, _ns, _name);
-- Keywords match the values of every property, case-insensitively (trigrams make ILIKE '%x%' indexed).
CREATE INDEX resources_by_keyword ON search.resources
  USING gin ((jsonb_path_query_array(data, 'strict $.*')::text) gin_trgm_ops);
CREATE INDEX resources_by_label ON search.resources USING gin ((data->'label') jsonb_path_ops);
CREATE INDEX edges_by_dest ON search.edges (destid);
CREATE INDEX edges_by_cluster ON search.edges (cluster);

CREATE SCHEMA IF NOT EXISTS tenantkit_search;
-- The relationships each object declares, kept until the object goes, so an edge appears whichever
-- end arrives first. refs_hash lets an unchanged object skip all edge work.
CREATE TABLE tenantkit_search.sources (uid text PRIMARY KEY, refs_hash text NOT NULL);
CREATE TABLE tenantkit_search.edge_refs (
  sourceid text NOT NULL, cluster text NOT NULL, edgetype text NOT NULL,
  destuid text, destkind text COLLATE "C", destns text COLLATE "C", destname text COLLATE "C",
  selector jsonb);
CREATE INDEX edge_refs_by_source ON tenantkit_search.edge_refs (sourceid);
CREATE INDEX edge_refs_by_uid ON tenantkit_search.edge_refs (destuid) WHERE destuid IS NOT NULL;
CREATE INDEX edge_refs_by_name ON tenantkit_search.edge_refs (cluster, destkind, destns, destname)
  WHERE destname IS NOT NULL;
CREATE INDEX edge_refs_by_selector ON tenantkit_search.edge_refs (cluster, destkind, destns)
  WHERE selector IS NOT NULL;

-- Property names per type, for searchSchema without scanning every object.
CREATE TABLE tenantkit_search.properties (
  cluster text NOT NULL, gr text COLLATE "C" NOT NULL, property text COLLATE "C" NOT NULL,
  PRIMARY KEY (cluster, gr, property));

-- Changes for the watch subscription. Recorded only while some API replica has a subscriber
-- (a row in watchers that has not expired), so ingest pays nothing otherwise.
CREATE TABLE tenantkit_search.watchers (id text PRIMARY KEY, expires timestamptz NOT NULL);
CREATE TABLE tenantkit_search.events (
  id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp(),
  operation text NOT NULL, uid text NOT NULL, cluster text, old_data jsonb, new_data jsonb);

CREATE FUNCTION tenantkit_search.watched() RETURNS boolean LANGUAGE sql STABLE AS
  $$ SELECT EXISTS (SELECT 1 FROM tenantkit_search.watchers WHERE expires > now()) $$;
CREATE FUNCTION tenantkit_search.record_inserts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF tenantkit_search.watched() THEN
    INSERT INTO tenantkit_search.events (operation, uid, cluster, new_data)
      SELECT 'INSERT', uid, cluster, data FROM new_rows;
    PERFORM pg_notify('tenantkit_search_events', '');
  END IF;
  RETURN NULL;
END $$;
CREATE FUNCTION tenantkit_search.record_updates() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF tenantkit_search.watched() THEN
    INSERT INTO tenantkit_search.events (operation, uid, cluster, old_data, new_data)
      SELECT 'UPDATE', n.uid, n.cluster, o.data, n.data
      FROM new_rows n JOIN old_rows o USING (uid) WHERE o.data IS DISTINCT FROM n.data;
    PERFORM pg_notify('tenantkit_search_events', '');
  END IF;
  RETURN NULL;
END $$;
CREATE FUNCTION tenantkit_search.record_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF tenantkit_search.watched() THEN
    INSERT INTO tenantkit_search.events (operation, uid, cluster, old_data)
      SELECT 'DELETE', uid, cluster, data FROM old_rows;
    PERFORM pg_notify('tenantkit_search_events', '');
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER resources_inserted AFTER INSERT ON search.resources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenantkit_search.record_inserts();
CREATE TRIGGER resources_updated AFTER UPDATE ON search.resources
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION tenantkit_search.record_updates();
CREATE TRIGGER resources_deleted AFTER DELETE ON search.resources
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tenantkit_search.record_deletes();
`,
  },
  {
    version: 2,
    what: 'batch fences: each collector stream applied once and in order across indexer replicas',
    sql: `
-- Per cluster, the collector stream the index follows (its start time orders streams) and the last of
-- its batches applied. A batch's transaction locks its cluster's row (see indexer/fence.ts).
CREATE TABLE tenantkit_search.batch_fences (
  cluster text PRIMARY KEY, stream text NOT NULL, started bigint NOT NULL, seq bigint NOT NULL);
`,
  },
];

/** Applies every migration not yet applied, once, even with several replicas starting together. */
export async function migrate(pool: pg.Pool): Promise<number[]> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // One migrator at a time across replicas; the lock ends with the transaction.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('tenantkit_search.migrations'))");
    await client.query(`CREATE SCHEMA IF NOT EXISTS tenantkit_search;
      CREATE TABLE IF NOT EXISTS tenantkit_search.migrations (
        version int PRIMARY KEY, what text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM tenantkit_search.migrations')).rows.map(
        (r) => r.version,
      ),
    );
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      try {
        await client.query(m.sql);
      } catch (err) {
        throw new Error(`search index migration ${m.version} (${m.what}) failed: ${(err as Error).message}`);
      }
      await client.query('INSERT INTO tenantkit_search.migrations (version, what) VALUES ($1, $2)', [
        m.version,
        m.what,
      ]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
