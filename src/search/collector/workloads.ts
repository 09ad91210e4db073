// Workload controllers, with ACM's property names: replica counts (`desired`, `current`, `ready`,
// `available`, `updated`), job progress (`completions`, `parallelism`, `successful`) and cron schedules
// (`schedule`, `suspend`, `active`, `lastSchedule`). Their pod templates `uses` the config maps,
// secrets and claims the pods will attach, so a workload is related to them before any pod exists.

import type { Derived, KindTransform } from './derived.ts';
import { asArray, asBoolean, asName, asNumber, at, type JsonObject } from './json.ts';
import { podSpecReferences } from './pod-spec.ts';

const count = (object: JsonObject, ...path: string[]) => asNumber(at(object, ...path)) ?? 0;

function templateUses(object: JsonObject, namespace: string | undefined, ...templatePath: string[]) {
  return namespace ? podSpecReferences(at(object, ...templatePath, 'spec'), namespace, 'uses') : [];
}

/** desired/current/ready/available(/updated) of a controller with `spec.replicas` and replica status. */
function replicated(updated: boolean): KindTransform {
  return (o, ns) => ({
    properties: {
      desired: asNumber(at(o, 'spec', 'replicas')) ?? 1,
      current: count(o, 'status', 'replicas'),
      ready: count(o, 'status', 'readyReplicas'),
      available: count(o, 'status', 'availableReplicas'),
      ...(updated ? { updated: count(o, 'status', 'updatedReplicas') } : {}),
    },
    edges: templateUses(o, ns, 'spec', 'template'),
  });
}

export const deployment = replicated(true);
export const replicaSet = replicated(false);
export const statefulSet = replicated(true);

export const daemonSet: KindTransform = (o, ns) => ({
  properties: {
    desired: count(o, 'status', 'desiredNumberScheduled'),
    current: count(o, 'status', 'currentNumberScheduled'),
    ready: count(o, 'status', 'numberReady'),
    available: count(o, 'status', 'numberAvailable'),
    updated: count(o, 'status', 'updatedNumberScheduled'),
  },
  edges: templateUses(o, ns, 'spec', 'template'),
});

export const job: KindTransform = (o, ns) => ({
  properties: {
    completions: count(o, 'spec', 'completions'),
    parallelism: count(o, 'spec', 'parallelism'),
    successful: count(o, 'status', 'succeeded'),
  },
  edges: templateUses(o, ns, 'spec', 'template'),
});

export const cronJob: KindTransform = (o, ns) => {
  const properties: Derived['properties'] = {
    schedule: asName(at(o, 'spec', 'schedule')) ?? '',
    suspend: asBoolean(at(o, 'spec', 'suspend')) ?? false,
    active: asArray(at(o, 'status', 'active')).length,
  };
  const last = asName(at(o, 'status', 'lastScheduleTime'));
  if (last) properties.lastSchedule = last;
  return { properties, edges: templateUses(o, ns, 'spec', 'jobTemplate', 'spec', 'template') };
};
