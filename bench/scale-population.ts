// The tenant population of bench/scale.ts, created through the real API server: organizations (each with
// a UsageProfile and a ScopeInstance selecting its namespaces by label) and their namespaces, each holding
// what a team's namespace holds: RoleBindings, ConfigMaps, Secrets, Pods (never scheduled: objects, not
// workloads), the profile's quota and limits (made by tenantkit), and a NonAdminBackup in every tenth.
import { NonAdminBackupCrd } from '../src/crds/backup.ts';
import { ScopeInstanceCrd, ScopeTemplateCrd } from '../src/crds/scopes.ts';
import { OrganizationCrd, TenancyConfigCrd, UsageProfileCrd } from '../src/crds/tenancy.ts';
import { mapLimit } from '../src/kube/access.ts';
import { isAlreadyExists, type KubeClient } from '../src/kube/client.ts';
import { type KubeObject, Resources, type ResourceType } from '../src/kube/resources.ts';

export const organizationLabel = 'appuio.io/organization';
export const profile = 'bench-profile';
export const scopeTemplate = 'bench-scope';
/** The scheduler no Pod of the population names: its Pods stay Pending and cost the node nothing. */
const noScheduler = 'bench-unscheduled';
const apply = { fieldManager: 'bench', force: true };

export const organizationName = (i: number) => `org-${String(i).padStart(4, '0')}`;
export const namespaceName = (i: number) => `team-${String(i).padStart(5, '0')}`;

/** Objects each namespace gets, by kind (the profile's two come from tenantkit). */
export const perNamespace = { RoleBinding: 10, ConfigMap: 10, Secret: 5, Pod: 5 };
export const objectsPerNamespace = Object.values(perNamespace).reduce((a, b) => a + b, 0);

/** The cluster-wide parts: the TenancyConfig, the UsageProfile and the ScopeTemplate. */
export async function applyFoundation(admin: KubeClient): Promise<void> {
  const objects: [ResourceType, object][] = [
    [
      TenancyConfigCrd.type,
      { metadata: { name: 'cluster' }, spec: { organizationLabel, defaultNamespaceQuota: 100000 } },
    ],
    [
      UsageProfileCrd.type,
      {
        metadata: { name: profile },
        spec: {
          namespaceCount: 100000,
          resources: {
            'organization-compute': {
              apiVersion: 'v1',
              kind: 'ResourceQuota',
              spec: { hard: { 'requests.cpu': '40', 'requests.memory': '160Gi' } },
            },
            'organization-defaults': {
              apiVersion: 'v1',
              kind: 'LimitRange',
              spec: { limits: [{ type: 'Container', defaultRequest: { cpu: '10m', memory: '16Mi' } }] },
            },
          },
        },
      },
    ],
    [
      ScopeTemplateCrd.type,
      {
        metadata: { name: scopeTemplate },
        spec: {
          clusterRoles: [
            {
              generateName: 'bench-scope-',
              rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }],
              subjects: [{ kind: 'Group', name: 'bench-auditors' }],
            },
          ],
        },
      },
    ],
  ];
  for (const [type, object] of objects) await admin.apply(type, object as KubeObject, apply);
}

/** An organization: its members, the profile, and a ScopeInstance over its namespaces. */
export async function applyOrganization(admin: KubeClient, name: string, members: string[]): Promise<void> {
  await admin.apply(
    OrganizationCrd.type,
    {
      metadata: { name },
      spec: { members: { users: members }, usageProfile: profile, namespaceQuota: 100000 },
    } as KubeObject,
    apply,
  );
  await admin.apply(
    ScopeInstanceCrd.type,
    {
      metadata: { name },
      spec: {
        scopeTemplateName: scopeTemplate,
        namespaceSelector: { matchLabels: { [organizationLabel]: name } },
      },
    } as KubeObject,
    apply,
  );
}

const create = (client: KubeClient, type: ResourceType, object: object) =>
  client.create(type, object as KubeObject).catch((err: unknown) => {
    if (!isAlreadyExists(err)) throw err;
  });

const roleOf = (k: number) => (k % 5 === 0 ? 'admin' : k % 5 === 1 ? 'edit' : 'view');

/** Namespace `i` of organization `org`, with its objects. Returns the objects created. */
export async function createTeamNamespace(admin: KubeClient, i: number, org: string, image: string) {
  const namespace = namespaceName(i);
  await create(admin, Resources.namespaces, {
    metadata: { name: namespace, labels: { [organizationLabel]: org } },
  });
  const meta = (name: string) => ({ name, namespace, labels: { app: 'team', tier: `t${i % 3}` } });
  for (let k = 0; k < perNamespace.RoleBinding; k++)
    await create(admin, Resources.roleBindings, {
      metadata: meta(`binding-${k}`),
      // A mix like a team's: admins, editors, and most bindings read-only.
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleOf(k) },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: `viewer-${i}-${k}` }],
    });
  for (let k = 0; k < perNamespace.ConfigMap; k++)
    await create(admin, Resources.configMaps, { metadata: meta(`config-${k}`), data: { key: `value-${k}` } });
  for (let k = 0; k < perNamespace.Secret; k++)
    await create(admin, Resources.secrets, {
      metadata: meta(`secret-${k}`),
      stringData: { password: `secret-${i}-${k}` },
    });
  for (let k = 0; k < perNamespace.Pod; k++)
    await create(admin, Resources.pods, {
      metadata: meta(`pod-${k}`),
      spec: {
        schedulerName: noScheduler,
        containers: [{ name: 'c', image, resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
      },
    });
  if (i % 10 === 0)
    await create(admin, NonAdminBackupCrd.type, {
      metadata: { name: 'nightly', namespace },
      spec: { backupSpec: {} },
    });
  return objectsPerNamespace + 1 + (i % 10 === 0 ? 1 : 0);
}

/**
 * Grows the population to `organizations` and `namespaces` (from `from` namespaces), 10 namespaces per
 * organization in turn; `progress` is told every 10 s.
 */
export async function grow(
  admin: KubeClient,
  options: {
    from: { organizations: number; namespaces: number };
    to: { organizations: number; namespaces: number };
    concurrency: number;
    image: string;
    progress: (line: string) => void;
  },
): Promise<{ objects: number; seconds: number }> {
  const { from, to } = options;
  const started = performance.now();
  for (let o = from.organizations; o < to.organizations; o++)
    await applyOrganization(admin, organizationName(o), [`member-${o}`]);
  let objects = 0;
  const report = setInterval(() => {
    const s = (performance.now() - started) / 1000;
    options.progress(`  ${objects} objects created in ${s.toFixed(0)} s (${(objects / s).toFixed(0)}/s)`);
  }, 10_000);
  try {
    const indexes = Array.from({ length: to.namespaces - from.namespaces }, (_, k) => from.namespaces + k);
    await mapLimit(indexes, options.concurrency, async (i) => {
      const made = await createTeamNamespace(admin, i, organizationName(i % to.organizations), options.image);
      objects += made;
    });
  } finally {
    clearInterval(report);
  }
  return { objects, seconds: (performance.now() - started) / 1000 };
}
