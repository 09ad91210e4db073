// Status conditions in the Kubernetes convention (metav1.Condition): one entry per type, with
// lastTransitionTime moving only when the status flips and observedGeneration naming the spec it judged.

import { timestamp } from './time.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/** Returns a new condition list with `input` set; other types are kept as they are. */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  input: ConditionInput,
  now = new Date(),
): Condition[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === input.type);
  const previous = index >= 0 ? list[index] : undefined;
  const next: Condition = {
    ...input,
    lastTransitionTime:
      previous && previous.status === input.status ? previous.lastTransitionTime : timestamp(now),
  };
  if (index >= 0) list[index] = next;
  else list.push(next);
  return list;
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}
