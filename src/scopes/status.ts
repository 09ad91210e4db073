// Status writes only when something a reader would notice changed, so an idle resync writes nothing.
import { stableJson } from '../kube/equality.ts';

const ignored = new Set(['lastTransitionTime']);

export function statusChanged(current: unknown, next: unknown): boolean {
  return stableJson(current ?? {}, ignored) !== stableJson(next, ignored);
}
