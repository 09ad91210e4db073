import { describe, expect, it } from 'vitest';
import { backupQueuePhases, changedFields, QueueTracker } from '../../src/backup/controllers/queue.ts';
import { CreatedAtAnnotation } from '../../src/backup/model.ts';
import type { KubeObject } from '../../src/kube/resources.ts';

const backup = (name: string, created: string, phase?: string, namespace = 'velero') =>
  ({
    metadata: { name, namespace, creationTimestamp: created, annotations: { origin: `tenant/${name}` } },
    ...(phase === undefined ? {} : { status: { phase } }),
  }) as KubeObject;

function tracker() {
  return new QueueTracker({
    queuePhases: backupQueuePhases,
    originOf: (o) => o.metadata.annotations?.origin,
  });
}

const t = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, '0')}Z`;

describe('QueueTracker', () => {
  it('counts unfinished backups created earlier, anyone’s, and 0 once running or finished', () => {
    const q = tracker();
    q.upsert(backup('a', t(1), 'Completed'));
    q.upsert(backup('b', t(2), 'InProgress'));
    q.upsert(backup('c', t(3), 'Queued'));
    q.upsert({ metadata: { name: 'admin', namespace: 'velero', creationTimestamp: t(4) } } as KubeObject);
    q.upsert(backup('d', t(5), 'New'));
    expect(q.position('velero', 'a')).toBe(0);
    expect(q.position('velero', 'b')).toBe(0);
    expect(q.position('velero', 'c')).toBe(1);
    expect(q.position('velero', 'd')).toBe(3);
    expect(q.position('velero', 'unknown')).toBe(0);
    expect(q.has('velero', 'a')).toBe(true);
    expect(q.has('velero', 'unknown')).toBe(false);
    expect(q.length('velero')).toBe(4);
  });

  it('reports only the tenant objects whose position changed', () => {
    const q = tracker();
    for (let i = 0; i < 5; i++) q.upsert(backup(`b${i}`, t(i), i === 0 ? 'InProgress' : 'Queued'));
    q.drain();
    // A phase change that keeps it in the queue moves nobody else.
    q.upsert(backup('b1', t(1), 'Queued'));
    expect(q.drain()).toEqual(['tenant/b1']);
    // The running one finishes: everyone behind it moves up by one.
    q.upsert(backup('b0', t(0), 'Completed'));
    expect(q.drain().sort()).toEqual(['tenant/b0', 'tenant/b1', 'tenant/b2', 'tenant/b3', 'tenant/b4']);
    expect([1, 2, 3, 4].map((i) => q.position('velero', `b${i}`))).toEqual([0, 1, 2, 3]);
    // One in the middle is deleted: only those after it.
    q.remove(backup('b2', t(2), 'Queued'));
    expect(q.drain().sort()).toEqual(['tenant/b2', 'tenant/b3', 'tenant/b4']);
    expect(q.position('velero', 'b4')).toBe(2);
    // A new one at the end moves nobody else.
    q.upsert(backup('b9', t(9)));
    expect(q.drain()).toEqual(['tenant/b9']);
    expect(q.position('velero', 'b9')).toBe(3);
    expect(q.drain()).toEqual([]);
  });

  it('orders same-second creations by name whatever order they are seen in, and namespaces apart', () => {
    const q = tracker();
    q.upsert(backup('z', t(1), 'Queued'));
    q.upsert(backup('a', t(1), 'Queued'));
    q.upsert(backup('m', t(0), 'Queued', 'other'));
    expect(q.position('velero', 'a')).toBe(0);
    expect(q.position('velero', 'z')).toBe(1);
    expect(q.position('other', 'm')).toBe(0);
    // A restart sees them in another order: the positions stay.
    const again = tracker();
    again.upsert(backup('a', t(1), 'Queued'));
    again.upsert(backup('z', t(1), 'Queued'));
    expect(again.position('velero', 'z')).toBe(1);
  });

  it('takes a backup being deleted out of the queue', () => {
    const q = tracker();
    q.upsert(backup('a', t(1), 'Queued'));
    q.upsert(backup('b', t(2), 'Queued'));
    const deleting = backup('a', t(1), 'Queued');
    deleting.metadata.deletionTimestamp = t(3);
    q.upsert(deleting);
    expect(q.position('velero', 'b')).toBe(0);
  });

  it('keeps 1,000 positions current cheaply when the head finishes', () => {
    const q = tracker();
    for (let i = 0; i < 1000; i++) q.upsert(backup(`b${String(i).padStart(4, '0')}`, t(0), 'Queued'));
    q.drain();
    q.upsert(backup('b0000', t(0), 'Completed'));
    expect(q.drain()).toHaveLength(1000);
    expect(q.position('velero', 'b0999')).toBe(998);
  });

  it("orders same-second creations by tenantkit's millisecond time, whatever order they are seen in", () => {
    const q = tracker();
    const at = (name: string, ms: string) => {
      const b = backup(name, t(1), 'Queued');
      b.metadata.annotations = { ...b.metadata.annotations, [CreatedAtAnnotation]: ms };
      return b;
    };
    q.upsert(at('late', '2026-01-01T00:00:01.900Z'));
    q.upsert(at('early', '2026-01-01T00:00:01.100Z'));
    expect(q.position('velero', 'early')).toBe(0);
    expect(q.position('velero', 'late')).toBe(1);
  });
});

describe('changedFields', () => {
  it('keeps only the top-level fields that differ, removed ones as null', () => {
    const previous = { phase: 'Created', queueInfo: { estimatedQueuePosition: 3 }, gone: 'x' };
    const next = { phase: 'Created', queueInfo: { estimatedQueuePosition: 2 } };
    expect(changedFields(next, previous)).toEqual({ queueInfo: { estimatedQueuePosition: 2 }, gone: null });
  });
});
