// How many bytes of collectors' batches the indexer's endpoint holds at once, across every cluster: a
// batch is read, parsed and kept until it is applied, so without a bound a hub with many clusters holds
// every cluster's queue in memory at once. Past the bound a batch is refused with 429 (the collector
// waits and resends); one batch is always let in, however large, so that none waits forever.
import { searchMetrics } from '../metrics.ts';

export class ByteBudget {
  readonly max: number;
  private used = 0;
  private held = 0;

  constructor(max: number) {
    this.max = max;
  }

  /** Takes `bytes` when they fit (or nothing else is held); false when the caller must refuse. */
  take(bytes: number): boolean {
    if (this.held > 0 && this.used + bytes > this.max) return false;
    this.used += bytes;
    this.held++;
    searchMetrics.indexerBytesInFlight.set(this.used);
    return true;
  }

  release(bytes: number): void {
    this.used -= bytes;
    this.held--;
    searchMetrics.indexerBytesInFlight.set(this.used);
  }

  get inUse(): number {
    return this.used;
  }
}
