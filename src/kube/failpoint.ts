// Test-only fault injection, off unless its variable is set: a pause at a named point of a controller, so
// that a fault suite can kill the process exactly there (bench:faults sets it on the bench's controllers
// for the fault that needs it). Nothing in a default installation sets these variables.
import { setTimeout as sleep } from 'node:timers/promises';

/** The variable that sets the pause at `point`, in milliseconds: TENANTKIT_FAILPOINT_<point>_MS. */
export const failpointVariable = (point: string) => `TENANTKIT_FAILPOINT_${point}_MS`;

/** Waits as long as the failpoint's variable says (a whole number of ms); at once when it is unset. */
export async function failpoint(point: string): Promise<void> {
  const ms = Number.parseInt(process.env[failpointVariable(point)] ?? '', 10);
  if (ms > 0) await sleep(ms);
}
