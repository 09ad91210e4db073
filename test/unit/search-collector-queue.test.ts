// The collector's batch queue against a recording IndexSink: batch boundaries, order, back-pressure,
// retries of failed writes, bounded memory.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/kube/log.ts';
import { BatchQueue } from '../../src/search/collector/batch-queue.ts';
import {
  BackPressureError,
  type IndexBatch,
  type IndexedResource,
  type IndexSink,
} from '../../src/search/model.ts';

const row = (id: string, kind = 'ConfigMap'): IndexedResource => ({
  uid: `c1/${id}`,
  data: { kind, kind_plural: `${kind.toLowerCase()}s`, apiversion: 'v1', name: id },
  edges: [],
});

/** Records committed batches; `fail` decides per attempt whether to throw instead. */
class RecordingSink implements IndexSink {
  readonly committed: IndexBatch[] = [];
  attempts = 0;
  fail: (attempt: number) => Error | undefined = () => undefined;
  gate: Promise<void> = Promise.resolve();
  async write(batch: IndexBatch): Promise<void> {
    const error = this.fail(++this.attempts);
    if (error) throw error;
    await this.gate;
    this.committed.push(structuredClone(batch));
  }
}

const queue = (sink: IndexSink, more: Partial<ConstructorParameters<typeof BatchQueue>[0]> = {}) =>
  new BatchQueue({
    sink,
    cluster: 'c1',
    logger: silentLogger,
    maxObjects: 3,
    maxDelayMs: 20,
    maxPendingObjects: 100,
    ...more,
  });

describe('collector batch queue', () => {
  it('closes batches at the size limit, after the delay, and right after a resync', async () => {
    const sink = new RecordingSink();
    const q = queue(sink);
    for (const id of ['a', 'b', 'c', 'd']) q.upsert(row(id));
    q.resync({ apigroup: '', kind_plural: 'configmaps', uids: ['c1/a', 'c1/b', 'c1/c', 'c1/d'] });
    // Changes after a resync go to a later batch, or the resync would delete them.
    q.upsert(row('e'));
    await q.barrier();
    expect(sink.committed.map((b) => [b.upserts?.map((u) => u.data.name), b.resyncs?.length ?? 0])).toEqual([
      [['a', 'b', 'c'], 0],
      [['d'], 1],
      [['e'], 0],
    ]);

    q.upsert(row('f'));
    await new Promise((r) => setTimeout(r, 60));
    expect(sink.committed).toHaveLength(4); // sent after maxDelayMs without a barrier
  });

  it('an upsert then a delete of one object in a batch is just a delete; a re-upsert keeps the latest version', async () => {
    const sink = new RecordingSink();
    const q = queue(sink, { maxObjects: 100 });
    q.upsert(row('a'));
    q.upsert({ ...row('b'), data: { ...row('b').data, label: { v: '1' } } });
    q.upsert({ ...row('b'), data: { ...row('b').data, label: { v: '2' } } });
    q.delete('c1/a');
    q.dropType({ apigroup: 'example.com', kind_plural: 'widgets' });
    await q.barrier();
    expect(sink.committed).toEqual([
      {
        cluster: 'c1',
        upserts: [{ ...row('b'), data: { ...row('b').data, label: { v: '2' } } }],
        deletes: ['c1/a'],
        dropTypes: [{ apigroup: 'example.com', kind_plural: 'widgets' }],
        sequence: { stream: expect.stringMatching(/^\d{13}\.[0-9a-f]{16}$/), seq: 1 },
      },
    ]);
    expect(q.pendingObjects()).toBe(0);
  });

  it('waits as long as back-pressure asks and resends the same batch, keeping order', async () => {
    const sink = new RecordingSink();
    sink.fail = (attempt) => (attempt <= 2 ? new BackPressureError(50) : undefined);
    const q = queue(sink);
    const started = Date.now();
    for (const id of ['a', 'b', 'c', 'd', 'e']) q.upsert(row(id));
    await q.barrier();
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(sink.attempts).toBe(4);
    expect(sink.committed.flatMap((b) => b.upserts?.map((u) => u.data.name))).toEqual([
      'a',
      'b',
      'c',
      'd',
      'e',
    ]);
  });

  it('retries failed writes with backoff and never drops a batch', async () => {
    const sink = new RecordingSink();
    sink.fail = (attempt) => (attempt <= 3 ? new Error('connection refused') : undefined);
    const q = queue(sink);
    q.upsert(row('a'));
    q.delete('c1/z');
    await q.barrier();
    expect(sink.attempts).toBe(4);
    expect(sink.committed).toEqual([
      {
        cluster: 'c1',
        upserts: [row('a')],
        deletes: ['c1/z'],
        sequence: expect.objectContaining({ seq: 1 }),
      },
    ]);
    // Each later batch is the next of the same stream; a resend kept its number (the indexer's fence).
    q.upsert(row('b'));
    await q.barrier();
    expect(sink.committed.map((b) => b.sequence?.seq)).toEqual([1, 2]);
    expect(sink.committed[1]?.sequence?.stream).toBe(sink.committed[0]?.sequence?.stream);
  });

  it('is full at the pending limit and has room again once the index caught up', async () => {
    const sink = new RecordingSink();
    let open!: () => void;
    sink.gate = new Promise((resolve) => {
      open = resolve;
    });
    const q = queue(sink, { maxObjects: 2, maxPendingObjects: 4 });
    for (const id of ['a', 'b', 'c', 'd']) q.upsert(row(id));
    expect(q.full()).toBe(true);
    let room = false;
    const waiting = q.room().then(() => {
      room = true;
    });
    await new Promise((r) => setTimeout(r, 30));
    expect(room).toBe(false);
    open();
    await waiting;
    expect(q.full()).toBe(false);
    await q.barrier();
    expect(sink.committed).toHaveLength(2);
  });

  it('stops after the close timeout when the index never accepts, and says so', async () => {
    const sink = new RecordingSink();
    sink.fail = () => new Error('down');
    const q = queue(sink);
    q.upsert(row('a'));
    const barrier = q.barrier();
    const started = Date.now();
    await q.close(100);
    expect(Date.now() - started).toBeLessThan(1_000);
    await expect(barrier).rejects.toThrow('stopped');
    q.upsert(row('b')); // ignored once stopped
    expect(sink.committed).toEqual([]);
  });
});
