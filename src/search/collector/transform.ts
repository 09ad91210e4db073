// One Kubernetes object becomes one index row: the common properties every object has (ACM's names),
// the properties and relationships of its kind, and `ownedBy` edges from its ownerReferences.
//
// What is never indexed: a Secret's data (deleted before anything reads the object), any field an admin
// lists as sensitive (removed the same way), `kubectl.kubernetes.io/last-applied-configuration` (which
// holds a whole copy of the object, a Secret's data included) and, as ACM does, annotation values longer
// than 64 characters. Kinds without a transform contribute their metadata only: no spec field is copied.
import type { KubeObject, ResourceType } from '../../kube/resources.ts';
import type { EdgeRef, IndexedResource, ResourceData } from '../model.ts';
import { namespace, node, secret } from './core-kinds.ts';
import type { KindTransform } from './derived.ts';
import { asArray, asName, asStringMap, at, type JsonObject } from './json.ts';
import { ingress, service } from './network.ts';
import { pod } from './pod.ts';
import { fieldsFor, removeFields, type SensitiveField } from './sensitive.ts';
import { persistentVolume, persistentVolumeClaim } from './storage.ts';
import { cronJob, daemonSet, deployment, job, replicaSet, statefulSet } from './workloads.ts';

export interface TransformContext {
  cluster: string;
  /** The hub's own collector: rows carry `_hubClusterResource: true`. */
  hub: boolean;
  sensitiveFields: SensitiveField[];
}

/** Kind transforms by `<group>/<Kind>` ('' group for core). */
const kinds = new Map<string, KindTransform>([
  ['/Pod', pod],
  ['/Service', service],
  ['/Node', node],
  ['/Namespace', namespace],
  ['/Secret', secret],
  ['/PersistentVolume', persistentVolume],
  ['/PersistentVolumeClaim', persistentVolumeClaim],
  ['apps/Deployment', deployment],
  ['apps/ReplicaSet', replicaSet],
  ['apps/StatefulSet', statefulSet],
  ['apps/DaemonSet', daemonSet],
  ['batch/Job', job],
  ['batch/CronJob', cronJob],
  ['networking.k8s.io/Ingress', ingress],
]);

/**
 * Whether the transform reads more than metadata for this type. Other types are listed and watched as
 * PartialObjectMetadata: their spec and status never even reach the collector.
 */
export function needsFullObject(type: Pick<ResourceType, 'group' | 'kind'>): boolean {
  return kinds.has(`${type.group}/${type.kind}`);
}

const lastApplied = 'kubectl.kubernetes.io/last-applied-configuration';
/** Annotations that hold credentials in clear text (OpenShift's legacy service-account token secrets). */
const secretAnnotations = new Set(['openshift.io/token-secret.value']);
const maxAnnotationLength = 64;

function annotations(object: JsonObject, isSecret: boolean): Record<string, string> | undefined {
  const all = asStringMap(at(object, 'metadata', 'annotations'));
  if (!all) return undefined;
  const kept: Record<string, string> = {};
  for (const [key, value] of Object.entries(all)) {
    if (key === lastApplied || value.length > maxAnnotationLength) continue;
    if (isSecret && secretAnnotations.has(key)) continue;
    kept[key] = value;
  }
  return Object.keys(kept).length > 0 ? kept : undefined;
}

/** `<cluster>/<uid>`, the index's uid of a Kubernetes object. */
export const indexUid = (cluster: string, uid: string) => `${cluster}/${uid}`;

/**
 * The index row of `object` (of `type`, from discovery), or undefined when it has no uid or name.
 * `object` is consumed: sensitive fields are deleted from it in place.
 */
export function toIndexed(
  object: KubeObject,
  type: ResourceType,
  ctx: TransformContext,
): IndexedResource | undefined {
  const o = object as unknown as JsonObject;
  const uid = asName(at(o, 'metadata', 'uid'));
  const name = asName(at(o, 'metadata', 'name'));
  if (!uid || !name) return undefined;
  const ns = type.namespaced ? asName(at(o, 'metadata', 'namespace')) : undefined;
  const isSecret = type.group === '' && type.kind === 'Secret';
  if (isSecret) {
    delete o.data;
    delete o.stringData;
  }
  removeFields(o, fieldsFor(ctx.sensitiveFields, type.group, type.kind));

  const data: ResourceData = { kind: type.kind, kind_plural: type.plural, apiversion: type.version, name };
  if (type.group) data.apigroup = type.group;
  if (ns) data.namespace = ns;
  const created = asName(at(o, 'metadata', 'creationTimestamp'));
  if (created) data.created = created;
  const label = asStringMap(at(o, 'metadata', 'labels'));
  if (label && Object.keys(label).length > 0) data.label = label;
  const annotation = annotations(o, isSecret);
  if (annotation) data.annotation = annotation;
  if (ctx.hub) data._hubClusterResource = true;

  const edges: EdgeRef[] = [];
  const derived = kinds.get(`${type.group}/${type.kind}`)?.(o, ns);
  if (derived) {
    // The common properties win: a kind transform cannot rename or hide the object.
    for (const [key, value] of Object.entries(derived.properties)) if (!(key in data)) data[key] = value;
    edges.push(...derived.edges);
  }
  // Every owner, not only the controller: the garbage collector treats them all as owners.
  const owners = new Set<string>();
  for (const ref of asArray(at(o, 'metadata', 'ownerReferences'))) {
    const ownerUid = asName(at(ref, 'uid'));
    if (ownerUid && ownerUid !== uid && !owners.has(ownerUid)) {
      owners.add(ownerUid);
      edges.push({ type: 'ownedBy', uid: indexUid(ctx.cluster, ownerUid) });
    }
  }
  return { uid: indexUid(ctx.cluster, uid), data, edges };
}
