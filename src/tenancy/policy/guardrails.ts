// Guardrails per organization: which StorageClasses, IngressClasses (and host names), PriorityClasses,
// RuntimeClasses and image registries its namespaces may use, and the labels and annotations every one of
// its namespaces carries. The TenancyConfig holds every organization's defaults; an Organization's own
// spec.guardrails replaces them field by field. Only admins write either object. The rules here need no
// cluster: admission (admission/guardrails.ts), the namespace policy and the namespace metadata controller
// apply them.
import type { Guardrails, Organization } from '../../crds/tenancy.ts';
import type { EffectiveConfig } from '../model.ts';
import { matchesAny, wildcard } from './config.ts';

export type GuardrailField = keyof Guardrails;

/** The guardrails that apply to an organization's namespaces, and where each field was set. */
export interface OrganizationGuardrails {
  organization: string;
  rules: Guardrails;
  /** Where a field comes from, for messages: "Organization acme" or "TenancyConfig cluster". */
  source(field: GuardrailField): string;
}

export function guardrailsOf(
  config: EffectiveConfig,
  organizationName: string,
  organization: Organization | undefined,
): OrganizationGuardrails {
  const own = organization?.spec.guardrails ?? {};
  const rules: Guardrails = { ...config.guardrails };
  for (const [key, value] of Object.entries(own)) {
    if (value !== undefined) (rules as Record<string, unknown>)[key] = value;
  }
  return {
    organization: organizationName,
    rules,
    source: (field) =>
      own[field] !== undefined
        ? `Organization ${organizationName}, spec.guardrails.${field}`
        : `TenancyConfig cluster, spec.guardrails.${field}`,
  };
}

/** Who may change a rule, and where: every refusal ends with it. */
export const whoChanges = (g: OrganizationGuardrails, field: GuardrailField) =>
  `a cluster admin changes this in ${g.source(field)}`;

const listed = (values: readonly string[]) => (values.length ? values.join(', ') : '(none)');

export type ClassKind = 'storageClasses' | 'ingressClasses' | 'priorityClasses' | 'runtimeClasses';
const classKindNames: Record<ClassKind, string> = {
  storageClasses: 'StorageClass',
  ingressClasses: 'IngressClass',
  priorityClasses: 'PriorityClass',
  runtimeClasses: 'RuntimeClass',
};

/** Why `className` may not be used by the organization, or undefined when it may (or nothing restricts it). */
export function classProblem(
  g: OrganizationGuardrails,
  kind: ClassKind,
  className: string,
): string | undefined {
  const allowed = g.rules[kind]?.allowed;
  if (allowed === undefined || matchesAny(allowed, className)) return undefined;
  return `${classKindNames[kind]} "${className}" is not one organization "${g.organization}" may use; allowed: ${listed(allowed)}; ${whoChanges(g, kind)}`;
}

/**
 * The class an object of the organization should get instead of `current` (what it names, or what the
 * cluster's default filled in), or undefined to leave it: a default replaces no class at all, and a
 * class the cluster's defaulting filled in that the organization may not use.
 */
export function defaultedClass(
  g: OrganizationGuardrails,
  kind: 'storageClasses' | 'ingressClasses',
  current: string | undefined,
  clusterDefault: string | undefined,
): string | undefined {
  const wanted = g.rules[kind]?.default;
  if (!wanted || current === wanted) return undefined;
  if (!current) return wanted;
  if (current === clusterDefault && classProblem(g, kind, current) !== undefined) return wanted;
  return undefined;
}

export const classKinds = Object.keys(classKindNames) as ClassKind[];

/** Of the classes that exist, the ones the organization may use (all of them where nothing restricts). */
export function usableClasses(g: OrganizationGuardrails, kind: ClassKind, existing: string[]): string[] {
  return existing.filter((name) => classProblem(g, kind, name) === undefined).sort();
}

/** Why host `host` may not be served by the organization's Ingresses, or undefined when it may. */
export function hostProblem(g: OrganizationGuardrails, host: string): string | undefined {
  const allowed = g.rules.ingressHostnames;
  if (allowed === undefined || matchesAny(allowed, host.toLowerCase())) return undefined;
  return `host "${host}" is not one organization "${g.organization}" may serve; allowed: ${listed(allowed)}; ${whoChanges(g, 'ingressHostnames')}`;
}

/**
 * The repository an image reference names, the way container runtimes read it: "nginx:1.27" is
 * docker.io/library/nginx, "ghcr.io/acme/app@sha256:…" is ghcr.io/acme/app. Undefined for what is not an
 * image reference at all.
 */
export function repositoryOf(image: string): string | undefined {
  const withoutDigest = image.split('@')[0] ?? '';
  const slash = withoutDigest.lastIndexOf('/');
  const colon = withoutDigest.lastIndexOf(':');
  const name = colon > slash ? withoutDigest.slice(0, colon) : withoutDigest;
  if (name === '' || /\s/.test(name) || name.startsWith('/') || name.endsWith('/') || name.includes('//'))
    return undefined;
  const segments = name.split('/');
  const first = segments[0]!;
  const hasRegistry =
    segments.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (!hasRegistry) return `docker.io/${segments.length === 1 ? 'library/' : ''}${name.toLowerCase()}`;
  const registry = first.toLowerCase() === 'index.docker.io' ? 'docker.io' : first.toLowerCase();
  return [registry, ...segments.slice(1)].join('/');
}

/** Whether a registry entry ("host", "host/prefix", * within one segment) covers `repository`. */
export function registryCovers(entry: string, repository: string): boolean {
  const want = entry.replace(/\/+$/, '').split('/');
  const have = repository.split('/');
  if (want.length > have.length) return false;
  return want.every((part, i) => wildcard(part, have[i]!));
}

/** Why `image` may not run in the organization's namespaces, or undefined when it may. */
export function imageProblem(g: OrganizationGuardrails, image: string): string | undefined {
  const allowed = g.rules.registries;
  if (allowed === undefined) return undefined;
  const repository = repositoryOf(image);
  if (repository && allowed.some((entry) => registryCovers(entry, repository))) return undefined;
  const read = repository ? ` (repository ${repository})` : ' (not an image reference)';
  return `image "${image}"${read} is not from a registry organization "${g.organization}" may use; allowed: ${listed(allowed)}; use an image from one of them, or ${whoChanges(g, 'registries')}`;
}

export type MetadataKind = 'namespaceLabels' | 'namespaceAnnotations';

/**
 * Enforced keys that a change from `before` to `after` sets to another value or removes (a tenant's
 * doing; the namespace metadata controller and admins are not asked).
 */
export function enforcedChanges(
  enforced: Record<string, string> | undefined,
  before: Record<string, string> | undefined,
  after: Record<string, string> | undefined,
): string[] {
  return Object.entries(enforced ?? {})
    .filter(([key, value]) => after?.[key] !== value && before?.[key] !== after?.[key])
    .map(([key]) => key)
    .sort();
}

/** What the enforced keys of both kinds need: the labels and annotations to add or correct on a namespace. */
export function missingMetadata(
  g: OrganizationGuardrails,
  namespace: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } },
): { labels: Record<string, string>; annotations: Record<string, string> } | undefined {
  const differing = (want: Record<string, string> | undefined, have: Record<string, string> | undefined) =>
    Object.fromEntries(Object.entries(want ?? {}).filter(([k, v]) => have?.[k] !== v));
  const labels = differing(g.rules.namespaceLabels, namespace.metadata.labels);
  const annotations = differing(g.rules.namespaceAnnotations, namespace.metadata.annotations);
  if (Object.keys(labels).length === 0 && Object.keys(annotations).length === 0) return undefined;
  return { labels, annotations };
}
