// Escalation guard for ScopeTemplates and ScopeInstances. The scopes controllers hold `bind` and
// `escalate` on ClusterRoles, so without this guard anyone who may create a ScopeInstance could grant
// any permission. Every check is a SubjectAccessReview against the real authorizer:
// - a template's rules must be held cluster-wide by the requester (its ClusterRoles can be bound
//   anywhere), or the requester must have both `escalate` and `bind` on clusterroles;
// - an instance may bind a template's role in a scope only if the requester may `bind` that ClusterRole
//   there or holds all its rules there. A namespaceSelector (which can match namespaces created later)
//   and a cluster-wide instance are checked at cluster scope;
// - rules granting escalate/bind/impersonate or `*` on RBAC resources need a cluster admin.
import { type ScopeInstance, type ScopeTemplate, ScopeTemplateCrd } from '../../crds/scopes.ts';
import type { UserInfo } from '../../kube/access.ts';
import { type AccessQuery, mapLimit, subjectCan } from '../../kube/access.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Informer } from '../../kube/informer.ts';
import { compileSelector, isEmptySelector } from '../../kube/selectors.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../../webhook/admission.ts';
import type { PolicyRule, TemplateRole } from '../model.ts';
import { clusterRoleName } from '../policy/names.ts';

const rbacGroup = 'rbac.authorization.k8s.io';
const rbacResources = ['roles', 'clusterroles', 'rolebindings', 'clusterrolebindings', '*'];
/** Above this many listed namespaces we do not fan out reviews; the requester needs cluster-wide rights. */
const maxNamespaceChecks = 500;
const reviewConcurrency = 16;

interface Permission {
  query: AccessQuery;
  text: string;
}

function describe(q: AccessQuery): string {
  if ('nonResource' in q) return `${q.nonResource.verb} ${q.nonResource.path}`;
  const r = q.resource;
  const what = `${r.resource}${r.subresource ? `/${r.subresource}` : ''}${r.group ? `.${r.group}` : ''}${r.name ? ` named ${r.name}` : ''}`;
  return `${r.verb} ${what}`;
}

/** Every single permission a rule grants, as SubjectAccessReview attributes in `namespace`. */
export function permissionsOf(rule: PolicyRule, namespace: string | undefined): Permission[] {
  const out: Permission[] = [];
  for (const verb of rule.verbs) {
    if (rule.nonResourceURLs?.length) {
      // Non-resource URLs only mean something cluster-wide.
      if (namespace === undefined)
        for (const path of rule.nonResourceURLs) out.push(mk({ nonResource: { path, verb } }));
      continue;
    }
    for (const group of rule.apiGroups?.length ? rule.apiGroups : ['']) {
      for (const full of rule.resources ?? []) {
        const [resource, subresource] = full.split('/', 2) as [string, string | undefined];
        for (const name of rule.resourceNames?.length ? rule.resourceNames : [undefined]) {
          out.push(
            mk({
              resource: {
                verb,
                group,
                resource,
                ...(subresource ? { subresource } : {}),
                ...(name ? { name } : {}),
                ...(namespace ? { namespace } : {}),
              },
            }),
          );
        }
      }
    }
  }
  return out;
}

function mk(query: AccessQuery): Permission {
  return { query, text: describe(query) };
}

/** Rules that only a cluster admin may hand out through a template. */
export function privilegedRules(role: TemplateRole): string[] {
  const found: string[] = [];
  role.rules.forEach((rule, i) => {
    const verbs = rule.verbs;
    const groups = rule.apiGroups ?? [''];
    const resources = rule.resources ?? [];
    const onRbac =
      groups.some((g) => g === rbacGroup || g === '*') &&
      resources.some((r) => rbacResources.includes(r.split('/')[0]!));
    const bad = verbs.filter((v) => (v === 'escalate' || v === 'bind' || v === '*') && onRbac);
    if (verbs.includes('impersonate') || (verbs.includes('*') && resources.includes('*')))
      bad.push('impersonate');
    if (bad.length > 0) {
      found.push(
        `clusterRoles[${role.generateName}].rules[${i}] grants ${[...new Set(bad)].join(', ')} on ${resources.join(', ') || 'all resources'}`,
      );
    }
  });
  return found;
}

async function missing(client: KubeClient, user: UserInfo, permissions: Permission[]): Promise<string[]> {
  const allowed = await mapLimit(permissions, reviewConcurrency, (p) => subjectCan(client, user, p.query));
  return permissions.filter((_, i) => !allowed[i]).map((p) => p.text);
}

const isClusterAdmin = (client: KubeClient, user: UserInfo) =>
  subjectCan(client, user, { resource: { verb: '*', group: '*', resource: '*' } });

const list = (items: string[], max = 8) =>
  items.length <= max
    ? items.join('; ')
    : `${items.slice(0, max).join('; ')}; and ${items.length - max} more`;

const sameSpec = (req: AdmissionRequest) =>
  req.operation === 'UPDATE' &&
  JSON.stringify((req.oldObject as { spec?: unknown } | undefined)?.spec) ===
    JSON.stringify((req.object as { spec?: unknown } | undefined)?.spec);

export async function reviewTemplate(client: KubeClient, req: AdmissionRequest): Promise<Verdict> {
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return allow();
  if (sameSpec(req)) return allow();
  const template = req.object as unknown as ScopeTemplate;
  const user = req.userInfo;
  if (await isClusterAdmin(client, user)) return allow();
  const privileged = template.spec.clusterRoles.flatMap(privilegedRules);
  if (privileged.length > 0) {
    return deny(
      `ScopeTemplate ${template.metadata.name}: only a cluster admin may grant RBAC-escalating permissions through a template: ${list(privileged)}. Remove these verbs or ask a cluster admin to create the template.`,
    );
  }
  const [escalate, bind] = await Promise.all([
    subjectCan(client, user, { resource: { verb: 'escalate', group: rbacGroup, resource: 'clusterroles' } }),
    subjectCan(client, user, { resource: { verb: 'bind', group: rbacGroup, resource: 'clusterroles' } }),
  ]);
  if (escalate && bind) return allow();
  const lacking = await missing(
    client,
    user,
    template.spec.clusterRoles.flatMap((r) => r.rules.flatMap((rule) => permissionsOf(rule, undefined))),
  );
  if (lacking.length === 0) return allow();
  return deny(
    `ScopeTemplate ${template.metadata.name} grants permissions you do not hold cluster-wide, so you cannot hand them out: ${list(lacking)}. Remove them from the template, or ask for 'escalate' and 'bind' on clusterroles.`,
  );
}

/** A Kubernetes object name (DNS subdomain). */
const objectName = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export async function reviewInstance(
  client: KubeClient,
  templates: Informer<ScopeTemplate>,
  req: AdmissionRequest,
): Promise<Verdict> {
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return allow();
  if (sameSpec(req)) return allow();
  const instance = req.object as unknown as ScopeInstance;
  // A selector the controller could not evaluate would only fail later in its status: refused here, for
  // everyone (the API server checks selector keys and values of built-in objects only).
  const selector = isEmptySelector(instance.spec.namespaceSelector)
    ? undefined
    : compileSelector(instance.spec.namespaceSelector!);
  if (selector && !selector.ok)
    return deny(
      `ScopeInstance ${instance.metadata.name}: spec.namespaceSelector is invalid: ${selector.error}`,
      422,
      'Invalid',
    );
  const user = req.userInfo;
  const templateName = instance.spec.scopeTemplateName;
  // The cache may not have seen a template created a moment ago: ask the API server before refusing. Only
  // for a name an object can have: another one (slashes, dots alone) may read back as some other path.
  const nameable = typeof templateName === 'string' && objectName.test(templateName);
  const found = nameable
    ? (templates.get(templateName) ??
      (await client.get<ScopeTemplate>(ScopeTemplateCrd.type, templateName).catch(() => undefined)))
    : undefined;
  const template = found?.kind === undefined || found.kind === 'ScopeTemplate' ? found : undefined;
  if (!template?.spec) {
    return deny(
      `ScopeInstance ${instance.metadata.name}: ScopeTemplate ${templateName} does not exist; create the template first so its permissions can be checked`,
      404,
      'NotFound',
    );
  }
  if (await isClusterAdmin(client, user)) return allow();
  const listed = instance.spec.namespaces ?? [];
  const clusterScope = listed.length === 0 || !isEmptySelector(instance.spec.namespaceSelector);
  const problems: string[] = [];
  for (const role of template.spec.clusterRoles) {
    const roleName = clusterRoleName(templateName, role.generateName);
    const may = async (namespace: string | undefined) => {
      const bind = await subjectCan(client, user, {
        resource: {
          verb: 'bind',
          group: rbacGroup,
          resource: 'clusterroles',
          name: roleName,
          ...(namespace ? { namespace } : {}),
        },
      });
      if (bind) return [];
      return missing(
        client,
        user,
        role.rules.flatMap((rule) => permissionsOf(rule, namespace)),
      );
    };
    const atCluster = await may(undefined);
    if (atCluster.length === 0) continue;
    if (clusterScope) {
      const why =
        instance.spec.namespaceSelector && !isEmptySelector(instance.spec.namespaceSelector)
          ? 'a namespaceSelector can match namespaces created later, so it is checked cluster-wide'
          : 'no namespaces are listed, so it binds cluster-wide';
      problems.push(
        `role ${role.generateName} (ClusterRole ${roleName}) cluster-wide (${why}): missing ${list(atCluster, 5)}`,
      );
      continue;
    }
    if (listed.length > maxNamespaceChecks) {
      problems.push(
        `role ${role.generateName}: ${listed.length} namespaces are more than the ${maxNamespaceChecks} checked one by one, and you lack it cluster-wide: ${list(atCluster, 5)}`,
      );
      continue;
    }
    const perNamespace = await mapLimit(listed, 4, async (ns) => ({ ns, lacking: await may(ns) }));
    for (const { ns, lacking } of perNamespace) {
      if (lacking.length > 0)
        problems.push(`role ${role.generateName} in namespace ${ns}: missing ${list(lacking, 5)}`);
    }
  }
  if (problems.length === 0) return allow();
  return deny(
    `ScopeInstance ${instance.metadata.name} would grant permissions you may not grant: ${list(problems, 6)}. You need 'bind' on the ClusterRole in each target namespace, or to hold its permissions there; remove those namespaces or ask a cluster admin.`,
  );
}
