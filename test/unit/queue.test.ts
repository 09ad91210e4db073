import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../src/kube/queue.ts';

describe('WorkQueue', () => {
  it('deduplicates keys that wait', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('a');
    q.add('b');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never hands a key to two workers; an add during processing is replayed after done', async () => {
    const q = new WorkQueue();
    q.add('a');
    const key = await q.get();
    q.add('a');
    expect(q.length).toBe(0);
    let second: string | undefined;
    void q.get().then((k) => {
      second = k;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(second).toBeUndefined();
    q.done(key!);
    await new Promise((r) => setTimeout(r, 0));
    expect(second).toBe('a');
  });

  it('backs off exponentially per key and forgets on success', () => {
    const q = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 50 });
    expect(q.addRateLimited('a')).toBe(10);
    expect(q.addRateLimited('a')).toBe(20);
    expect(q.addRateLimited('a')).toBe(40);
    expect(q.addRateLimited('a')).toBe(50);
    expect(q.addRateLimited('b')).toBe(10);
    q.forget('a');
    expect(q.addRateLimited('a')).toBe(10);
    q.shutdown();
  });

  it('keeps the earliest of several addAfter schedules', async () => {
    const q = new WorkQueue();
    q.addAfter('a', 500);
    q.addAfter('a', 20);
    q.addAfter('a', 1000);
    const started = Date.now();
    expect(await q.get()).toBe('a');
    expect(Date.now() - started).toBeLessThan(400);
    q.shutdown();
  });

  it('waits a delay longer than a Node timer holds (2^31-1 ms) instead of firing at once', async () => {
    const q = new WorkQueue();
    q.addAfter('yearly', 300 * 24 * 3600_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(q.length).toBe(0);
    // An earlier schedule for the same key still wins.
    q.addAfter('yearly', 10);
    expect(await q.get()).toBe('yearly');
    q.shutdown();
  });

  it('releases waiting workers on shutdown', async () => {
    const q = new WorkQueue();
    const waiting = q.get();
    q.shutdown();
    expect(await waiting).toBeUndefined();
    q.add('late');
    expect(q.length).toBe(0);
  });

  it('lets a throttled key through at once, then coalesces a burst into one add per interval', async () => {
    const q = new WorkQueue();
    const started = Date.now();
    q.addThrottled('org', 200);
    expect(q.length).toBe(1);
    expect(await q.get()).toBe('org');
    q.done('org');
    // Twenty events within the interval: none now, one when the interval ends.
    for (let i = 0; i < 20; i++) q.addThrottled('org', 200);
    expect(q.length).toBe(0);
    expect(q.isIdle()).toBe(false);
    expect(await q.get()).toBe('org');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    q.done('org');
    expect(q.isIdle()).toBe(true);
    // Another key is not held back by the first one's interval.
    q.addThrottled('other', 200);
    expect(q.length).toBe(1);
    // After a quiet interval the next event goes through at once again.
    await new Promise((r) => setTimeout(r, 420));
    q.addThrottled('org', 200);
    expect(q.length).toBe(2);
    q.shutdown();
  });
});
