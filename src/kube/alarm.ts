// A loop that sleeps between rounds of work and is woken early by events (a watch saw a change, someone
// asked for a round): a ring during a round is kept, so the next sleep returns at once, and a sleep never
// starts on an aborted signal. Shared by every such loop (certificate upkeep, garbage collection,
// discovery): a loop that checked its signal only before its work, not before its sleep, would sleep out
// its whole period after a stop that came during the work.
import { setTimeout as sleep } from 'node:timers/promises';

/** The longest delay a Node timer takes (about 24.8 days); longer sleeps end there. */
const longestTimerMs = 2 ** 31 - 1;

export class Alarm {
  private pending = false;
  private wake?: () => void;

  /** Wakes the sleeper now, or makes the next sleep return at once. */
  ring = (): void => {
    this.pending = true;
    this.wake?.();
  };

  /** Sleeps `ms`, or until a ring or the signal aborts; returns at once after a ring since the last sleep. */
  async sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return;
    }
    const stop = new AbortController();
    const abort = () => stop.abort();
    signal.addEventListener('abort', abort, { once: true });
    this.wake = abort;
    await sleep(Math.min(ms, longestTimerMs), undefined, { signal: stop.signal }).catch(() => {});
    this.wake = undefined;
    signal.removeEventListener('abort', abort);
    this.pending = false;
  }
}
