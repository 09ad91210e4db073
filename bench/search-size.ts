// Where the index's bytes go: N synthetic objects (bench/search-data.ts) from a few clusters indexed into
// a real PostgreSQL (embedded) through the indexer, then the size of every table and index summed over
// their partitions, per object. No control plane: storage only, for comparing schemas.
//   node bench/search-size.ts [--objects 100000] [--clusters 4]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/kube/log.ts';
import { migrate } from '../src/search/db/migrations.ts';
import { startEmbedded } from '../src/search/db/postgres.ts';
import { Indexer } from '../src/search/indexer/indexer.ts';
import { HubCluster } from '../src/search/model.ts';
import { benchArgs } from './args.ts';
import { syntheticNamespace } from './search-data.ts';

const { values } = benchArgs('bench:search-size', {
  objects: { type: 'string', default: '100000' },
  clusters: { type: 'string', default: '4' },
});
const objects = Number(values.objects);
const clusters = Number(values.clusters);
const perNamespace = 1000;
const dir = await mkdtemp(join(tmpdir(), 'tenantkit-bench-size-'));
const { chmod } = await import('node:fs/promises');
await chmod(dir, 0o755);
const db = await startEmbedded({ dir: join(dir, 'pg'), unsafeNoFsync: true });
try {
  await migrate(db.pool);
  const indexer = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
  const started = performance.now();
  const perCluster = Math.ceil(objects / clusters);
  await Promise.all(
    Array.from({ length: clusters }, async (_, c) => {
      const cluster = c === 0 ? HubCluster : `managed-${c}`;
      for (let i = 0; i * perNamespace < perCluster; i++) {
        const all = syntheticNamespace(
          `ns-${c}-${i}`,
          c * 1000 + i,
          Math.min(perNamespace, perCluster - i * perNamespace),
          cluster,
        );
        for (let b = 0; b < all.length; b += 500)
          await indexer.write({ cluster, upserts: all.slice(b, b + 500) });
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await db.pool.query('VACUUM ANALYZE');
  const total = Number((await db.pool.query('SELECT count(*) AS n FROM search.resources')).rows[0].n);
  // Every relation of the per-object tables (their partitions, and the partitions' indexes and TOAST),
  // grouped by the parent table or index it belongs to.
  const rows = (
    await db.pool.query<{ parent: string; bytes: string }>(`
      WITH parts AS (
        SELECT p.relid, t.parent FROM (VALUES ('search.resources'), ('search.edges'),
          ('tenantkit_search.edge_refs'), ('tenantkit_search.properties')) AS t(parent),
          LATERAL pg_partition_tree(t.parent::regclass) p WHERE p.isleaf),
      rels AS (
        SELECT parent || ' (heap+toast)' AS parent, pg_table_size(relid) AS bytes FROM parts
        UNION ALL
        SELECT coalesce((SELECT pi.inhparent::regclass::text FROM pg_inherits pi WHERE pi.inhrelid = i.indexrelid),
                        i.indexrelid::regclass::text), pg_relation_size(i.indexrelid)
        FROM parts JOIN pg_index i ON i.indrelid = parts.relid)
      SELECT parent, sum(bytes)::bigint AS bytes FROM rels GROUP BY parent ORDER BY bytes DESC`)
  ).rows;
  let sum = 0;
  console.log(
    `${total} objects from ${clusters} clusters indexed in ${seconds.toFixed(1)} s (${Math.round(total / seconds)}/s, fsync off)`,
  );
  for (const r of rows) {
    sum += Number(r.bytes);
    console.log(`${r.parent.padEnd(60)} ${(Number(r.bytes) / total).toFixed(0).padStart(6)} B/object`);
  }
  console.log(`${'total'.padEnd(60)} ${(sum / total).toFixed(0).padStart(6)} B/object`);
} finally {
  await db.close();
  await rm(dir, { recursive: true, force: true });
}
