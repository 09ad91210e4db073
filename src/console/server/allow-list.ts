// The Kubernetes API calls the console may forward, and nothing else: the page's needs, written down.
// Each rule names methods and a path pattern whose variable parts are DNS names only (no `..`, no
// encoded slashes, no subresources unless named), and only these query parameters pass. Before any rule,
// the path is read as the API server reads it (parseApiPath): what it cannot read, and every Secret path
// in any form (`/api/v1/watch/secrets` included), is refused. Whether the
// caller may make the call is the API server's business (RBAC, admission): the list only keeps the
// console from being a general-purpose proxy for a token a page holds.
import { capabilities } from '../../capabilities.ts';
import type { ConsoleCall } from '../../capability.ts';
import { type Refusal, SavedSearchesConfigMap } from '../model.ts';

const dns = '[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?';
const plural = '[a-z0-9]{1,63}';
const group = '[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?';
const version = 'v[0-9]{1,3}((alpha|beta)[0-9]{1,3})?';

interface Rule {
  methods: readonly string[];
  path: RegExp;
}

const rule = (methods: readonly string[], path: string): Rule => ({ methods, path: new RegExp(`^${path}$`) });

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The rule for a call a capability's pages make (its `consoleCalls`, src/capability.ts). */
export function capabilityRule(call: ConsoleCall): Rule {
  const { group, version, plural: resource } = call.resource;
  const base = group ? `/apis/${escaped(group)}/${escaped(version)}` : `/api/${escaped(version)}`;
  const namespace = call.namespaced ? `/namespaces/${dns}` : '';
  const name = call.scope === 'object' ? `/${call.name !== undefined ? escaped(call.name) : dns}` : '';
  return rule(call.methods, `${base}${namespace}/${escaped(resource)}${name}`);
}

export const AllowedCalls: readonly Rule[] = [
  // Who am I (the page shows it), and may I (buttons the user cannot use are not offered).
  rule(['POST'], '/apis/authentication.k8s.io/v1/selfsubjectreviews'),
  rule(['POST'], '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews'),
  rule(['POST'], '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews'),
  // Namespaces: list and read (what the user may see).
  rule(['GET'], '/api/v1/namespaces'),
  rule(['GET'], `/api/v1/namespaces/${dns}`),
  // What each capability's pages call (backup's kinds, organizations, projects, ...), as it declares.
  ...capabilities.flatMap((c) => (c.consoleCalls ?? []).map(capabilityRule)),
  // One object by name, to show its YAML (a search result opened): read only, no subresource, never a
  // Secret (refused before these rules, see refusalOf).
  rule(['GET'], `/api/v1/namespaces/${dns}/${plural}/${dns}`),
  rule(['GET'], `/api/v1/${plural}/${dns}`),
  rule(['GET'], `/apis/${group}/${version}/namespaces/${dns}/${plural}/${dns}`),
  rule(['GET'], `/apis/${group}/${version}/${plural}/${dns}`),
  // Saved searches: one ConfigMap of a fixed name (a create must name it: see bodyRefusalOf).
  rule(['GET', 'PUT'], `/api/v1/namespaces/${dns}/configmaps/${SavedSearchesConfigMap}`),
  rule(['POST'], `/api/v1/namespaces/${dns}/configmaps`),
];

/**
 * A Kubernetes API path as the API server reads it (its RequestInfo): API group and version, namespace,
 * resource, name and subresource. Undefined for any path the API server could read differently from the
 * console: an empty segment (`//`, a trailing slash), anything but lowercase letters, digits, `-` and `.`
 * in a segment (so no percent-encoding, no `:` service-proxy names), `.` and `..`, the legacy `watch` and
 * `proxy` verb prefixes, and more segments than an object's subresource.
 */
export interface ApiPath {
  group: string;
  version: string;
  namespace?: string;
  resource: string;
  name?: string;
  subresource?: string;
}

const segment = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const verbPrefixes = new Set(['watch', 'proxy']);
/** Subresources of a namespace itself (`/api/v1/namespaces/x/status`), as the API server knows them. */
const namespaceSubresources = new Set(['status', 'finalize']);

export function parseApiPath(path: string): ApiPath | undefined {
  if (!path.startsWith('/')) return undefined;
  const parts = path.slice(1).split('/');
  if (parts.some((p) => !segment.test(p) || p.includes('..'))) return undefined;
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 2) {
    [group, version, rest] = ['', parts[1]!, parts.slice(2)];
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    [group, version, rest] = [parts[1]!, parts[2]!, parts.slice(3)];
  } else return undefined;
  if (rest.length === 0 || verbPrefixes.has(rest[0]!)) return undefined;
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 2) {
    namespace = rest[1]!;
    if (rest.length === 2 || namespaceSubresources.has(rest[2]!)) {
      // The namespace object itself (or its status/finalize).
      if (rest.length > 3) return undefined;
      return { group, version, resource: 'namespaces', name: namespace, ...sub(rest[2]) };
    }
    rest = rest.slice(2);
  }
  if (rest.length > 3) return undefined;
  const [resource, name, subresource] = rest as [string, string?, string?];
  if (verbPrefixes.has(resource)) return undefined;
  return {
    group,
    version,
    ...(namespace !== undefined ? { namespace } : {}),
    resource,
    ...(name !== undefined ? { name } : {}),
    ...sub(subresource),
  };
}

const sub = (subresource: string | undefined) => (subresource !== undefined ? { subresource } : {});

/** Resources whose objects the console never passes on, in any API group, by any name or subresource. */
const NeverForwarded = new Set(['secrets']);

const configMapCollection = new RegExp(`^/api/v1/namespaces/${dns}/configmaps$`);

/** Why the console does not forward this body to `path`, or undefined: a ConfigMap create names the one it may. */
export function bodyRefusalOf(path: string, body: unknown): Refusal | undefined {
  if (!configMapCollection.test(path)) return undefined;
  const name = (body as { metadata?: { name?: unknown } } | null)?.metadata?.name;
  if (name === SavedSearchesConfigMap) return undefined;
  return {
    status: 403,
    reason: 'ObjectNotAllowed',
    message: `the console creates only ConfigMap ${SavedSearchesConfigMap} (saved searches); use kubectl for other ConfigMaps`,
  };
}

export const AllowedQuery = new Set(['labelSelector', 'fieldSelector', 'limit', 'continue']);

/** Why the console does not forward `method path?query`, or undefined when it does. */
export function refusalOf(method: string, path: string, query: URLSearchParams): Refusal | undefined {
  const parsed = parseApiPath(path);
  if (parsed === undefined) {
    return {
      status: 403,
      reason: 'PathNotAllowed',
      message: `the console does not forward ${path}: it is not a plain Kubernetes API path (lowercase segments, no empty, encoded or dot segments, no watch/ or proxy/ prefix); use kubectl for anything else`,
    };
  }
  if (NeverForwarded.has(parsed.resource)) {
    return {
      status: 403,
      reason: 'SecretsNotShown',
      message: 'the console never reads Secrets, so their data is never shown in a browser; use kubectl',
    };
  }
  const rules = AllowedCalls.filter((r) => r.path.test(path));
  if (rules.length === 0) {
    return {
      status: 403,
      reason: 'PathNotAllowed',
      message: `the console does not forward ${path}: it forwards only the API calls its pages make; use kubectl for anything else`,
    };
  }
  if (!rules.some((r) => r.methods.includes(method))) {
    const allowed = [...new Set(rules.flatMap((r) => r.methods))].join(', ');
    return {
      status: 405,
      reason: 'MethodNotAllowed',
      message: `the console forwards ${path} only for ${allowed}, not ${method}`,
    };
  }
  for (const name of query.keys()) {
    if (!AllowedQuery.has(name)) {
      return {
        status: 400,
        reason: 'QueryNotAllowed',
        message: `query parameter "${name}" is not forwarded; the console passes only ${[...AllowedQuery].join(', ')}`,
      };
    }
  }
  return undefined;
}
