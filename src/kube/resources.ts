// Resource types the runtime talks to, and the shape every Kubernetes object shares.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

/** Identifies a REST resource: where it lives and what kind it serves. */
export interface ResourceType {
  group: string;
  version: string;
  /** Plural resource name, as in the URL. */
  plural: string;
  kind: string;
  namespaced: boolean;
  /**
   * For informers only: cache just the objects with these labels (a label selector string), e.g. the
   * objects a controller created, instead of every object of the type in the cluster.
   */
  labelSelector?: string;
  /** For informers only: cache just the objects this field selector matches (e.g. one by name). */
  fieldSelector?: string;
  /** For informers only: cache just this namespace (needs list/watch there only, not cluster-wide). */
  watchNamespace?: string;
  /**
   * For informers only: list and watch PartialObjectMetadata, so the cache holds metadata alone (for
   * readers that never look at spec or status).
   */
  metadataOnly?: boolean;
  /**
   * For informers only: what of each object the cache keeps (see {@link CacheView}). Informers with
   * different views of one type are different caches.
   */
  view?: CacheView;
}

/**
 * A reader's view of a type, applied as objects enter a cache. `keep` must decide from fields that never
 * change once an object exists (a RoleBinding's roleRef, say): an object it refuses is not cached and its
 * events are not seen. `project` keeps only the fields the reader uses (it must keep
 * `metadata.resourceVersion`, `name` and `namespace`).
 */
export interface CacheView {
  /** Names the view in the informer's key and metrics. */
  name: string;
  keep?: (object: KubeObject) => boolean;
  project?: (object: KubeObject) => KubeObject;
}

export function resourcePath(
  type: ResourceType,
  namespace?: string,
  name?: string,
  subresource?: string,
): string {
  let path = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  if (type.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${type.plural}`;
  if (name) path += `/${encodeURIComponent(name)}`;
  if (subresource) path += `/${subresource}`;
  return path;
}

/** The cache key of an object: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(meta: { namespace?: string | undefined; name?: string | undefined }): string {
  return meta.namespace ? `${meta.namespace}/${meta.name}` : (meta.name ?? '');
}

export function parseKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

const core = (plural: string, kind: string, namespaced = true): ResourceType => ({
  group: '',
  version: 'v1',
  plural,
  kind,
  namespaced,
});
/** A resource type by its parts (`namespaced` defaults to true). */
export const resourceType = (
  group: string,
  version: string,
  plural: string,
  kind: string,
  namespaced = true,
): ResourceType => ({
  group,
  version,
  plural,
  kind,
  namespaced,
});

export const Resources = {
  namespaces: core('namespaces', 'Namespace', false),
  configMaps: core('configmaps', 'ConfigMap'),
  secrets: core('secrets', 'Secret'),
  serviceAccounts: core('serviceaccounts', 'ServiceAccount'),
  pods: core('pods', 'Pod'),
  nodes: core('nodes', 'Node', false),
  services: core('services', 'Service'),
  deployments: resourceType('apps', 'v1', 'deployments', 'Deployment'),
  replicaSets: resourceType('apps', 'v1', 'replicasets', 'ReplicaSet'),
  statefulSets: resourceType('apps', 'v1', 'statefulsets', 'StatefulSet'),
  daemonSets: resourceType('apps', 'v1', 'daemonsets', 'DaemonSet'),
  podDisruptionBudgets: resourceType('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget'),
  networkPolicies: resourceType('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy'),
  ingresses: resourceType('networking.k8s.io', 'v1', 'ingresses', 'Ingress'),
  ingressClasses: resourceType('networking.k8s.io', 'v1', 'ingressclasses', 'IngressClass', false),
  priorityClasses: resourceType('scheduling.k8s.io', 'v1', 'priorityclasses', 'PriorityClass', false),
  runtimeClasses: resourceType('node.k8s.io', 'v1', 'runtimeclasses', 'RuntimeClass', false),
  apiServices: resourceType('apiregistration.k8s.io', 'v1', 'apiservices', 'APIService', false),
  storageClasses: resourceType('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false),
  persistentVolumeClaims: core('persistentvolumeclaims', 'PersistentVolumeClaim'),
  persistentVolumes: core('persistentvolumes', 'PersistentVolume', false),
  resourceQuotas: core('resourcequotas', 'ResourceQuota'),
  limitRanges: core('limitranges', 'LimitRange'),
  coreEvents: core('events', 'Event'),
  events: resourceType('events.k8s.io', 'v1', 'events', 'Event'),
  leases: resourceType('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  roles: resourceType('rbac.authorization.k8s.io', 'v1', 'roles', 'Role'),
  roleBindings: resourceType('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding'),
  clusterRoles: resourceType('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  clusterRoleBindings: resourceType(
    'rbac.authorization.k8s.io',
    'v1',
    'clusterrolebindings',
    'ClusterRoleBinding',
    false,
  ),
  customResourceDefinitions: resourceType(
    'apiextensions.k8s.io',
    'v1',
    'customresourcedefinitions',
    'CustomResourceDefinition',
    false,
  ),
  validatingWebhookConfigurations: resourceType(
    'admissionregistration.k8s.io',
    'v1',
    'validatingwebhookconfigurations',
    'ValidatingWebhookConfiguration',
    false,
  ),
  mutatingWebhookConfigurations: resourceType(
    'admissionregistration.k8s.io',
    'v1',
    'mutatingwebhookconfigurations',
    'MutatingWebhookConfiguration',
    false,
  ),
  subjectAccessReviews: resourceType(
    'authorization.k8s.io',
    'v1',
    'subjectaccessreviews',
    'SubjectAccessReview',
    false,
  ),
  selfSubjectAccessReviews: resourceType(
    'authorization.k8s.io',
    'v1',
    'selfsubjectaccessreviews',
    'SelfSubjectAccessReview',
    false,
  ),
  tokenReviews: resourceType('authentication.k8s.io', 'v1', 'tokenreviews', 'TokenReview', false),
} satisfies Record<string, ResourceType>;
