// What to do about one of Velero's volume operations that its node-agent took (phase Accepted) and has
// not started. Velero v1.18's node-agent, after accepting one, makes a data mover Pod named as the
// operation and starts the operation when it sees that Pod's update to Running. A node-agent that
// restarts in between never sees that update (any later change of the Pod is seen), or never made the
// Pod; the operation then waits for Velero's prepare timeout (30 minutes by default), and Velero's queue
// with it: every later backup or restore, anyone's (docs/faults.md, session 19).
//
// So, once the operation has been Accepted for the admin's `resumeStuckVolumeOperationsAfter`:
// - its Pod running that long: annotate the Pod (the change the node-agent waits for), again each period
//   while the operation stays Accepted (a node-agent down at that moment misses it too);
// - no Pod at all: cancel it, Velero's own way (spec.cancel): the node-agent ends it Canceled, and its
//   backup or restore ends with Velero's reason, which the tenant's object shows;
// - a Pod still starting (pulling its image, say), or one it does not own: wait. Velero itself cancels an
//   operation whose Pod cannot start.
//
// And once it is InProgress: a node-agent that restarts re-attaches to the running data mover Pod, but one
// whose Pod ended (Succeeded or Failed) while it was down waits for that Pod to run for its resource
// timeout (10 minutes), holding the queue, before it cancels the operation itself (bench:faults, session
// 24). So a Pod of an InProgress operation that has ended for the period (a node-agent that is up takes its
// end within seconds): cancel the operation, as Velero would 10 minutes later. Velero's end is a
// Canceled operation, reported as such; its Pod's own end is not taken as the operation's result.
// Pure: the reconciler reads, this decides.
import type { KubeObject } from '../../../kube/resources.ts';

/** Written on a data mover Pod to start its operation: when tenantkit last did. */
export const ResumedAtAnnotation = 'tenantkit.io/resumed-at';

export type VolumeOperation = KubeObject & {
  spec?: { cancel?: boolean };
  status?: { phase?: string; acceptedTimestamp?: string };
};

export type Pod = KubeObject & {
  status?: {
    phase?: string;
    startTime?: string;
    conditions?: { type: string; status: string; lastTransitionTime?: string }[];
    containerStatuses?: { state?: { terminated?: { finishedAt?: string } } }[];
  };
};

/**
 * What to do. A cancel says why: `unstarted`, Accepted and no data mover Pod; `ended`, InProgress and its
 * data mover Pod ended (`podPhase`) without the node-agent taking its end.
 */
export type Step =
  | { action: 'none' }
  | { action: 'wait'; ms: number }
  | { action: 'resume' }
  | { action: 'cancel'; stuck: 'unstarted' }
  | { action: 'cancel'; stuck: 'ended'; podPhase: string };

const instant = (time: string | undefined): number => (time ? Date.parse(time) : Number.NaN);

/** Whether `pod` is the one Velero made for `operation` (its controller owner, by uid). */
export const madeFor = (pod: Pod, operation: VolumeOperation): boolean =>
  (pod.metadata.ownerReferences ?? []).some((r) => r.uid === operation.metadata.uid && r.controller === true);

/** Since when `pod` runs: its Ready condition's last change when Ready, else its start. */
function runningSince(pod: Pod): number {
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
  const at = instant(ready?.lastTransitionTime ?? pod.status?.startTime);
  return Number.isNaN(at) ? Number.NEGATIVE_INFINITY : at;
}

/** Since when `pod` has ended: its containers' last finish, else its Ready condition's last change. */
function endedSince(pod: Pod): number {
  const finished = (pod.status?.containerStatuses ?? []).map((c) => instant(c.state?.terminated?.finishedAt));
  const known = finished.filter((t) => !Number.isNaN(t));
  if (known.length) return Math.max(...known);
  const at = instant(pod.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime);
  return Number.isNaN(at) ? Number.NEGATIVE_INFINITY : at;
}

const endedPhases = new Set(['Succeeded', 'Failed']);

/** Whether `operation` may need a step at all (no need to read its Pod otherwise). */
export const mayNeedStep = (operation: VolumeOperation): boolean =>
  ['Accepted', 'InProgress'].includes(operation.status?.phase ?? '') && operation.spec?.cancel !== true;

/** The next step for `operation`, its data mover Pod (undefined: none), at `now`, after `afterMs` (0: off). */
export function nextStep(
  operation: VolumeOperation,
  pod: Pod | undefined,
  now: number,
  afterMs: number,
): Step {
  if (afterMs <= 0 || operation.spec?.cancel === true) return { action: 'none' };
  const waitFrom = (since: number): Step => {
    const left = since + afterMs - now;
    return left > 0 ? { action: 'wait', ms: left } : { action: 'none' };
  };
  if (operation.status?.phase === 'InProgress') return inProgressStep(operation, pod, afterMs, waitFrom);
  if (operation.status?.phase !== 'Accepted') return { action: 'none' };
  if (pod && !pod.metadata.deletionTimestamp) {
    if (!madeFor(pod, operation) || pod.status?.phase !== 'Running') return { action: 'wait', ms: afterMs };
    const resumed = instant(pod.metadata.annotations?.[ResumedAtAnnotation]);
    const since = Math.max(runningSince(pod), Number.isNaN(resumed) ? Number.NEGATIVE_INFINITY : resumed);
    const step = waitFrom(since);
    return step.action === 'wait' ? step : { action: 'resume' };
  }
  if (pod) return { action: 'wait', ms: afterMs };
  const accepted = instant(operation.status?.acceptedTimestamp ?? operation.metadata.creationTimestamp);
  const step = waitFrom(Number.isNaN(accepted) ? now : accepted);
  return step.action === 'wait' ? step : { action: 'cancel', stuck: 'unstarted' };
}

/**
 * An InProgress operation: cancel once its own data mover Pod has ended for `afterMs`; while the Pod
 * runs, look again each period (nothing else says when it ends). No Pod, or one being deleted: Velero's
 * node-agent fails the operation itself.
 */
function inProgressStep(
  operation: VolumeOperation,
  pod: Pod | undefined,
  afterMs: number,
  waitFrom: (since: number) => Step,
): Step {
  if (!pod || pod.metadata.deletionTimestamp || !madeFor(pod, operation)) return { action: 'none' };
  const phase = pod.status?.phase ?? '';
  if (!endedPhases.has(phase)) return { action: 'wait', ms: afterMs };
  const step = waitFrom(endedSince(pod));
  return step.action === 'wait' ? step : { action: 'cancel', stuck: 'ended', podPhase: phase };
}
