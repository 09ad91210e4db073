// What a UsageProfile puts in an organization namespace: its ResourceQuotas and LimitRanges, labelled as
// reserved and managed by tenantkit, with the namespace's admin overrides (the annotation
//   resourcequota.tenantkit.io/<quota name>.<resource>: "<quantity>") applied. Pure: the usage profile
// controller writes them.
import type { UsageProfile } from '../../crds/tenancy.ts';
import type { KubeObject } from '../../kube/resources.ts';
import { type Namespace, reservedLabel } from '../model.ts';

/** The managed-by label value of the objects a profile put in a namespace. */
export const managedBy = 'tenantkit-usage-profile';
export const quotaOverridePrefix = 'resourcequota.tenantkit.io/';

/** The kinds a profile may hold. */
export const profileKinds = ['ResourceQuota', 'LimitRange'] as const;
export type ProfileKind = (typeof profileKinds)[number];

export interface SpecObject extends KubeObject {
  spec?: Record<string, unknown>;
}

/** The profile's objects for one namespace, with the namespace's admin overrides applied. */
export function desiredObjects(
  profile: UsageProfile,
  ns: Namespace,
): { objects: SpecObject[]; problems: string[] } {
  const problems: string[] = [];
  const objects: SpecObject[] = [];
  for (const [name, template] of Object.entries(profile.spec.resources ?? {})) {
    const t = template as SpecObject;
    if (!t.kind || !(profileKinds as readonly string[]).includes(t.kind)) {
      problems.push(
        `resources.${name}: kind ${t.kind ?? '(none)'} is not supported; use ResourceQuota or LimitRange`,
      );
      continue;
    }
    const spec = structuredClone(t.spec ?? {});
    if (t.kind === 'ResourceQuota') {
      const hard = { ...((spec.hard as Record<string, string>) ?? {}) };
      for (const [key, value] of Object.entries(ns.metadata.annotations ?? {})) {
        if (key.startsWith(`${quotaOverridePrefix}${name}.`))
          hard[key.slice(quotaOverridePrefix.length + name.length + 1)] = value;
      }
      spec.hard = hard;
    }
    objects.push({
      apiVersion: 'v1',
      kind: t.kind,
      metadata: {
        name,
        namespace: ns.metadata.name!,
        labels: { [reservedLabel]: 'true', 'app.kubernetes.io/managed-by': managedBy },
        annotations: { 'tenancy.tenantkit.io/usage-profile': profile.metadata.name! },
      },
      spec,
    });
  }
  return { objects, problems };
}
