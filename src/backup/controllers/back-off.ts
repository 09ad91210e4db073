// Backing off, as every non-admin kind does it (OADP's convention): phase BackingOff, condition Accepted
// False with the reason and a message that says what to do, and a Warning Event (Normal for a wait).
import type { Condition } from '../../kube/conditions.ts';
import type { EventType } from '../../kube/events.ts';
import type { StatusWriter } from '../../kube/status.ts';

/** Why an object does not go on (now): a condition's reason and the message that says what to do. */
export interface Refusal {
  reason: string;
  message: string;
}

export interface BackOffEvent {
  /** What the controller was doing (the Event's action). */
  action: string;
  /** Warning by default; Normal for a wait that is nobody's mistake. */
  type?: EventType;
  /** Recorded on every pass, or only when the Accepted condition's reason or message changes (default). */
  always?: boolean;
}

type Acceptable = { phase?: string; conditions?: unknown[] };

/** Writes the back-off; `event` records one too. */
export async function backOff<S extends Acceptable>(
  status: StatusWriter<S>,
  refusal: Refusal,
  event?: BackOffEvent,
): Promise<undefined> {
  const base = status.current;
  const before = (base.conditions as Condition[] | undefined)?.find((c) => c.type === 'Accepted');
  const known = before?.reason === refusal.reason && before.message === refusal.message;
  const record = event && (event.always || !known);
  await status.write(
    {
      ...base,
      phase: 'BackingOff',
      conditions: status.condition(base, { type: 'Accepted', status: 'False', ...refusal }),
    },
    record ? { event: { type: event.type ?? 'Warning', action: event.action, ...refusal } } : {},
  );
  return undefined;
}
