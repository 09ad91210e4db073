// A work queue with the guarantees controllers rely on (the client-go shape):
// - a key is queued at most once, however often it is added (dedup);
// - a key is never handed to two workers at once; adds during processing are replayed after `done`;
// - failures back off exponentially per key; `addAfter` schedules a key, keeping the earliest time;
// - `addThrottled` lets a key through at most once per interval: the first event at once, a burst's
//   later events together at the interval's end.

/** The longest delay Node's timers keep (2^31-1 ms); longer ones fire at once. */
const maxTimerMs = 2_147_483_647;

export interface QueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  onDepthChange?: (depth: number) => void;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  /** When each throttled key was last let through (or is scheduled to be). */
  private readonly released = new Map<string, number>();
  private lastPrune = 0;
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly onDepthChange: (depth: number) => void;

  constructor(options: QueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 5;
    this.maxDelayMs = options.maxDelayMs ?? 300_000;
    this.onDepthChange = options.onDepthChange ?? (() => {});
  }

  get length(): number {
    return this.queue.length;
  }

  /** Nothing queued, nothing in flight, nothing scheduled. */
  isIdle(): boolean {
    return this.queue.length === 0 && this.processing.size === 0 && this.timers.size === 0;
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.queue.push(key);
    this.onDepthChange(this.queue.length);
  }

  /** Adds the key after `delayMs`; an earlier pending schedule for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + delayMs;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    this.arm(key, at);
  }

  /**
   * A timer that adds the key at `at`. Node runs a timer of more than 2^31-1 ms (about 24.8 days) after
   * 1 ms instead, so a longer wait (a yearly schedule's next run, say) goes in steps of at most that.
   */
  private arm(key: string, at: number): void {
    const timer = setTimeout(
      () => {
        if (Date.now() < at) {
          this.arm(key, at);
          return;
        }
        this.timers.delete(key);
        this.add(key);
      },
      Math.min(Math.max(0, at - Date.now()), maxTimerMs),
    );
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /**
   * Adds the key now unless it was let through this way less than `intervalMs` ago; then it is added
   * once that interval ends, together with every other add meanwhile. A reconcile that runs later sees
   * the state of then, so nothing is lost: a burst of N events costs at most one reconcile per interval.
   */
  addThrottled(key: string, intervalMs: number): void {
    if (this.shuttingDown) return;
    const now = Date.now();
    const last = this.released.get(key);
    this.prune(now, intervalMs);
    // A release already scheduled for later covers this event too.
    if (last !== undefined && last > now && this.timers.has(key)) return;
    const next = last === undefined ? now : Math.max(now, last + intervalMs);
    this.released.set(key, next);
    this.addAfter(key, next - now);
  }

  /** Forgets throttle times that can no longer delay anything (keys of deleted objects, say). */
  private prune(now: number, intervalMs: number): void {
    if (now - this.lastPrune < 10 * intervalMs) return;
    this.lastPrune = now;
    for (const [key, at] of this.released) if (at + intervalMs <= now) this.released.delete(key);
  }

  /** Re-adds the key after its exponential backoff delay; returns the delay used. */
  addRateLimited(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** n);
    this.addAfter(key, delay);
    return delay;
  }

  /** Clears the key's failure history (call after a success). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Waits for the next key; resolves undefined once the queue shuts down. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      this.onDepthChange(this.queue.length);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks the key processed; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  shutdown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }
}
