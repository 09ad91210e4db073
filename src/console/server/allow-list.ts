// The Kubernetes API calls the console may forward, and nothing else: the page's needs, written down.
// Each rule names methods and a path pattern whose variable parts are DNS names only (no `..`, no
// encoded slashes, no subresources unless named), and only these query parameters pass. Whether the
// caller may make the call is the API server's business (RBAC, admission): the list only keeps the
// console from being a general-purpose proxy for a token a page holds.
import { type Refusal, SavedSearchesConfigMap } from '../model.ts';

const dns = '[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?';
const plural = '[a-z0-9]{1,63}';
const group = '[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?';
const version = 'v[0-9]{1,3}((alpha|beta)[0-9]{1,3})?';
const oadp = '/apis/oadp.openshift.io/v1alpha1';
const tenantKinds =
  'nonadminbackups|nonadminrestores|nonadminschedules|nonadminbackupstoragelocations|nonadmindownloadrequests';

interface Rule {
  methods: readonly string[];
  path: RegExp;
}

const rule = (methods: readonly string[], path: string): Rule => ({ methods, path: new RegExp(`^${path}$`) });

export const AllowedCalls: readonly Rule[] = [
  // Who am I (the page shows it), and may I (buttons the user cannot use are not offered).
  rule(['POST'], '/apis/authentication.k8s.io/v1/selfsubjectreviews'),
  rule(['POST'], '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews'),
  rule(['POST'], '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews'),
  // Namespaces: list and read (what the user may see), create (the organization's policy decides).
  rule(['GET', 'POST'], '/api/v1/namespaces'),
  rule(['GET'], `/api/v1/namespaces/${dns}`),
  rule(['GET'], `/api/v1/namespaces/${dns}/resourcequotas`),
  // The tenant's backup kinds in one namespace: list, create, read, delete.
  rule(['GET', 'POST'], `${oadp}/namespaces/${dns}/(${tenantKinds})`),
  rule(['GET', 'DELETE'], `${oadp}/namespaces/${dns}/(${tenantKinds})/${dns}`),
  // What the admin enforces (the create dialogs show it), when the user may read it.
  rule(['GET'], '/apis/backup.tenantkit.io/v1alpha1/nonadminbackupconfigs/cluster'),
  // Organizations and the scope instances bound for the user.
  rule(['GET'], '/apis/tenancy.tenantkit.io/v1alpha1/organizations'),
  rule(['GET'], `/apis/tenancy.tenantkit.io/v1alpha1/organizations/${dns}`),
  rule(['GET'], '/apis/operators.coreos.com/v1alpha1/scopeinstances'),
  // Who may do what in a namespace (the organization's bindings, scope instances' bindings): read only.
  rule(['GET'], `/apis/rbac.authorization.k8s.io/v1/namespaces/${dns}/rolebindings`),
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

const secrets = /^\/api\/v1\/(namespaces\/[^/]+\/)?secrets(\/|$)/;
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
  if (secrets.test(path)) {
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
