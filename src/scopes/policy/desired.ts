// The objects a template or instance should produce, as pure functions of the specs.
import type { ScopeInstance, ScopeTemplate } from '../../crds/scopes.ts';
import { stableJson } from '../../kube/equality.ts';
import type { KubeObject, OwnerReference } from '../../kube/resources.ts';
import {
  type Binding,
  type ClusterRole,
  instanceAnnotation,
  managedBy,
  managedByLabel,
  type PolicyRule,
  type RbacSubject,
  roleAnnotation,
  type TemplateRole,
  templateAnnotation,
} from '../model.ts';
import { bindingName, clusterRoleName } from './names.ts';

function ownerOf(object: KubeObject, kind: string): OwnerReference {
  return {
    apiVersion: 'operators.coreos.com/v1alpha1',
    kind,
    name: object.metadata.name!,
    uid: object.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function desiredClusterRole(template: ScopeTemplate, role: TemplateRole): ClusterRole {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: {
      name: clusterRoleName(template.metadata.name!, role.generateName),
      labels: { [managedByLabel]: managedBy },
      annotations: { [templateAnnotation]: template.metadata.name!, [roleAnnotation]: role.generateName },
      ownerReferences: [ownerOf(template, 'ScopeTemplate')],
    },
    rules: role.rules.map((r) => ({ ...r })),
  };
}

function subjectsOf(role: TemplateRole): RbacSubject[] {
  return role.subjects.map((s) =>
    s.kind === 'ServiceAccount'
      ? { kind: s.kind, name: s.name, namespace: s.namespace ?? '' }
      : { kind: s.kind, name: s.name, apiGroup: 'rbac.authorization.k8s.io' },
  );
}

/** A RoleBinding in `namespace`, or a ClusterRoleBinding when namespace is undefined. */
export function desiredBinding(
  instance: ScopeInstance,
  template: ScopeTemplate,
  role: TemplateRole,
  namespace: string | undefined,
): Binding {
  const roleName = clusterRoleName(template.metadata.name!, role.generateName);
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: namespace ? 'RoleBinding' : 'ClusterRoleBinding',
    metadata: {
      name: bindingName(instance.metadata.name!, roleName),
      ...(namespace ? { namespace } : {}),
      labels: { [managedByLabel]: managedBy },
      annotations: {
        [templateAnnotation]: template.metadata.name!,
        [instanceAnnotation]: instance.metadata.name!,
        [roleAnnotation]: role.generateName,
      },
      ownerReferences: [ownerOf(instance, 'ScopeInstance')],
    },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
    subjects: subjectsOf(role),
  };
}

export function ownedBy(object: KubeObject, uid: string | undefined): boolean {
  return Boolean(uid) && (object.metadata.ownerReferences ?? []).some((r) => r.uid === uid && r.controller);
}

const canonical = (v: unknown) => stableJson(v ?? null);

/** True when `actual` already carries everything `desired` sets (so no write is needed). */
export function bindingUpToDate(actual: Binding, desired: Binding): boolean {
  return (
    canonical(actual.roleRef) === canonical(desired.roleRef) &&
    canonical(actual.subjects) === canonical(desired.subjects) &&
    metadataUpToDate(actual, desired)
  );
}

export function roleUpToDate(actual: ClusterRole, desired: ClusterRole): boolean {
  return (
    canonical(normalizeRules(actual.rules)) === canonical(normalizeRules(desired.rules)) &&
    metadataUpToDate(actual, desired)
  );
}

function normalizeRules(rules: PolicyRule[] | undefined): PolicyRule[] {
  // The API server drops empty lists; compare without them.
  return (rules ?? []).map(
    (r) =>
      Object.fromEntries(
        Object.entries(r).filter(([, v]) => !Array.isArray(v) || v.length > 0),
      ) as PolicyRule,
  );
}

function metadataUpToDate(actual: KubeObject, desired: KubeObject): boolean {
  const has = (a: Record<string, string> | undefined, d: Record<string, string> | undefined) =>
    Object.entries(d ?? {}).every(([k, v]) => a?.[k] === v);
  return (
    has(actual.metadata.labels, desired.metadata.labels) &&
    has(actual.metadata.annotations, desired.metadata.annotations) &&
    (desired.metadata.ownerReferences ?? []).every((d) => ownedBy(actual, d.uid))
  );
}
