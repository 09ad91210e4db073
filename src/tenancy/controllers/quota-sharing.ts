// The organization reconciler's quota step: writes each namespace's part of its organization's quota
// (policy/organization-quota.ts decides the split). Parts are lowered first, each with a write conditioned on
// the ResourceQuota's resourceVersion (a Pod admitted meanwhile changes it: then the step starts over),
// and raised or created only after, so their sum never passes the organization's total.
import type { Organization } from '../../crds/tenancy.ts';
import { isAlreadyExists, isConflict, type KubeClient } from '../../kube/client.ts';
import { semanticEqual } from '../../kube/equality.ts';
import type { Informer } from '../../kube/informer.ts';
import { parseQuantity } from '../../kube/quantity.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { organizationAnnotation, organizationQuotaName, quotaManagedBy, reservedLabel } from '../model.ts';
import {
  lowers,
  type NamespacePart,
  planQuota,
  type QuotaPlan,
  worthSharing,
} from '../policy/organization-quota.ts';

export interface ResourceQuota extends KubeObject {
  spec?: { hard?: Record<string, string> };
  status?: { hard?: Record<string, string>; used?: Record<string, string> };
}

/** Only tenantkit's parts of organizations' quotas. */
export const organizationQuotas = {
  ...Resources.resourceQuotas,
  labelSelector: `app.kubernetes.io/managed-by=${quotaManagedBy}`,
};

/** The organization a part belongs to (its annotation), for the organization controller's watch. */
export const quotaOrganization = (q: KubeObject) => q.metadata.annotations?.[organizationAnnotation];

/** Parts by their organization: an organization's reconcile reads its own, not every organization's. */
export const ByQuotaOrganization = 'tenancy.quotaOrganization';
export const quotaOrganizationIndex = (q: KubeObject) => {
  const organization = quotaOrganization(q);
  return organization ? [organization] : [];
};

export type QuotaOutcome =
  | { state: 'none' }
  | { state: 'shared'; summary: QuotaPlan['summary'] }
  /** A part changed while the step read it: run the step again. */
  | { state: 'retry' };

function desired(organization: string, namespace: string, hard: Record<string, string>): ResourceQuota {
  return {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: {
      name: organizationQuotaName,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': quotaManagedBy, [reservedLabel]: 'true' },
      annotations: { [organizationAnnotation]: organization },
    },
    spec: { hard },
  };
}

/** Writes one part: a replacement conditioned on the version read, or a create. Undefined: it changed meanwhile. */
async function writePart(
  client: KubeClient,
  organization: string,
  namespace: string,
  current: ResourceQuota | undefined,
  hard: Record<string, string>,
): Promise<ResourceQuota | undefined> {
  const next = desired(organization, namespace, hard);
  try {
    if (!current) {
      // The name is tenantkit's in an organization's namespace: one someone else made there is taken over.
      const other = await client.get<ResourceQuota>(
        Resources.resourceQuotas,
        organizationQuotaName,
        namespace,
      );
      if (other) current = other;
      else return await client.create(Resources.resourceQuotas, next);
    }
    return await client.replace(Resources.resourceQuotas, {
      ...next,
      metadata: { ...next.metadata, resourceVersion: current.metadata.resourceVersion },
    });
  } catch (err) {
    if (isConflict(err) || isAlreadyExists(err)) return undefined;
    throw err;
  }
}

/** Per resource the lower of two parts (a resource one of them lacks is unlimited there). */
function lowerOf(a: Record<string, string> | undefined, b: Record<string, string>): Record<string, string> {
  if (!a) return b;
  const out: Record<string, string> = {};
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[key];
    const y = b[key];
    out[key] =
      x === undefined ? y! : y === undefined ? x : (parseQuantity(x) ?? 0) <= (parseQuantity(y) ?? 0) ? x : y;
  }
  return out;
}

export async function shareQuota(
  client: KubeClient,
  organization: Organization,
  namespaces: string[],
  quotas: Informer<ResourceQuota>,
): Promise<QuotaOutcome> {
  const name = organization.metadata.name!;
  const total = organization.spec.quota?.hard ?? {};
  const mine = new Set(namespaces);
  // Parts left in namespaces that are no longer the organization's (moved, or its quota removed).
  for (const q of quotas.byIndex(ByQuotaOrganization, name)) {
    if (mine.has(q.metadata.namespace!) && Object.keys(total).length > 0) continue;
    await client.delete(Resources.resourceQuotas, q.metadata.name!, q.metadata.namespace);
  }
  if (Object.keys(total).length === 0) return { state: 'none' };
  const current = new Map(namespaces.map((ns) => [ns, quotas.get(`${ns}/${organizationQuotaName}`)]));
  const parts: NamespacePart[] = namespaces.map((ns) => {
    const q = current.get(ns);
    return { namespace: ns, ...(q?.spec?.hard ? { hard: q.spec.hard } : {}), used: q?.status?.used ?? {} };
  });
  const plan = planQuota(total, parts);
  if (!worthSharing(total, parts, plan)) {
    // Keep the parts; report what the namespaces use of the total now.
    return { state: 'shared', summary: plan.summary };
  }
  const changed = namespaces.filter((ns) => !semanticEqual(current.get(ns)?.spec?.hard, plan.parts.get(ns)));
  // Phase one lowers (a new part limits a namespace that had no limit: a lowering too), each resource to the
  // lower of now and the plan; phase two then raises. The sum of the parts stays within the total throughout.
  const written = new Map<string, ResourceQuota | undefined>();
  for (const ns of changed) {
    const before = current.get(ns);
    const next = plan.parts.get(ns)!;
    if (!lowers(before?.spec?.hard, next)) continue;
    const result = await writePart(client, name, ns, before, lowerOf(before?.spec?.hard, next));
    if (!result) return { state: 'retry' };
    written.set(ns, result);
  }
  for (const ns of changed) {
    const latest = written.has(ns) ? written.get(ns) : current.get(ns);
    const next = plan.parts.get(ns)!;
    if (semanticEqual(latest?.spec?.hard, next)) continue;
    if (!(await writePart(client, name, ns, latest, next))) return { state: 'retry' };
  }
  return { state: 'shared', summary: plan.summary };
}
