// The cached views the scopes controllers share: only objects labelled as ours are cached, so memory
// follows what tenantkit created, not the size of the cluster's RBAC.
import type { ScopeInstance } from '../../crds/scopes.ts';
import type { Informer } from '../../kube/informer.ts';
import { type KubeObject, Resources, type ResourceType } from '../../kube/resources.ts';
import { isEmptySelector, selectorAnchors } from '../../kube/selectors.ts';
import { type Binding, managedBy, managedByLabel } from '../model.ts';

const ours = `${managedByLabel}=${managedBy}`;
export const scopedClusterRoles: ResourceType = { ...Resources.clusterRoles, labelSelector: ours };
export const scopedRoleBindings: ResourceType = { ...Resources.roleBindings, labelSelector: ours };
export const scopedClusterRoleBindings: ResourceType = {
  ...Resources.clusterRoleBindings,
  labelSelector: ours,
};
export const scopedBindingTypes = [scopedRoleBindings, scopedClusterRoleBindings] as const;

/** Index names. */
export const ByTemplate = 'scopes.template';
export const ByRoleRef = 'scopes.roleRef';
export const ByListedNamespace = 'scopes.listedNamespace';
/** Instances with a namespace selector, by its anchors (selectorAnchors): who a namespace's labels concern. */
export const BySelectorAnchor = 'scopes.selectorAnchor';

/** The functions behind those indexes (one each: the informer refuses another under a known name). */
export const IndexFunctions = {
  template: (i: ScopeInstance) => [i.spec.scopeTemplateName],
  roleRef: (b: Binding) => [b.roleRef.name],
  listedNamespace: (i: ScopeInstance) => i.spec.namespaces ?? [],
  selectorAnchor: (i: ScopeInstance) =>
    isEmptySelector(i.spec.namespaceSelector) ? [] : selectorAnchors(i.spec.namespaceSelector!),
};

export const templateOf = (o: KubeObject): string => (o as ScopeInstance).spec?.scopeTemplateName ?? '';

/** Bindings of ours that point at a ClusterRole. */
export function boundBindings(informers: Informer<Binding>[], roleName: string): Binding[] {
  return informers.flatMap((i) => i.byIndex(ByRoleRef, roleName));
}
