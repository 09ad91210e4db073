// The contract between the scopes capability's parts (admission, controllers, policy): the labels,
// annotations and field manager on what it creates, and the RBAC object shapes they share.
import type { ScopeTemplate } from '../crds/scopes.ts';
import type { KubeObject } from '../kube/resources.ts';

/** The API group of ScopeTemplate and ScopeInstance. */
export const scopesGroup = 'operators.coreos.com';

// --- Labels, annotations and the field manager ---

export const managedByLabel = 'app.kubernetes.io/managed-by';
export const managedBy = 'tenantkit-scopes';
export const templateAnnotation = 'scopes.tenantkit.io/template';
export const instanceAnnotation = 'scopes.tenantkit.io/instance';
export const roleAnnotation = 'scopes.tenantkit.io/role';
export const fieldManager = 'tenantkit-scopes';

// --- Shapes ---

export type TemplateRole = ScopeTemplate['spec']['clusterRoles'][number];
export type PolicyRule = TemplateRole['rules'][number];

export interface RbacSubject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}

export interface ClusterRole extends KubeObject {
  rules?: PolicyRule[];
}

export interface Binding extends KubeObject {
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects?: RbacSubject[];
}

export interface Namespace extends KubeObject {
  status?: { phase?: string };
}
