// The index's schema, applied at start-up. `search.resources` and `search.edges` keep ACM search's layout,
// so tools written against ACM's index read tenantkit's; everything tenantkit adds lives beside them:
// generated columns and indexes on `search.resources` (ACM's writers and readers name their columns,
// so extra columns are invisible to them), and the `tenantkit_search` schema.
// Migrations only ever append: a released step is never edited.
import type pg from 'pg';

/**
 * ensure_cluster as migrations 6 and 8 define it: each missing partition of the cluster made as a table of
 * its own (LIKE its parent), then `prepare` (plpgsql lines run for it, e.g. setting its indexes' storage
 * parameters), then attached. With no `prepare` it is migration 6's text exactly.
 */
function ensureCluster(prepare = ''): string {
  return `CREATE OR REPLACE FUNCTION tenantkit_search.ensure_cluster(cluster text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t record;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('tenantkit_search.partitions:' || cluster));
  IF NOT EXISTS (SELECT 1 FROM tenantkit_search.missing_partitions(cluster)) THEN RETURN; END IF;
  PERFORM tenantkit_search.share_lock_partitioned_tables();
  FOR t IN SELECT * FROM tenantkit_search.missing_partitions(cluster) LOOP
    EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING ALL)', t.schema_name, t.part, t.schema_name, t.table_name);
${prepare}    EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES IN (%L)', t.schema_name, t.table_name,
      t.schema_name, t.part, cluster);
  END LOOP;
END $$;
`;
}

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
  {
    version: 3,
    what: 'the index partitioned by cluster: one partition per cluster in every per-object table',
    sql: `
-- Each cluster's rows live in their own partition of search.resources, search.edges,
-- tenantkit_search.sources and tenantkit_search.edge_refs: a statement that names a cluster touches
-- only its partitions, and a cluster that leaves is a DROP of them (tenantkit_search.drop_cluster).
-- Keys gain the cluster (a partitioned table's keys must hold its partition key); the uid stays first,
-- so lookups by uid use the same indexes as before.
CREATE TABLE search.resources_partitioned (uid text NOT NULL, cluster text NOT NULL, data jsonb,
  PRIMARY KEY (uid, cluster)) PARTITION BY LIST (cluster);
ALTER TABLE search.resources_partitioned
  ADD COLUMN _kind text COLLATE "C" GENERATED ALWAYS AS (lower(data->>'kind')) STORED,
  ADD COLUMN _ns text COLLATE "C" GENERATED ALWAYS AS (data->>'namespace') STORED,
  ADD COLUMN _name text COLLATE "C" GENERATED ALWAYS AS (data->>'name') STORED,
  ADD COLUMN _gr text COLLATE "C"
    GENERATED ALWAYS AS (coalesce(data->>'apigroup', '') || '/' || coalesce(data->>'kind_plural', '')) STORED;
CREATE TABLE search.edges_partitioned (
  sourceid text NOT NULL, sourcekind text, destid text NOT NULL, destkind text, edgetype text NOT NULL,
  cluster text NOT NULL, PRIMARY KEY (sourceid, destid, edgetype, cluster)) PARTITION BY LIST (cluster);
CREATE TABLE tenantkit_search.sources_partitioned (uid text NOT NULL, cluster text NOT NULL,
  refs_hash text NOT NULL, PRIMARY KEY (uid, cluster)) PARTITION BY LIST (cluster);
CREATE TABLE tenantkit_search.edge_refs_partitioned (
  sourceid text NOT NULL, cluster text NOT NULL, edgetype text NOT NULL,
  destuid text, destkind text COLLATE "C", destns text COLLATE "C", destname text COLLATE "C",
  selector jsonb) PARTITION BY LIST (cluster);

-- A partition's name: readable, and unique whatever the cluster's name (a hash of it, for names that
-- differ only in characters an identifier may not hold, or that are too long for one).
CREATE FUNCTION tenantkit_search.partition_name(base text, cluster text) RETURNS text
  LANGUAGE sql IMMUTABLE AS $$
  SELECT base || '_' || left(regexp_replace(cluster, '[^a-z0-9]', '_', 'g'), 36) || '_' || left(md5(cluster), 8)
$$;
-- The per-object tables, with the schema of each.
CREATE FUNCTION tenantkit_search.partitioned_tables() RETURNS TABLE (schema_name text, table_name text)
  LANGUAGE sql IMMUTABLE AS $$
  VALUES ('search', 'resources'), ('search', 'edges'), ('tenantkit_search', 'sources'),
         ('tenantkit_search', 'edge_refs')
$$;

-- Creating or dropping a partition locks its parent table exclusively. The parents are locked first, all
-- at once and in the order queries lock them (edges before resources, as the related query names them),
-- so a query never deadlocks with a catalog change; the indexer's batches may, and the caller's short
-- lock timeout (below the server's deadlock_timeout) makes the catalog change the one that gives way.
CREATE FUNCTION tenantkit_search.lock_partitioned_tables() RETURNS void LANGUAGE sql AS $$
  LOCK TABLE search.edges, search.resources, tenantkit_search.sources, tenantkit_search.edge_refs
    IN ACCESS EXCLUSIVE MODE
$$;

-- Creates the cluster's partitions where missing. One caller at a time per cluster (an advisory lock
-- for the transaction), so indexer replicas that see a new cluster together do not collide.
CREATE FUNCTION tenantkit_search.ensure_cluster(cluster text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t record;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('tenantkit_search.partitions:' || cluster));
  IF NOT EXISTS (SELECT 1 FROM tenantkit_search.partitioned_tables() p
      WHERE to_regclass(format('%I.%I', p.schema_name, tenantkit_search.partition_name(p.table_name, cluster))) IS NULL) THEN
    RETURN;
  END IF;
  PERFORM tenantkit_search.lock_partitioned_tables();
  FOR t IN SELECT * FROM tenantkit_search.partitioned_tables() LOOP
    IF to_regclass(format('%I.%I', t.schema_name, tenantkit_search.partition_name(t.table_name, cluster))) IS NULL THEN
      EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I FOR VALUES IN (%L)', t.schema_name,
        tenantkit_search.partition_name(t.table_name, cluster), t.schema_name, t.table_name, cluster);
    END IF;
  END LOOP;
END $$;

-- Removes every row of one cluster: its partitions are dropped (no row-by-row delete), with its
-- property names. Its fence becomes a tombstone: batches of collector streams that started before the
-- removal are refused, so a collector still running cannot bring back part of the cluster; one started
-- after it (which lists everything first) may index the cluster again. Returns the objects removed.
CREATE FUNCTION tenantkit_search.drop_cluster(cluster text, removed_at bigint) RETURNS bigint
  LANGUAGE plpgsql AS $$
DECLARE t record; n bigint := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('tenantkit_search.partitions:' || cluster));
  PERFORM tenantkit_search.lock_partitioned_tables();
  IF to_regclass(format('search.%I', tenantkit_search.partition_name('resources', cluster))) IS NOT NULL THEN
    EXECUTE format('SELECT count(*) FROM search.%I', tenantkit_search.partition_name('resources', cluster)) INTO n;
  END IF;
  IF n > 0 AND tenantkit_search.watched() THEN
    -- Watch subscribers see the objects go, as they would with a DELETE (a DROP fires no trigger).
    EXECUTE format($q$INSERT INTO tenantkit_search.events (operation, uid, cluster, old_data)
      SELECT 'DELETE', uid, cluster, data FROM search.%I$q$, tenantkit_search.partition_name('resources', cluster));
    PERFORM pg_notify('tenantkit_search_events', '');
  END IF;
  FOR t IN SELECT * FROM tenantkit_search.partitioned_tables() LOOP
    EXECUTE format('DROP TABLE IF EXISTS %I.%I', t.schema_name, tenantkit_search.partition_name(t.table_name, cluster));
  END LOOP;
  DELETE FROM tenantkit_search.properties p WHERE p.cluster = drop_cluster.cluster;
  INSERT INTO tenantkit_search.batch_fences AS f (cluster, stream, started, seq)
    VALUES (drop_cluster.cluster, removed_at || '.removed', removed_at, 0)
    ON CONFLICT ON CONSTRAINT batch_fences_pkey
    DO UPDATE SET stream = EXCLUDED.stream, started = EXCLUDED.started, seq = 0;
  RETURN n;
END $$;

-- The rows there are, moved cluster by cluster (rows without a cluster were never written by tenantkit).
DO $$
DECLARE c text;
BEGIN
  FOR c IN SELECT DISTINCT cluster FROM search.resources WHERE cluster IS NOT NULL
           UNION SELECT DISTINCT cluster FROM search.edges WHERE cluster IS NOT NULL
           UNION SELECT DISTINCT cluster FROM tenantkit_search.edge_refs LOOP
    PERFORM pg_advisory_xact_lock(hashtext('tenantkit_search.partitions:' || c));
    EXECUTE format('CREATE TABLE search.%I PARTITION OF search.resources_partitioned FOR VALUES IN (%L)',
      tenantkit_search.partition_name('resources', c), c);
    EXECUTE format('CREATE TABLE search.%I PARTITION OF search.edges_partitioned FOR VALUES IN (%L)',
      tenantkit_search.partition_name('edges', c), c);
    EXECUTE format('CREATE TABLE tenantkit_search.%I PARTITION OF tenantkit_search.sources_partitioned FOR VALUES IN (%L)',
      tenantkit_search.partition_name('sources', c), c);
    EXECUTE format('CREATE TABLE tenantkit_search.%I PARTITION OF tenantkit_search.edge_refs_partitioned FOR VALUES IN (%L)',
      tenantkit_search.partition_name('edge_refs', c), c);
  END LOOP;
END $$;
INSERT INTO search.resources_partitioned (uid, cluster, data)
  SELECT uid, cluster, data FROM search.resources WHERE cluster IS NOT NULL;
INSERT INTO search.edges_partitioned SELECT * FROM search.edges WHERE cluster IS NOT NULL;
INSERT INTO tenantkit_search.sources_partitioned (uid, cluster, refs_hash)
  SELECT s.uid, r.cluster, s.refs_hash FROM tenantkit_search.sources s
  JOIN search.resources_partitioned r ON r.uid = s.uid;
INSERT INTO tenantkit_search.edge_refs_partitioned SELECT * FROM tenantkit_search.edge_refs;
DROP TABLE search.resources, search.edges, tenantkit_search.sources, tenantkit_search.edge_refs;
ALTER TABLE search.resources_partitioned RENAME TO resources;
ALTER TABLE search.edges_partitioned RENAME TO edges;
ALTER TABLE tenantkit_search.sources_partitioned RENAME TO sources;
ALTER TABLE tenantkit_search.edge_refs_partitioned RENAME TO edge_refs;

-- The same indexes as before, now one per partition (built after the rows are in). The index on
-- edges' cluster is gone: a cluster's edges are its partition.
CREATE INDEX resources_by_kind ON search.resources (_kind, cluster, _ns, _gr, _name);
CREATE INDEX resources_by_namespace ON search.resources (_ns, _kind, cluster, _gr, _name);
CREATE INDEX resources_by_name ON search.resources (_name, cluster, _ns, _gr);
CREATE INDEX resources_by_type ON search.resources (cluster, _gr, _ns, _name);
CREATE INDEX resources_by_keyword ON search.resources
  USING gin ((jsonb_path_query_array(data, 'strict $.*')::text) gin_trgm_ops);
CREATE INDEX resources_by_label ON search.resources USING gin ((data->'label') jsonb_path_ops);
CREATE INDEX edges_by_dest ON search.edges (destid);
CREATE INDEX edge_refs_by_source ON tenantkit_search.edge_refs (sourceid);
CREATE INDEX edge_refs_by_uid ON tenantkit_search.edge_refs (destuid) WHERE destuid IS NOT NULL;
CREATE INDEX edge_refs_by_name ON tenantkit_search.edge_refs (cluster, destkind, destns, destname)
  WHERE destname IS NOT NULL;
CREATE INDEX edge_refs_by_selector ON tenantkit_search.edge_refs (cluster, destkind, destns)
  WHERE selector IS NOT NULL;

-- Watch events, recorded for statements on the parent table (the indexer writes only through it).
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
    version: 4,
    what: "each object's references digest in its own row: tenantkit_search.sources folded into search.resources",
    sql: `
-- The digest of the references an object declares (16 bytes of SHA-256) lives in the object's row, so
-- one upsert tells new, changed and unchanged objects apart: the sources table, its primary key and its
-- second lookup per object are gone (about 180 bytes and one statement per object).
ALTER TABLE search.resources ADD COLUMN _refs bytea;
-- The digests there are carried over (they were the whole SHA-256, base64url), so unchanged objects stay
-- unchanged through the upgrade; a digest of another shape is left out and recomputed on the next batch.
UPDATE search.resources r
  SET _refs = substring(decode(translate(s.refs_hash, '-_', '+/') || '=', 'base64') FROM 1 FOR 16)
  FROM tenantkit_search.sources s
  WHERE s.uid = r.uid AND s.cluster = r.cluster AND s.refs_hash ~ '^[A-Za-z0-9_-]{43}$';
DROP TABLE tenantkit_search.sources;
CREATE OR REPLACE FUNCTION tenantkit_search.partitioned_tables() RETURNS TABLE (schema_name text, table_name text)
  LANGUAGE sql IMMUTABLE AS $$
  VALUES ('search', 'resources'), ('search', 'edges'), ('tenantkit_search', 'edge_refs')
$$;
CREATE OR REPLACE FUNCTION tenantkit_search.lock_partitioned_tables() RETURNS void LANGUAGE sql AS $$
  LOCK TABLE search.edges, search.resources, tenantkit_search.edge_refs IN ACCESS EXCLUSIVE MODE
$$;
`,
  },
  {
    version: 5,
    what: 'objects counted per cluster, type, kind and namespace, kept by the writes to search.resources',
    sql: `
-- How many objects each (cluster, type, kind, namespace) holds, so a count whose filters and access set
-- name only those (kind:Pod for who may list pods in some namespaces, say) sums a few rows instead of
-- reading every object. Kept exact by statement triggers on search.resources, in the transaction of the
-- write; partitioned by cluster like the objects, so a removed cluster's counts go with its partitions.
CREATE TABLE tenantkit_search.counts (
  cluster text NOT NULL, _gr text COLLATE "C", _kind text COLLATE "C", _ns text COLLATE "C", n bigint NOT NULL,
  UNIQUE NULLS NOT DISTINCT (cluster, _gr, _kind, _ns)) PARTITION BY LIST (cluster);
CREATE OR REPLACE FUNCTION tenantkit_search.partitioned_tables() RETURNS TABLE (schema_name text, table_name text)
  LANGUAGE sql IMMUTABLE AS $$
  VALUES ('search', 'resources'), ('search', 'edges'), ('tenantkit_search', 'edge_refs'), ('tenantkit_search', 'counts')
$$;
CREATE OR REPLACE FUNCTION tenantkit_search.lock_partitioned_tables() RETURNS void LANGUAGE sql AS $$
  LOCK TABLE search.edges, search.resources, tenantkit_search.edge_refs, tenantkit_search.counts
    IN ACCESS EXCLUSIVE MODE
$$;

-- Each statement adds its groups' changes; a group left empty goes. Groups are written in one order, so
-- two writers of the same cluster (unsequenced batches on two replicas) wait for each other instead of
-- deadlocking. (PL/pgSQL, whose statements keep their plans for the session.)
CREATE FUNCTION tenantkit_search.count_inserts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tenantkit_search.counts AS c (cluster, _gr, _kind, _ns, n)
    SELECT cluster, _gr, _kind, _ns, count(*) FROM new_rows GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (cluster, _gr, _kind, _ns) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END $$;
CREATE FUNCTION tenantkit_search.count_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tenantkit_search.counts AS c (cluster, _gr, _kind, _ns, n)
    SELECT cluster, _gr, _kind, _ns, -count(*) FROM old_rows GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (cluster, _gr, _kind, _ns) DO UPDATE SET n = c.n + EXCLUDED.n;
  DELETE FROM tenantkit_search.counts c USING (SELECT DISTINCT cluster FROM old_rows) o
    WHERE c.cluster = o.cluster AND c.n <= 0;
  RETURN NULL;
END $$;
-- An update moves an object between groups only when its kind, type or namespace changed (never, for
-- what collectors send: those are fixed for a uid); otherwise the changes cancel and nothing is written.
CREATE FUNCTION tenantkit_search.count_updates() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tenantkit_search.counts AS c (cluster, _gr, _kind, _ns, n)
    SELECT cluster, _gr, _kind, _ns, sum(d) FROM (
      SELECT cluster, _gr, _kind, _ns, 1 AS d FROM new_rows
      UNION ALL SELECT cluster, _gr, _kind, _ns, -1 FROM old_rows) u
    GROUP BY 1, 2, 3, 4 HAVING sum(d) <> 0 ORDER BY 1, 2, 3, 4
  ON CONFLICT (cluster, _gr, _kind, _ns) DO UPDATE SET n = c.n + EXCLUDED.n;
  IF FOUND THEN
    DELETE FROM tenantkit_search.counts c USING (SELECT DISTINCT cluster FROM old_rows) o
      WHERE c.cluster = o.cluster AND c.n <= 0;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER resources_counted_inserts AFTER INSERT ON search.resources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenantkit_search.count_inserts();
CREATE TRIGGER resources_counted_updates AFTER UPDATE ON search.resources
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION tenantkit_search.count_updates();
CREATE TRIGGER resources_counted_deletes AFTER DELETE ON search.resources
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tenantkit_search.count_deletes();

-- The objects there are, counted (each cluster's counts partition made first).
DO $$
DECLARE c text;
BEGIN
  FOR c IN SELECT (regexp_match(pg_get_expr(k.relpartbound, k.oid), $re$IN [(]'(.*)'[)]$re$))[1]
           FROM pg_inherits i JOIN pg_class k ON k.oid = i.inhrelid
           WHERE i.inhparent = 'search.resources'::regclass LOOP
    EXECUTE format('CREATE TABLE tenantkit_search.%I PARTITION OF tenantkit_search.counts FOR VALUES IN (%L)',
      tenantkit_search.partition_name('counts', c), c);
  END LOOP;
END $$;
INSERT INTO tenantkit_search.counts (cluster, _gr, _kind, _ns, n)
  SELECT cluster, _gr, _kind, _ns, count(*) FROM search.resources GROUP BY 1, 2, 3, 4;
`,
  },
  {
    version: 6,
    what: "a new cluster's partitions attached without blocking queries or batches of other clusters",
    sql: `
-- CREATE TABLE ... PARTITION OF locks the parent exclusively: it waits for every running query on the
-- parent, and every query that comes after waits behind it. A cluster's partitions are now made as
-- tables of their own, with the parent's columns, constraints and indexes (LIKE), and attached: ATTACH
-- PARTITION takes SHARE UPDATE EXCLUSIVE on the parent, which reads and writes do not wait for (only
-- other catalog changes do), and it adopts the table's indexes as the parent's instead of building more.
-- The parents are locked first in one order, as before, so two catalog changes never deadlock.
CREATE FUNCTION tenantkit_search.share_lock_partitioned_tables() RETURNS void LANGUAGE sql AS $$
  LOCK TABLE search.edges, search.resources, tenantkit_search.edge_refs, tenantkit_search.counts
    IN SHARE UPDATE EXCLUSIVE MODE
$$;
-- The cluster's partitions that do not exist yet, with the name each gets.
CREATE FUNCTION tenantkit_search.missing_partitions(cluster text)
  RETURNS TABLE (schema_name text, table_name text, part text) LANGUAGE sql STABLE AS $$
  SELECT p.schema_name, p.table_name, tenantkit_search.partition_name(p.table_name, cluster)
  FROM tenantkit_search.partitioned_tables() p
  WHERE to_regclass(format('%I.%I', p.schema_name, tenantkit_search.partition_name(p.table_name, cluster))) IS NULL
$$;
${ensureCluster()}`,
  },
  {
    version: 7,
    what: 'a cluster removed without blocking queries: its partitions detached concurrently, then dropped',
    sql: `
-- drop_cluster (migration 3) drops partitions, which locks the parents exclusively: every running query
-- is waited for and every new one waits behind it. A removal now writes its tombstone first
-- (mark_removed), then detaches each partition with DETACH PARTITION ... CONCURRENTLY, which takes only
-- SHARE UPDATE EXCLUSIVE on the parent (queries and batches go on; from its first step new queries no
-- longer see the partition) and waits for the queries that still read it; the table, a partition no
-- more, is then dropped (indexer/partitions.ts runs those steps: they cannot run in a transaction).
-- drop_cluster stays for replicas of the version before during an upgrade.

-- Each of the cluster's partitions, in the order the parents are locked (see
-- share_lock_partitioned_tables), and how far it is: attached, detaching (a concurrent detach that was
-- interrupted: queries no longer see it, FINALIZE completes it), detached (a table that is no
-- partition any more, whose drop was interrupted) or missing.
CREATE FUNCTION tenantkit_search.partition_states(cluster text)
  RETURNS TABLE (schema_name text, table_name text, part text, state text) LANGUAGE sql STABLE AS $$
  SELECT p.schema_name, p.table_name, n.part,
    CASE WHEN to_regclass(format('%I.%I', p.schema_name, n.part)) IS NULL THEN 'missing'
         WHEN i.inhrelid IS NULL THEN 'detached'
         WHEN i.inhdetachpending THEN 'detaching'
         ELSE 'attached' END
  FROM tenantkit_search.partitioned_tables() p
  CROSS JOIN LATERAL (SELECT tenantkit_search.partition_name(p.table_name, cluster) AS part) n
  LEFT JOIN pg_inherits i ON i.inhrelid = to_regclass(format('%I.%I', p.schema_name, n.part))
    AND i.inhparent = format('%I.%I', p.schema_name, p.table_name)::regclass
  ORDER BY array_position(ARRAY['edges', 'resources', 'edge_refs', 'counts'], p.table_name)
$$;

-- The first step of a removal: the fence becomes a tombstone of a removal in progress ('<time>.removing':
-- batches of collector streams started before it are refused from now on, as by '<time>.removed', which
-- it becomes once the partitions are gone), and the cluster's property names go. Returns nothing.
CREATE FUNCTION tenantkit_search.mark_removed(cluster text, removed_at bigint) RETURNS void
  LANGUAGE sql AS $$
  DELETE FROM tenantkit_search.properties p WHERE p.cluster = mark_removed.cluster;
  INSERT INTO tenantkit_search.batch_fences AS f (cluster, stream, started, seq)
    VALUES (mark_removed.cluster, removed_at || '.removing', removed_at, 0)
    ON CONFLICT ON CONSTRAINT batch_fences_pkey
    DO UPDATE SET stream = EXCLUDED.stream, started = EXCLUDED.started, seq = 0;
$$;

-- The clusters whose removal began and did not finish (a crash between its steps).
CREATE FUNCTION tenantkit_search.unfinished_removals() RETURNS SETOF text LANGUAGE sql STABLE AS $$
  SELECT cluster FROM tenantkit_search.batch_fences WHERE stream LIKE '%.removing'
$$;
`,
  },
  {
    version: 8,
    what: "the keyword and label indexes' pending lists kept short, so queries under churn do not scan them",
    sql: `
-- A GIN index takes new entries into a pending list (4 MB by default) and merges them into the index
-- when the list is full or on VACUUM. Every search through the index reads the whole list, unsorted:
-- while clusters rewrite their objects, a keyword count at 210,000 objects from 21 clusters took
-- p50 / p95 240 / 827 ms with 4 MB lists and 76 / 104 ms with 128 kB ones, the write rate unchanged.
-- The limit is a storage parameter of each partition's index (a partitioned index has none): set here
-- on the partitions there are, and by ensure_cluster on each new one.
CREATE FUNCTION tenantkit_search.shorten_pending_lists(partition regclass) RETURNS void LANGUAGE plpgsql AS $$
DECLARE i record;
BEGIN
  FOR i IN SELECT x.indexrelid::regclass AS idx FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
           JOIN pg_am a ON a.oid = c.relam WHERE x.indrelid = partition AND a.amname = 'gin' LOOP
    EXECUTE format('ALTER INDEX %s SET (gin_pending_list_limit = 128)', i.idx);
  END LOOP;
END $$;
SELECT tenantkit_search.shorten_pending_lists(t.relid)
  FROM pg_partition_tree('search.resources') t WHERE t.isleaf;
${ensureCluster("    PERFORM tenantkit_search.shorten_pending_lists(format('%I.%I', t.schema_name, t.part)::regclass);\n")}`,
  },
];

/**
 * Applies every migration not yet applied (up to `upTo`, for tests of an upgrade), once, even with
 * several replicas starting together.
 */
export async function migrate(pool: pg.Pool, upTo = Number.POSITIVE_INFINITY): Promise<number[]> {
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
      if (done.has(m.version) || m.version > upTo) continue;
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
