// Admission of Velero hook annotations on Pods and on the Pod templates of workloads (policy/pod-hooks.ts
// says why): refused outside the namespaces the admin lists, whoever writes them, since a workload
// controller makes the Pods a tenant's Deployment asks for. Refusing the template too tells the tenant at
// `kubectl apply`, not in a ReplicaSet's FailedCreate Event.
import type { NonAdminBackupConfig } from '../../crds/backup.ts';
import type { Informer } from '../../kube/informer.ts';
import type { KubeObject } from '../../kube/resources.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../../webhook/admission.ts';
import type { RuleWithOperations } from '../../webhook/registration.ts';
import { currentPolicy } from '../policy/config.ts';
import { addedHookKeys, hookKeysAt, podHookRefusal } from '../policy/pod-hooks.ts';

/** Where each kind keeps the annotations of the Pods it makes, and what the refusal calls it. */
const shapes: Record<string, { path: readonly string[]; what: string }> = {
  pods: { path: ['metadata', 'annotations'], what: 'a Pod' },
  podtemplates: { path: ['template', 'metadata', 'annotations'], what: "a PodTemplate's template" },
  cronjobs: {
    path: ['spec', 'jobTemplate', 'spec', 'template', 'metadata', 'annotations'],
    what: "a CronJob's Pod template (spec.jobTemplate.spec.template)",
  },
};
const templated = {
  path: ['spec', 'template', 'metadata', 'annotations'],
  what: 'Pod template (spec.template)',
};

const writes = ['CREATE', 'UPDATE'] as RuleWithOperations['operations'];

export const podHookRules: RuleWithOperations[] = [
  {
    operations: writes,
    apiGroups: [''],
    apiVersions: ['v1'],
    resources: ['pods', 'podtemplates', 'replicationcontrollers'],
  },
  {
    operations: writes,
    apiGroups: ['apps'],
    apiVersions: ['v1'],
    resources: ['deployments', 'replicasets', 'statefulsets', 'daemonsets'],
  },
  { operations: writes, apiGroups: ['batch'], apiVersions: ['v1'], resources: ['jobs', 'cronjobs'] },
];

/** The webhook is called only for objects with a hook key in one of the shapes (an outage stops no other write). */
export const carriesHookKeys = {
  name: 'carries-velero-hook-annotations',
  expression: [...new Set([...Object.values(shapes), templated].map((s) => hookKeysAt(s.path)))].join(' || '),
};

function annotationsAt(object: KubeObject | undefined, path: readonly string[]) {
  let at: unknown = object;
  for (const step of path) at = (at as Record<string, unknown> | undefined)?.[step];
  return at && typeof at === 'object' ? (at as Record<string, string>) : undefined;
}

export function reviewPodHooks(configs: Informer<NonAdminBackupConfig>, request: AdmissionRequest): Verdict {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allow();
  if (request.subResource) return allow();
  const namespace = request.namespace ?? '';
  const policy = currentPolicy(configs);
  if (namespace === policy.veleroNamespace || policy.podHookNamespaces.includes(namespace)) return allow();
  // An own-key lookup: the request names the resource, and `__proto__` or `constructor` is on every object.
  const resource = request.resource.resource;
  const shape = (Object.hasOwn(shapes, resource) ? shapes[resource] : undefined) ?? {
    ...templated,
    what: `a ${request.kind.kind}'s ${templated.what}`,
  };
  const keys = addedHookKeys(
    annotationsAt(request.object, shape.path),
    request.operation === 'UPDATE' ? annotationsAt(request.oldObject, shape.path) : undefined,
  );
  return keys.length === 0 ? allow() : deny(podHookRefusal(shape.what, keys, namespace), 403, 'Forbidden');
}
