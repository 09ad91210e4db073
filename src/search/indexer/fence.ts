// Batches of one collector run (a stream) are applied exactly once and in order, across every indexer
// replica. The cluster's fence row, locked for the batch's transaction, holds the stream the index
// follows and the last sequence number applied:
// - a batch resent because its answer was lost or timed out is acknowledged, not applied again;
// - a batch one replica took long ago (stuck behind a slow token review, say) cannot land after the
//   newer batches another replica applied meanwhile, such as the delete of the object it upserts;
// - a later-started collector of the cluster (a restarted Pod) takes the fence over; batches of the
//   stream it replaced are refused from then on;
// - a cluster removed from the index leaves a tombstone stream (`<time>.removed`): a collector that was
//   already running cannot write part of the cluster back; one started after the removal lists it whole.
//   While the removal runs, the tombstone reads `<time>.removing` (partitions.ts), with the same effect.
import type pg from 'pg';
import { type BatchSequence, SupersededBatchError } from '../model.ts';

type Sql = Pick<pg.PoolClient, 'query'>;

const startOf = (stream: string) => Number(stream.slice(0, stream.indexOf('.')));

/**
 * Takes the cluster's fence for the open transaction: true when the batch is to be applied (the fence
 * then records it), false when it was applied before. Throws {@link SupersededBatchError} for a batch of
 * a stream the fence has left behind.
 */
export async function passFence(sql: Sql, cluster: string, sequence: BatchSequence): Promise<boolean> {
  const started = startOf(sequence.stream);
  await sql.query(
    `INSERT INTO tenantkit_search.batch_fences (cluster, stream, started, seq) VALUES ($1, $2, $3, 0)
     ON CONFLICT (cluster) DO NOTHING`,
    [cluster, sequence.stream, started],
  );
  const { rows } = await sql.query<{ stream: string; started: string; seq: string }>(
    'SELECT stream, started, seq FROM tenantkit_search.batch_fences WHERE cluster = $1 FOR UPDATE',
    [cluster],
  );
  const fence = rows[0]!;
  if (fence.stream === sequence.stream) {
    if (sequence.seq <= Number(fence.seq)) return false;
  } else if (fence.stream.endsWith('.removed') || fence.stream.endsWith('.removing')) {
    // A collector started at the very moment of the removal, or later, lists the cluster whole: it passes.
    if (started < Number(fence.started)) {
      throw new SupersededBatchError(
        `cluster ${cluster} was removed from the index at ${new Date(Number(fence.started)).toISOString()}, after this batch's collector stream ${sequence.stream} started: restart the collector to index the cluster again, or revoke its write access to keep it out`,
      );
    }
  } else if (
    started < Number(fence.started) ||
    (started === Number(fence.started) && sequence.stream < fence.stream)
  ) {
    throw new SupersededBatchError(
      `cluster ${cluster}'s index follows collector stream ${fence.stream}, started ${new Date(Number(fence.started)).toISOString()}, after this batch's stream ${sequence.stream}: a newer collector of the cluster runs; stop this one`,
    );
  }
  await sql.query(
    'UPDATE tenantkit_search.batch_fences SET stream = $2, started = $3, seq = $4 WHERE cluster = $1',
    [cluster, sequence.stream, started, sequence.seq],
  );
  return true;
}
