// Projects (project.openshift.io/v1, as OpenShift serves them): a caller's namespaces in the shape that
// `kubectl get projects`, `oc projects` and tools that speak Projects read. A Project is a view of one
// namespace; a caller sees the namespaces RBAC lets them list Namespace objects in (what the `view`,
// `edit` and `admin` roles bound in a namespace give), answered from the same local access sets the search
// API uses, never from an API call per request. The rules here are pure; server.ts serves them.
import type { KubeObject } from '../../kube/resources.ts';
import type { AccessSet, ResourceGrant } from '../model.ts';
import { shortAge } from '../text/table.ts';

export const ProjectGroup = 'project.openshift.io';
export const ProjectVersion = 'v1';
export const ProjectGroupVersion = `${ProjectGroup}/${ProjectVersion}`;
/** OpenShift's annotation for a project's display name (kept where a namespace has it). */
export const DisplayNameAnnotation = 'openshift.io/display-name';

export interface Namespace extends KubeObject {
  spec?: { finalizers?: string[] };
  status?: { phase?: string };
}

export interface Project {
  apiVersion: typeof ProjectGroupVersion;
  kind: 'Project';
  metadata: KubeObject['metadata'];
  spec: { finalizers: string[] };
  status: { phase: string };
}

const coversNamespaces = (namespace: string) => (g: ResourceGrant) =>
  (g.apiGroups.includes('') || g.apiGroups.includes('*')) &&
  (g.resources.includes('namespaces') || g.resources.includes('*')) &&
  (g.names === undefined || g.names.includes(namespace));

/**
 * What an access set says about Namespace objects, worked out once per set (the provider hands out the
 * same set object until RBAC changes): whether a cluster-wide grant covers every one, and the namespaces
 * a grant there covers whatever their name. A list of 10,000 namespaces then costs set lookups, not scans.
 */
interface NamespaceGrants {
  every: boolean;
  open: Set<string>;
  /** Namespaces (or, with `anywhere`, every one) where a grant for some named Namespaces may apply. */
  named: Set<string>;
  anywhere: boolean;
}
const summaries = new WeakMap<AccessSet, NamespaceGrants>();
function summaryOf(set: AccessSet): NamespaceGrants {
  let out = summaries.get(set);
  if (!out) {
    const unnamed = (g: ResourceGrant) => g.names === undefined && coversNamespaces('')(g);
    const named = (g: ResourceGrant) => g.names !== undefined && g.names.length > 0;
    out = {
      every: set.all || set.clusterWide.some(unnamed),
      open: new Set(set.namespaced.filter((e) => e.grants.some(unnamed)).flatMap((e) => e.namespaces)),
      named: new Set(set.namespaced.filter((e) => e.grants.some(named)).flatMap((e) => e.namespaces)),
      anywhere: set.clusterWide.some(named),
    };
    summaries.set(set, out);
  }
  return out;
}

/** Whether the access set lets its user see namespace `name` as a project. */
export function mayUseNamespace(set: AccessSet, name: string): boolean {
  const summary = summaryOf(set);
  if (summary.every || summary.open.has(name)) return true;
  if (!summary.anywhere && !summary.named.has(name)) return false;
  // Grants limited to named objects (rare): looked at one by one.
  const covers = coversNamespaces(name);
  if (set.clusterWide.some(covers)) return true;
  return set.namespaced.some((entry) => entry.namespaces.includes(name) && entry.grants.some(covers));
}

/** The Project a namespace is. */
export function projectOf(ns: Namespace): Project {
  const { name, uid, resourceVersion, creationTimestamp, labels, annotations, deletionTimestamp } =
    ns.metadata;
  return {
    apiVersion: ProjectGroupVersion,
    kind: 'Project',
    metadata: {
      name,
      ...(uid ? { uid } : {}),
      ...(resourceVersion ? { resourceVersion } : {}),
      ...(creationTimestamp ? { creationTimestamp } : {}),
      ...(deletionTimestamp ? { deletionTimestamp } : {}),
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
    },
    spec: { finalizers: ns.spec?.finalizers ?? [] },
    status: { phase: ns.status?.phase ?? 'Active' },
  };
}

/** The discovery document of the group version: one cluster-scoped resource, read-only. */
export const resourceList = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: ProjectGroupVersion,
  resources: [
    {
      name: 'projects',
      singularName: 'project',
      namespaced: false,
      kind: 'Project',
      verbs: ['get', 'list', 'watch'],
    },
  ],
};

export const apiGroup = {
  kind: 'APIGroup',
  apiVersion: 'v1',
  name: ProjectGroup,
  versions: [{ groupVersion: ProjectGroupVersion, version: ProjectVersion }],
  preferredVersion: { groupVersion: ProjectGroupVersion, version: ProjectVersion },
};

/** Projects as a meta.k8s.io Table, the columns `oc get projects` prints. */
export function projectTable(projects: Project[], resourceVersion: string) {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: [
      { name: 'Name', type: 'string', format: 'name', description: 'The namespace.', priority: 0 },
      { name: 'Display Name', type: 'string', format: '', description: 'Its display name.', priority: 0 },
      { name: 'Status', type: 'string', format: '', description: 'Active or Terminating.', priority: 0 },
      { name: 'Age', type: 'string', format: '', description: 'Since it was created.', priority: 0 },
    ],
    rows: projects.map((p) => ({
      cells: [
        p.metadata.name,
        p.metadata.annotations?.[DisplayNameAnnotation] ?? '',
        p.status.phase,
        shortAge(p.metadata.creationTimestamp),
      ],
      object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: p.metadata },
    })),
  };
}

/** Whether a request's Accept header asks for a Table (kubectl get does, JSON as its fallback). */
export const wantsTable = (accept: string | undefined) =>
  (accept ?? '').split(',').some((part) => /;\s*as=Table/.test(part) && /g=meta\.k8s\.io/.test(part));
