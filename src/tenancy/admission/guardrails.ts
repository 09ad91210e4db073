// Admission for the organization guardrails (rules in policy/guardrails.ts), in the namespaces of organizations:
// - Pods: every container's image from an allowed registry (on create, on an image change, and for
//   ephemeral containers), and their PriorityClass and RuntimeClass allowed. Pods a workload controller
//   creates are checked like a tenant's own: a Deployment cannot carry an image past the rule;
// - PersistentVolumeClaims: an allowed StorageClass, the organization's default filled in;
// - Ingresses: an allowed IngressClass (the default filled in) and only allowed host names.
// Privileged users (admins, tenantkit) pass. A namespace or Organization the caches have not seen yet is
// read from the API server: a cache behind a tenant's fresh namespace must not let a Pod slip past.
import type { KubeClient } from '../../kube/client.ts';
import type { Informer } from '../../kube/informer.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { type AdmissionRequest, allow, deny, mutate, type Verdict } from '../../webhook/admission.ts';
import {
  type ConfigSource,
  type Directory,
  type Namespace,
  organizationQuotaName,
  type PrivilegeCheck,
  quotaManagedBy,
} from '../model.ts';
import { reservedFor } from '../policy/config.ts';
import {
  classProblem,
  defaultedClass,
  guardrailsOf,
  hostProblem,
  imageProblem,
  type OrganizationGuardrails,
} from '../policy/guardrails.ts';

export interface GuardrailDeps {
  client: KubeClient;
  config: ConfigSource;
  privileged: PrivilegeCheck;
  directory: Directory;
  storageClasses: Informer<KubeObject>;
  ingressClasses: Informer<KubeObject>;
  quotas: Informer<KubeObject>;
}

/** The guardrails of the organization that owns `namespace`, or undefined for namespaces left alone. */
async function guardrailsIn(
  deps: GuardrailDeps,
  namespace: string,
): Promise<OrganizationGuardrails | undefined> {
  // Not a namespace's name (the API server sends none such): nothing to look up.
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace)) return undefined;
  const config = deps.config();
  const ns =
    deps.directory.namespace(namespace) ??
    (await deps.client.get<Namespace>(Resources.namespaces, namespace));
  const organization = ns?.metadata.labels?.[config.organizationLabel];
  if (!ns || !organization || reservedFor(config, ns)) return undefined;
  return guardrailsOf(config, organization, await deps.directory.currentOrganization(organization));
}

/** The guardrails that apply to a request, or undefined when none do (not a create or update, a privileged user, another namespace). */
async function applicable(
  deps: GuardrailDeps,
  req: AdmissionRequest,
): Promise<OrganizationGuardrails | undefined> {
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return undefined;
  if (!req.object || deps.privileged(req.userInfo, deps.config())) return undefined;
  return guardrailsIn(deps, req.namespace ?? req.object.metadata?.namespace ?? '');
}

/**
 * Why a new Pod or claim must wait: its organization has a quota and this namespace has no part of it
 * yet (a namespace made a moment ago, before the organization controller gave it one). Without the part
 * nothing would count what the namespace uses against the organization's total.
 */
async function quotaPending(deps: GuardrailDeps, req: AdmissionRequest, g: OrganizationGuardrails) {
  if (req.operation !== 'CREATE') return undefined;
  const organization = await deps.directory.currentOrganization(g.organization);
  if (Object.keys(organization?.spec.quota?.hard ?? {}).length === 0) return undefined;
  const namespace = req.namespace ?? '';
  const part =
    deps.quotas.get(`${namespace}/${organizationQuotaName}`) ??
    (await deps.client.get(Resources.resourceQuotas, organizationQuotaName, namespace));
  // Only tenantkit's own part counts (a ResourceQuota of that name someone else made would not be kept).
  if (part?.metadata.labels?.['app.kubernetes.io/managed-by'] === quotaManagedBy) return undefined;
  return `organization quota: namespace ${namespace} has no part of organization "${g.organization}"'s quota yet (ResourceQuota ${organizationQuotaName}), which tenantkit gives a new namespace within a second or two; retry shortly`;
}

const what = (kind: string, req: AdmissionRequest) => {
  const name = req.name || req.object?.metadata?.name || `${req.object?.metadata?.generateName ?? ''}*`;
  return `${kind} ${req.namespace ?? ''}/${name}`;
};

const refuse = (kind: string, req: AdmissionRequest, problems: string[]) =>
  deny(`organization guardrails: ${what(kind, req)}: ${problems.join('; ')}`, 403, 'Forbidden');

const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
const list = (value: unknown): Record<string, unknown>[] =>
  Array.isArray(value)
    ? value.filter((v): v is Record<string, unknown> => typeof v === 'object' && v !== null)
    : [];

const containerLists = ['containers', 'initContainers', 'ephemeralContainers'] as const;

/** Images a Pod request brings in: every one on create, changed or new ones on an update. */
function newImages(pod: KubeObject, old: KubeObject | undefined): { where: string; image: string }[] {
  const spec = (pod as { spec?: Record<string, unknown> }).spec ?? {};
  const oldSpec = (old as { spec?: Record<string, unknown> } | undefined)?.spec ?? {};
  const out: { where: string; image: string }[] = [];
  for (const field of containerLists) {
    const before = new Map(list(oldSpec[field]).map((c) => [text(c.name), c.image]));
    for (const container of list(spec[field])) {
      if (old && before.get(text(container.name)) === container.image) continue;
      out.push({
        where: `${field} ${text(container.name) ?? '(unnamed)'}`,
        image: String(container.image ?? ''),
      });
    }
  }
  return out;
}

/** Only a create, an ephemeral container, or a changed image concerns a Pod's guardrails. */
export const imageChanges = {
  name: 'image-changes',
  expression:
    "request.operation == 'CREATE' || (has(request.subResource) && request.subResource == 'ephemeralcontainers') || object.spec.containers.map(c, c.image) != oldObject.spec.containers.map(c, c.image) || (has(object.spec.initContainers) && (!has(oldObject.spec.initContainers) || object.spec.initContainers.map(c, c.image) != oldObject.spec.initContainers.map(c, c.image)))",
};

export async function validatePodGuardrails(deps: GuardrailDeps, req: AdmissionRequest): Promise<Verdict> {
  const g = await applicable(deps, req);
  if (!g) return allow();
  const pod = req.object!;
  const problems: string[] = [];
  for (const { where, image } of newImages(pod, req.operation === 'UPDATE' ? req.oldObject : undefined)) {
    const problem = imageProblem(g, image);
    if (problem) problems.push(`${where}: ${problem}`);
  }
  if (req.operation === 'CREATE') {
    // Both are fixed at creation.
    const spec = (pod as { spec?: Record<string, unknown> }).spec ?? {};
    const priority = text(spec.priorityClassName);
    const runtime = text(spec.runtimeClassName);
    const priorityProblem = priority ? classProblem(g, 'priorityClasses', priority) : undefined;
    const runtimeProblem = runtime ? classProblem(g, 'runtimeClasses', runtime) : undefined;
    if (priorityProblem) problems.push(`spec.priorityClassName: ${priorityProblem}`);
    if (runtimeProblem) problems.push(`spec.runtimeClassName: ${runtimeProblem}`);
  }
  const pending = await quotaPending(deps, req, g);
  if (pending) problems.push(pending);
  return problems.length ? refuse('Pod', req, problems) : allow();
}

/** The class Kubernetes marks as its default for objects that name none (the newest, as Kubernetes picks). */
function clusterDefault(classes: Informer<KubeObject>, annotation: string): string | undefined {
  return classes
    .list()
    .filter((c) => c.metadata.annotations?.[annotation] === 'true')
    .sort((a, b) => (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? ''))[0]
    ?.metadata.name;
}

/**
 * The class a new object gets from the organization's default (none named, or the cluster's default filled
 * in and not allowed), and the warning that says so when it replaces one; undefined to keep it.
 */
function organizationDefault(
  g: OrganizationGuardrails,
  kind: 'storageClasses' | 'ingressClasses',
  current: string | undefined,
  classes: Informer<KubeObject>,
): { className: string; warning?: string } | undefined {
  const what = kind === 'storageClasses' ? 'StorageClass' : 'IngressClass';
  const fallback = clusterDefault(classes, `${what.toLowerCase()}.kubernetes.io/is-default-class`);
  const replaced = defaultedClass(g, kind, current, fallback);
  if (!replaced) return undefined;
  if (!current) return { className: replaced };
  return {
    className: replaced,
    warning: `${what} "${current}", the cluster's default, is not one organization "${g.organization}" may use: it gets "${replaced}", the organization's default`,
  };
}

/** Only a create or a class filled in later concerns the claim's StorageClass. */
export const setsStorageClass = {
  name: 'sets-storage-class',
  expression:
    "request.operation == 'CREATE' || (has(object.spec.storageClassName) && (!has(oldObject.spec.storageClassName) || oldObject.spec.storageClassName != object.spec.storageClassName))",
};

export async function admitClaimGuardrails(deps: GuardrailDeps, req: AdmissionRequest): Promise<Verdict> {
  const g = await applicable(deps, req);
  if (!g) return allow();
  const claim = req.object as KubeObject & { spec?: { storageClassName?: unknown } };
  const current = text(claim.spec?.storageClassName);
  let result = claim;
  const warnings: string[] = [];
  const defaulted =
    req.operation === 'CREATE'
      ? organizationDefault(g, 'storageClasses', current, deps.storageClasses)
      : undefined;
  if (defaulted) {
    result = { ...claim, spec: { ...claim.spec, storageClassName: defaulted.className } };
    if (defaulted.warning) warnings.push(defaulted.warning);
  }
  const className = text(result.spec?.storageClassName);
  const problem = className ? classProblem(g, 'storageClasses', className) : undefined;
  if (problem) return refuse('PersistentVolumeClaim', req, [`spec.storageClassName: ${problem}`]);
  const pending = await quotaPending(deps, req, g);
  if (pending) return refuse('PersistentVolumeClaim', req, [pending]);
  return result === claim ? allow() : mutate(claim, result, warnings);
}

const ingressClassAnnotation = 'kubernetes.io/ingress.class';

interface IngressSpec {
  ingressClassName?: unknown;
  rules?: unknown;
  tls?: unknown;
}

function hostsOf(ingress: KubeObject | undefined): string[] {
  const spec = ((ingress as { spec?: IngressSpec } | undefined)?.spec ?? {}) as IngressSpec;
  const fromRules = list(spec.rules).map((r) => text(r.host));
  const fromTls = list(spec.tls).flatMap((t) => (Array.isArray(t.hosts) ? t.hosts.map(text) : []));
  return [...new Set([...fromRules, ...fromTls].filter((h): h is string => Boolean(h)))];
}

const classOf = (ingress: KubeObject | undefined) =>
  text((ingress as { spec?: IngressSpec } | undefined)?.spec?.ingressClassName) ??
  ingress?.metadata?.annotations?.[ingressClassAnnotation];

export async function admitIngressGuardrails(deps: GuardrailDeps, req: AdmissionRequest): Promise<Verdict> {
  const g = await applicable(deps, req);
  if (!g) return allow();
  const ingress = req.object as KubeObject & { spec?: IngressSpec };
  const old = req.operation === 'UPDATE' ? req.oldObject : undefined;
  let result = ingress;
  const warnings: string[] = [];
  const current = classOf(ingress);
  // The legacy annotation and the field may not both be set: a default goes only where neither is.
  const defaulted =
    req.operation === 'CREATE' && !ingress.metadata.annotations?.[ingressClassAnnotation]
      ? organizationDefault(g, 'ingressClasses', current, deps.ingressClasses)
      : undefined;
  if (defaulted) {
    result = { ...ingress, spec: { ...ingress.spec, ingressClassName: defaulted.className } };
    if (defaulted.warning) warnings.push(defaulted.warning);
  }
  const problems: string[] = [];
  const className = classOf(result);
  if (className && (!old || className !== classOf(old))) {
    const problem = classProblem(g, 'ingressClasses', className);
    if (problem) problems.push(`ingress class: ${problem}`);
  }
  const before = new Set(hostsOf(old));
  for (const host of hostsOf(result).filter((h) => !before.has(h))) {
    const problem = hostProblem(g, host);
    if (problem) problems.push(problem);
  }
  if (problems.length) return refuse('Ingress', req, problems);
  return result === ingress ? allow() : mutate(ingress, result, warnings);
}
