// Waiting on an AbortSignal that may already have fired.
import { describe, expect, it } from 'vitest';
import { untilAborted } from '../../src/kube/abort.ts';

describe('untilAborted', () => {
  it('resolves at once for a signal aborted before the wait, and on abort otherwise', async () => {
    const early = new AbortController();
    early.abort();
    // The 'abort' event has fired already: a plain listener would wait forever.
    await expect(
      Promise.race([untilAborted(early.signal), new Promise((r) => setTimeout(r, 50, 'hung'))]),
    ).resolves.toBeUndefined();
    const later = new AbortController();
    let done = false;
    const waiting = untilAborted(later.signal).then(() => {
      done = true;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(done).toBe(false);
    later.abort();
    await waiting;
    expect(done).toBe(true);
  });
});
