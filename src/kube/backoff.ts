// How long to wait before trying a connection again that keeps failing (a watch, a list): the delay
// doubles from `baseMs` up to `capMs` with each failure in a row, and starts over once the connection
// worked again. "Worked" means it opened, not that it ended cleanly: a watch that served for minutes and
// then broke (its API server restarted) is a first failure, not the tenth in a row, or every restart
// would keep a watcher away longer than the last.
export interface BackoffOptions {
  baseMs: number;
  capMs: number;
  /** Spread, as a fraction of the delay (0.2: 80% to 120%), so that many watchers do not retry at once. */
  jitter?: number;
}

export class RetryBackoff {
  private failures = 0;
  private readonly options: BackoffOptions;

  constructor(options: BackoffOptions) {
    this.options = options;
  }

  /** The connection worked: the next failure waits the shortest delay again. */
  reset(): void {
    this.failures = 0;
  }

  /** One more failure in a row: how long to wait before the next try, in ms. */
  next(): number {
    this.failures++;
    const { baseMs, capMs, jitter = 0 } = this.options;
    const delay = Math.min(capMs, baseMs * 2 ** Math.min(this.failures - 1, 20));
    return jitter ? delay * (1 - jitter + Math.random() * 2 * jitter) : delay;
  }
}
