// A Pod's properties, as ACM's collector names them: `status` (the STATUS column of `kubectl get pods`),
// `restarts`, `hostIP`, `podIP`, `startedAt`, `container`, `image`, `condition`; and its relationships:
// `runsOn` its node, `attachedTo` the config maps, secrets and claims it uses.
import type { EdgeRef } from '../model.ts';
import type { Derived } from './derived.ts';
import { asArray, asBoolean, asName, asNumber, asObject, asString, at, type JsonObject } from './json.ts';
import { podSpecReferences } from './pod-spec.ts';

interface ContainerStatus {
  name: string;
  ready: boolean;
  started?: boolean;
  restarts: number;
  waiting?: string;
  running: boolean;
  terminated?: { reason: string; exitCode: number; signal: number };
}

function containerStatus(value: unknown): ContainerStatus {
  const state = at(value, 'state');
  const terminated = asObject(at(state, 'terminated'));
  const started = asBoolean(at(value, 'started'));
  return {
    name: asString(at(value, 'name')) ?? '',
    ready: asBoolean(at(value, 'ready')) ?? false,
    ...(started === undefined ? {} : { started }),
    restarts: asNumber(at(value, 'restartCount')) ?? 0,
    ...(at(state, 'waiting') === undefined
      ? {}
      : { waiting: asString(at(state, 'waiting', 'reason')) ?? '' }),
    running: at(state, 'running') !== undefined,
    ...(terminated
      ? {
          terminated: {
            reason: asString(terminated.reason) ?? '',
            exitCode: asNumber(terminated.exitCode) ?? 0,
            signal: asNumber(terminated.signal) ?? 0,
          },
        }
      : {}),
  };
}

/**
 * The pod's status and restart count exactly as `kubectl get pods` prints them (kubectl's printPod):
 * the phase, refined by the pod's reason, scheduling gates, init containers (`Init:1/2`,
 * `Init:CrashLoopBackOff`), container states (`CrashLoopBackOff`, `Completed`, `ExitCode:1`), sidecars,
 * readiness (`NotReady`) and deletion (`Terminating`, `Unknown`).
 */
export function podStatus(pod: JsonObject): { status: string; restarts: number } {
  const status = at(pod, 'status');
  const phase = asString(at(status, 'phase')) ?? '';
  let reason = asName(at(status, 'reason')) ?? phase;
  const conditions = asArray(at(status, 'conditions'));
  const condition = (type: string) => conditions.find((c) => at(c, 'type') === type);
  if (at(condition('PodScheduled'), 'reason') === 'SchedulingGated') reason = 'SchedulingGated';

  // Init containers with restartPolicy Always are sidecars: they keep running next to the app.
  const initSpecs = asArray(at(pod, 'spec', 'initContainers'));
  const sidecars = new Set(
    initSpecs.filter((c) => at(c, 'restartPolicy') === 'Always').map((c) => asString(at(c, 'name')) ?? ''),
  );

  let restarts = 0;
  let sidecarRestarts = 0;
  let initializing = false;
  const initStatuses = asArray(at(status, 'initContainerStatuses')).map(containerStatus);
  for (const [i, c] of initStatuses.entries()) {
    restarts += c.restarts;
    if (sidecars.has(c.name)) sidecarRestarts += c.restarts;
    if (c.terminated && c.terminated.exitCode === 0) continue;
    if (sidecars.has(c.name) && c.started) continue;
    if (c.terminated) {
      reason = c.terminated.reason
        ? `Init:${c.terminated.reason}`
        : c.terminated.signal !== 0
          ? `Init:Signal:${c.terminated.signal}`
          : `Init:ExitCode:${c.terminated.exitCode}`;
    } else if (c.waiting && c.waiting !== 'PodInitializing') {
      reason = `Init:${c.waiting}`;
    } else {
      reason = `Init:${i}/${initSpecs.length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || at(condition('Initialized'), 'status') === 'True') {
    restarts = sidecarRestarts;
    let hasRunning = false;
    const statuses = asArray(at(status, 'containerStatuses')).map(containerStatus);
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i]!;
      restarts += c.restarts;
      if (c.waiting) reason = c.waiting;
      else if (c.terminated?.reason) reason = c.terminated.reason;
      else if (c.terminated) {
        reason =
          c.terminated.signal !== 0 ? `Signal:${c.terminated.signal}` : `ExitCode:${c.terminated.exitCode}`;
      } else if (c.ready && c.running) hasRunning = true;
    }
    // A container that completed while another still runs: the pod is running (or not ready yet).
    if (reason === 'Completed' && hasRunning) {
      reason = at(condition('Ready'), 'status') === 'True' ? 'Running' : 'NotReady';
    }
  }

  const deleting = at(pod, 'metadata', 'deletionTimestamp') !== undefined;
  if (deleting && asString(at(status, 'reason')) === 'NodeLost') reason = 'Unknown';
  else if (deleting && phase !== 'Succeeded' && phase !== 'Failed') reason = 'Terminating';
  return { status: reason, restarts };
}

export function pod(object: JsonObject, namespace: string | undefined): Derived {
  const { status, restarts } = podStatus(object);
  const containers = asArray(at(object, 'spec', 'containers'));
  const properties: Derived['properties'] = {
    status,
    restarts,
    container: containers.map((c) => asString(at(c, 'name')) ?? ''),
    image: containers.map((c) => asString(at(c, 'image')) ?? ''),
  };
  const hostIP = asName(at(object, 'status', 'hostIP'));
  if (hostIP) properties.hostIP = hostIP;
  const podIP = asName(at(object, 'status', 'podIP'));
  if (podIP) properties.podIP = podIP;
  const startedAt = asName(at(object, 'status', 'startTime'));
  if (startedAt) properties.startedAt = startedAt;
  const condition: Record<string, string> = {};
  for (const c of asArray(at(object, 'status', 'conditions'))) {
    const type = asName(at(c, 'type'));
    const value = asString(at(c, 'status'));
    if (type && value !== undefined) condition[type] = value;
  }
  if (Object.keys(condition).length > 0) properties.condition = condition;

  const edges: EdgeRef[] = [];
  const node = asName(at(object, 'spec', 'nodeName'));
  if (node) edges.push({ type: 'runsOn', kind: 'Node', name: node });
  const name = asName(at(object, 'metadata', 'name'));
  if (namespace) edges.push(...podSpecReferences(at(object, 'spec'), namespace, 'attachedTo', name));
  return { properties, edges };
}
