// Namespace policies for unprivileged users and service accounts:
// - reserved namespaces (reserved names, or marked not for tenants): tenants may neither create nor
//   change them;
// - a namespace that belongs to no organization is assigned to one by a privileged user only: a tenant
//   may not adopt an admin's namespace by labelling it;
// - only allowed labels and annotations may be set, changed or removed;
// - every namespace belongs to an organization the requester belongs to (a service account: the
//   organization of its own namespace); a missing organization label is filled in by the mutating
//   webhook from the user's default organization;
// - changing the organization label transfers the namespace and needs membership in both;
// - an organization owns at most its quota of namespaces, checked on create and on transfer;
// - the labels and annotations its organization's guardrails enforce are filled in on create, and tenants
//   may not change or remove them (the namespace metadata controller puts them on existing namespaces).
import type { Organization } from '../../crds/tenancy.ts';
import type { UserInfo } from '../../kube/access.ts';
import type { KubeObject } from '../../kube/resources.ts';
import { type AdmissionRequest, allow, deny, mutate, type Verdict } from '../../webhook/admission.ts';
import type { ConfigSource, Directory, EffectiveConfig, PrivilegeCheck } from '../model.ts';
import { matchesAny, reservedFor } from '../policy/config.ts';
import { enforcedChanges, guardrailsOf, type OrganizationGuardrails } from '../policy/guardrails.ts';
import { namespaceQuotaOf } from '../policy/namespace-quota.ts';
import type { QuotaLedger } from '../quota/ledger.ts';
import { serviceAccountNamespace } from './identity.ts';

export interface NamespacePolicyDeps {
  config: ConfigSource;
  privileged: PrivilegeCheck;
  directory: Directory;
  quota: QuotaLedger;
}

/** Metadata the API server or kubectl set on their own; never a tenant's choice to police. */
const builtinLabels = ['kubernetes.io/metadata.name'];
const builtinAnnotations = ['kubectl.kubernetes.io/last-applied-configuration'];

function changedKeys(before: Record<string, string> = {}, after: Record<string, string> = {}): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((k) => before[k] !== after[k]).sort();
}

function metadataProblems(
  config: EffectiveConfig,
  before: KubeObject | undefined,
  after: KubeObject,
  enforced: OrganizationGuardrails[],
): string[] {
  const problems: string[] = [];
  // A key set to the value an organization's guardrails enforce is tenantkit's doing, not the tenant's.
  const isEnforced = (field: 'namespaceLabels' | 'namespaceAnnotations', key: string, value?: string) =>
    value !== undefined && enforced.some((g) => g.rules[field]?.[key] === value);
  const labels = changedKeys(before?.metadata.labels, after.metadata.labels).filter(
    (k) =>
      k !== config.organizationLabel &&
      !builtinLabels.includes(k) &&
      !matchesAny(config.allowedLabels, k) &&
      !isEnforced('namespaceLabels', k, after.metadata.labels?.[k]),
  );
  // The pod-default overrides are the tenant's to choose (within the admin's bounds).
  const overrides = [config.runOnceActiveDeadlineAnnotation, config.nodeSelectorAnnotation];
  const annotations = changedKeys(before?.metadata.annotations, after.metadata.annotations).filter(
    (k) =>
      !builtinAnnotations.includes(k) &&
      !overrides.includes(k) &&
      !matchesAny(config.allowedAnnotations, k) &&
      !isEnforced('namespaceAnnotations', k, after.metadata.annotations?.[k]),
  );
  if (labels.length)
    problems.push(`labels ${labels.join(', ')} may not be set, changed or removed by tenants`);
  if (annotations.length)
    problems.push(`annotations ${annotations.join(', ')} may not be set, changed or removed by tenants`);
  return problems;
}

type OrgCheck = { ok: true; organization: Organization } | { ok: false; message: string };

/** May `user` put a namespace into organization `name`? */
async function checkOrganization(
  deps: NamespacePolicyDeps,
  config: EffectiveConfig,
  user: UserInfo,
  name: string,
): Promise<OrgCheck> {
  const organization = await deps.directory.currentOrganization(name);
  if (!organization) {
    return {
      ok: false,
      message: `organization "${name}" does not exist; set label ${config.organizationLabel} to an organization you belong to`,
    };
  }
  const saNamespace = serviceAccountNamespace(user.username);
  if (saNamespace !== undefined) {
    const own = deps.directory.namespace(saNamespace)?.metadata.labels?.[config.organizationLabel];
    if (own !== name) {
      return {
        ok: false,
        message: `service account ${user.username} belongs to organization "${own ?? '(none)'}" (the organization of namespace ${saNamespace}) and may only create namespaces for it, not for "${name}"`,
      };
    }
    return { ok: true, organization };
  }
  if (!deps.directory.isMember(organization, user)) {
    return {
      ok: false,
      message: `you (${user.username}) are not a member of organization "${name}"; ask one of its members to add you, or choose an organization you belong to`,
    };
  }
  return { ok: true, organization };
}

async function checkQuota(
  deps: NamespacePolicyDeps,
  config: EffectiveConfig,
  organization: Organization,
  namespace: string,
  dryRun: boolean,
): Promise<string | undefined> {
  const limit = namespaceQuotaOf(deps.directory, organization, config);
  const decision = await deps.quota.reserve({
    organization: organization.metadata.name!,
    namespace,
    label: config.organizationLabel,
    limit,
    ledgerNamespace: config.quotaNamespace,
    dryRun,
    holdMs: config.namespaceQuotaHoldSeconds * 1000,
  });
  if (decision.ok) return undefined;
  const held = decision.held ? ` (${heldSlots(decision.held, decision.freesAt, config)})` : '';
  return `organization "${organization.metadata.name}" already owns ${decision.used} of its ${limit} namespaces (namespace quota)${held}; delete a namespace it no longer needs, or ask a cluster admin to raise spec.namespaceQuota of the Organization`;
}

/** Why some slots count although their namespaces do not exist, and when the first of them frees. */
function heldSlots(held: number, freesAt: number | undefined, config: EffectiveConfig): string {
  const inS = Math.max(1, Math.ceil(((freesAt ?? Date.now()) - Date.now()) / 1000));
  const at = new Date(Date.now() + inS * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  return `${held} of them ${held === 1 ? 'is a slot' : 'are slots'} held for namespaces admitted within the last ${config.namespaceQuotaHoldSeconds} s that do not exist yet: creates still on their way, or admission reviews no create followed; the first frees at ${at} (in ${inS} s) unless its namespace appears: retry then`;
}

/** The guardrails of the named organizations (unset names skipped), each once. */
async function enforcedBy(
  deps: NamespacePolicyDeps,
  config: EffectiveConfig,
  names: (string | undefined)[],
): Promise<OrganizationGuardrails[]> {
  if (config.disabledPolicies.includes('guardrails')) return [];
  const unique = [...new Set(names.filter((n): n is string => Boolean(n)))];
  return Promise.all(
    unique.map(async (n) => guardrailsOf(config, n, await deps.directory.currentOrganization(n))),
  );
}

/** The labels and annotations the owning organization requires that this change would alter or remove. */
function requiredMetadataChanges(
  owner: Awaited<ReturnType<typeof enforcedBy>>[number],
  previous: KubeObject | undefined,
  namespace: KubeObject,
): string[] {
  const { namespaceLabels: labels, namespaceAnnotations: annotations } = owner.rules;
  return [
    ...enforcedChanges(labels, previous?.metadata.labels, namespace.metadata.labels).map(
      (k) => `label ${k}=${labels![k]} (${owner.source('namespaceLabels')})`,
    ),
    ...enforcedChanges(annotations, previous?.metadata.annotations, namespace.metadata.annotations).map(
      (k) => `annotation ${k}=${annotations![k]} (${owner.source('namespaceAnnotations')})`,
    ),
  ];
}

const denial = (rule: string, problems: string[]) => deny(`namespace policy ${rule}: ${problems.join('; ')}`);

export async function validateNamespace(deps: NamespacePolicyDeps, req: AdmissionRequest): Promise<Verdict> {
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return allow();
  const config = deps.config();
  if (deps.privileged(req.userInfo, config)) return allow();
  const namespace = req.object as KubeObject;
  const name = namespace.metadata.name ?? req.name ?? '';
  const previous = req.operation === 'UPDATE' ? (req.oldObject as KubeObject) : undefined;

  // Reserved for the cluster: tenants neither create nor change it (judged on the stored namespace and
  // on the result, so that neither adding nor removing the not-for-tenants label is a way in).
  const reserved = reservedFor(config, namespace) ?? (previous && reservedFor(config, previous));
  if (reserved) {
    return denial('reserved-names', [
      previous
        ? `namespace ${name} is reserved for the cluster (${reserved}): tenants may not change it; ask a cluster admin to make the change`
        : `the name "${name}" is reserved (${reserved}); choose another name`,
    ]);
  }
  const source = previous?.metadata.labels?.[config.organizationLabel];
  if (previous && !source) {
    // Nobody gave it to an organization: labelling it would make the labeller's organization its admin.
    return denial('unowned-namespace', [
      `namespace ${name} belongs to no organization, and only a cluster admin may assign it to one; ask a cluster admin to run: kubectl label namespace ${name} ${config.organizationLabel}=<organization>`,
    ]);
  }
  const target = namespace.metadata.labels?.[config.organizationLabel];
  const enforced = await enforcedBy(deps, config, [source, target]);
  const owner = enforced.find((g) => g.organization === (source ?? target));
  if (owner) {
    const changed = requiredMetadataChanges(owner, previous, namespace);
    if (changed.length)
      return denial('organization-guardrails', [
        `organization "${owner.organization}" requires ${changed.join(', ')} on its namespaces: tenants may not change or remove them; a cluster admin changes what an organization requires`,
      ]);
  }
  const metadata = metadataProblems(config, previous, namespace, enforced);
  if (metadata.length) {
    return denial('namespace-metadata', [
      ...metadata,
      `allowed labels: ${[config.organizationLabel, ...config.allowedLabels].join(', ')}; allowed annotations: ${config.allowedAnnotations.join(', ') || '(none)'}`,
    ]);
  }

  if (!target) {
    return denial('organization', [
      previous
        ? `label ${config.organizationLabel} may not be removed: every namespace belongs to an organization`
        : `set label ${config.organizationLabel} to your organization (you have no default organization to fill in)`,
    ]);
  }
  if (previous && source) {
    // Any change to a namespace needs a say in the organization that owns it.
    const owner = await checkOrganization(deps, config, req.userInfo, source);
    if (!owner.ok)
      return denial('organization', [`namespace ${name} belongs to "${source}": ${owner.message}`]);
  }
  if (previous && target === source) return allow();

  const into = await checkOrganization(deps, config, req.userInfo, target);
  if (!into.ok) return denial('organization', [into.message]);
  if (previous && source) {
    // A transfer needs a say on both sides.
    const from = await checkOrganization(deps, config, req.userInfo, source);
    if (!from.ok)
      return denial('organization-transfer', [
        `to move namespace ${name} out of "${source}": ${from.message}`,
      ]);
  }
  const overQuota = await checkQuota(deps, config, into.organization, name, req.dryRun === true);
  if (overQuota) return denial('namespace-quota', [overQuota]);
  return allow();
}

/** A new namespace with its organization label filled in from the requester's default organization. */
function withOrganization(deps: NamespacePolicyDeps, req: AdmissionRequest): KubeObject {
  const namespace = req.object as KubeObject;
  const config = deps.config();
  if (deps.privileged(req.userInfo, config)) return namespace;
  if (namespace.metadata.labels?.[config.organizationLabel]) return namespace;
  const saNamespace = serviceAccountNamespace(req.userInfo.username);
  const organization =
    saNamespace !== undefined
      ? deps.directory.namespace(saNamespace)?.metadata.labels?.[config.organizationLabel]
      : deps.directory.defaultOrganization(req.userInfo.username);
  if (!organization) return namespace;
  return {
    ...namespace,
    metadata: {
      ...namespace.metadata,
      labels: { ...namespace.metadata.labels, [config.organizationLabel]: organization },
    },
  };
}

/** A new namespace with the labels and annotations its organization's guardrails require. */
async function withEnforcedMetadata(
  deps: NamespacePolicyDeps,
  req: AdmissionRequest,
  namespace: KubeObject,
): Promise<KubeObject> {
  const config = deps.config();
  const organization = namespace.metadata.labels?.[config.organizationLabel];
  if (!organization || deps.privileged(req.userInfo, config) || reservedFor(config, namespace))
    return namespace;
  const [g] = await enforcedBy(deps, config, [organization]);
  const labels = g?.rules.namespaceLabels ?? {};
  const annotations = g?.rules.namespaceAnnotations ?? {};
  if (Object.keys(labels).length === 0 && Object.keys(annotations).length === 0) return namespace;
  return {
    ...namespace,
    metadata: {
      ...namespace.metadata,
      labels: { ...namespace.metadata.labels, ...labels },
      ...(Object.keys(annotations).length
        ? { annotations: { ...namespace.metadata.annotations, ...annotations } }
        : {}),
    },
  };
}

/**
 * A new namespace in one webhook call: the organization filled in (policy namespace-organization), then
 * the namespace policy checked on the result (policy namespace-policy); each can be switched off on its
 * own. The webhook is reinvoked when a later mutating webhook changes the namespace, so the namespace
 * that is stored is the one checked (the quota counts a name once, however often it is admitted).
 */
export async function admitNewNamespace(
  deps: NamespacePolicyDeps,
  req: AdmissionRequest,
  policies: { organization: boolean; policy: boolean },
): Promise<Verdict> {
  if (req.operation !== 'CREATE') return allow();
  const namespace = req.object as KubeObject;
  const organized = policies.organization ? withOrganization(deps, req) : namespace;
  const defaulted = await withEnforcedMetadata(deps, req, organized);
  if (policies.policy) {
    const verdict = await validateNamespace(deps, { ...req, object: defaulted });
    if (!verdict.allowed) return verdict;
  }
  return defaulted === namespace ? allow() : mutate(namespace, defaulted);
}
