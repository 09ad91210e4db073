// Search authorization against the real API server. The core is a differential test: random RBAC
// graphs (aggregated ClusterRoles, Roles, both kinds of bindings, Users, Groups and ServiceAccounts,
// wildcards, resourceNames, subresource rules, verbs other than list) are created, and for thousands of
// random (user, namespace, resource, name) checks the provider's answer must equal kube-apiserver's own
// (a SubjectAccessReview for `list`). The provider runs as a service account holding exactly
// accessProviderRules, so those rules are proven sufficient too.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crdManifest } from '../../src/crds/schema.ts';
import { mapLimit, subjectCan } from '../../src/kube/access.ts';
import { ApiError, type KubeClient } from '../../src/kube/client.ts';
import { installCrds } from '../../src/kube/crds.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { Manager } from '../../src/kube/manager.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import {
  AccessTypes,
  accessProviderRules,
  accessVerificationRules,
  allows,
  compareWithRulesReview,
  ManagedClusterCrdName,
  ManagedClusterType,
  RbacAccessProvider,
  type RbacRule,
} from '../../src/search/access/index.ts';
import type { SearchUser } from '../../src/search/model.ts';
import { ManagedClusterCrd } from '../fixtures/managed-cluster.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';

const cluster = await TestCluster.connect();
const stop = new AbortController();
let provider: RbacAccessProvider;
let verifier: KubeClient;

/** A client for a fresh service account holding exactly `rules` cluster-wide. */
async function identityWith(rules: unknown[]): Promise<KubeClient> {
  const namespace = await cluster.namespace('sa-id');
  const name = cluster.unique('search');
  const { client } = await cluster.serviceAccount(namespace, name);
  await cluster.grant({ kind: 'ServiceAccount', name, namespace }, { rules });
  return client;
}

beforeAll(async () => {
  provider = new RbacAccessProvider({
    client: await identityWith(accessProviderRules),
    logger: silentLogger,
  });
  provider.start(stop.signal).catch(() => {});
  await provider.waitForSync();
  verifier = await identityWith(accessVerificationRules);
});
afterAll(async () => {
  stop.abort();
  await cluster.cleanup();
});

const apply = { fieldManager: 'search-access-test', force: true };
const rbacGroup = 'rbac.authorization.k8s.io';
const withAuthenticated = (groups: string[]) => [...new Set([...groups, 'system:authenticated'])];

async function createClusterRole(object: KubeObject): Promise<void> {
  await cluster.admin.apply(Resources.clusterRoles, object, apply);
  cluster.defer(() => cluster.admin.delete(Resources.clusterRoles, object.metadata.name!));
}
async function createClusterRoleBinding(object: KubeObject): Promise<void> {
  await cluster.admin.apply(Resources.clusterRoleBindings, object, apply);
  cluster.defer(() => cluster.admin.delete(Resources.clusterRoleBindings, object.metadata.name!));
}

/** What kube-apiserver says: may `user` list `resource` (named `name`) in `namespace`? */
function apiServerAllows(
  user: SearchUser,
  attrs: { namespace?: string; group: string; resource: string; name?: string },
): Promise<boolean> {
  return subjectCan(
    cluster.admin,
    {
      username: user.username,
      groups: withAuthenticated(user.groups),
      ...(user.uid ? { uid: user.uid } : {}),
    },
    { resource: { verb: 'list', ...attrs } },
  );
}

/** A small seeded generator, so a failing run can be replayed with SEARCH_ACCESS_SEED. */
function random(seed: number) {
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const int = (n: number) => Math.floor(next() * n);
  const one = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const some = <T>(xs: readonly T[], max: number): T[] => [
    ...new Set(Array.from({ length: 1 + int(max) }, () => one(xs))),
  ];
  return { next, int, one, some };
}

describe('differential test against SubjectAccessReview', () => {
  it('agrees with kube-apiserver on 10,000 random list checks over random RBAC graphs', {
    timeout: 120_000,
  }, async () => {
    const seed = Number(process.env.SEARCH_ACCESS_SEED ?? Date.now() % 1_000_000_007);
    const rnd = random(seed);
    const started = Date.now();
    const p = cluster.unique('dt');
    const customGroup = `${p}.test.tenantkit.io`;
    const namespaces = await Promise.all(Array.from({ length: 6 }, () => cluster.namespace('dt')));
    const groups = Array.from({ length: 4 }, (_, i) => `${p}-g${i}`);
    const serviceAccounts = Array.from({ length: 3 }, (_, i) => ({
      name: `${p}-sa${i}`,
      namespace: rnd.one(namespaces),
    }));
    const users: SearchUser[] = [
      ...Array.from({ length: 8 }, (_, i) => ({
        username: `${p}-u${i}`,
        // Half of them without system:authenticated: the provider must add it, as authentication does.
        groups: [...rnd.some(groups, 2), ...(i % 2 ? ['system:authenticated'] : [])],
        uid: i % 3 ? `uid-${i}` : '',
      })),
      ...serviceAccounts.map((sa) => ({
        username: `system:serviceaccount:${sa.namespace}:${sa.name}`,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${sa.namespace}`],
      })),
      { username: `${p}-root`, groups: ['system:masters'] },
      { username: `${p}-nobody`, groups: [] },
    ];

    const ruleGroups = ['', 'apps', 'batch', customGroup, '*'];
    const ruleResources = ['pods', 'configmaps', 'secrets', 'deployments', 'jobs', 'widgets', 'nodes', '*'];
    const subresourceRules = ['pods/log', '*/scale', 'deployments/scale', 'pods/*'];
    const verbs = ['list', 'get', 'watch', '*', 'create', 'delete', 'deletecollection'];
    const randomRule = (): RbacRule => ({
      verbs: rnd.some(verbs, 3),
      apiGroups: rnd.next() < 0.15 ? ['*'] : rnd.some(ruleGroups.slice(0, 4), 2),
      resources: [
        ...(rnd.next() < 0.12 ? ['*'] : rnd.some(ruleResources.slice(0, 7), 3)),
        ...(rnd.next() < 0.3 ? [rnd.one(subresourceRules)] : []),
      ],
      ...(rnd.next() < 0.25 ? { resourceNames: rnd.some(['a', 'b', 'c'], 2) } : {}),
    });
    const randomRules = () => Array.from({ length: 1 + rnd.int(3) }, randomRule);

    // ClusterRoles, some labelled into two aggregated ClusterRoles that kube-controller-manager fills.
    const aggLabel = (x: string) => `${p}.test.tenantkit.io/agg-${x}`;
    const clusterRoles = Array.from({ length: 10 }, (_, i) => ({
      name: `${p}-cr${i}`,
      rules: randomRules(),
      labels: Object.fromEntries(
        rnd.some(['a', 'b', 'none'], 2).flatMap((x) => (x === 'none' ? [] : [[aggLabel(x), 'true']])),
      ) as Record<string, string>,
    }));
    for (const cr of clusterRoles) {
      await createClusterRole({
        metadata: { name: cr.name, labels: cr.labels },
        rules: cr.rules,
      } as KubeObject);
    }
    const aggregated = ['a', 'b'].map((x) => `${p}-agg-${x}`);
    for (const x of ['a', 'b']) {
      await createClusterRole({
        metadata: { name: `${p}-agg-${x}` },
        aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [aggLabel(x)]: 'true' } }] },
        rules: [],
      } as KubeObject);
    }
    const clusterRoleRefs = [...clusterRoles.map((c) => c.name), ...aggregated, 'view', `${p}-missing`];

    const subject = (namespace?: string) => {
      const kind = rnd.int(4);
      if (kind === 0) return { kind: 'User', apiGroup: rbacGroup, name: rnd.one(users.slice(0, 8)).username };
      if (kind === 1) return { kind: 'Group', apiGroup: rbacGroup, name: rnd.one(groups) };
      // In a RoleBinding, leave the namespace out half the time: it then means the binding's own (so
      // prefer an account that lives there, or the subject would rarely match anyone).
      const local = serviceAccounts.filter((a) => a.namespace === namespace);
      if (namespace && kind === 2) {
        const sa = local.length > 0 && rnd.next() < 0.7 ? rnd.one(local) : rnd.one(serviceAccounts);
        return { kind: 'ServiceAccount', name: sa.name };
      }
      const sa = rnd.one(serviceAccounts);
      return { kind: 'ServiceAccount', name: sa.name, namespace: sa.namespace };
    };
    let objects = 0;
    for (let i = 0; i < 5; i++) {
      await createClusterRoleBinding({
        metadata: { name: `${p}-crb${i}` },
        roleRef: { apiGroup: rbacGroup, kind: 'ClusterRole', name: rnd.one(clusterRoleRefs) },
        subjects: Array.from({ length: 1 + rnd.int(2) }, () => subject()),
      } as KubeObject);
      objects++;
    }
    for (const namespace of namespaces) {
      for (let j = 0; j < 2; j++) {
        await cluster.admin.apply(
          Resources.roles,
          { metadata: { name: `r${j}`, namespace }, rules: randomRules() } as KubeObject,
          apply,
        );
        objects++;
      }
      for (let j = 0; j < 4; j++) {
        const kind = rnd.next() < 0.45 ? 'Role' : 'ClusterRole';
        await cluster.admin.apply(
          Resources.roleBindings,
          {
            metadata: { name: `rb${j}`, namespace },
            roleRef: {
              apiGroup: rbacGroup,
              kind,
              name: kind === 'Role' ? rnd.one(['r0', 'r1', 'r-missing']) : rnd.one(clusterRoleRefs),
            },
            subjects: Array.from({ length: 1 + rnd.int(3) }, () => subject(namespace)),
          } as KubeObject,
          apply,
        );
        objects++;
      }
    }
    objects += clusterRoles.length + aggregated.length;

    // Wait for the aggregation controller: each aggregated role holds exactly its members' rules.
    const ruleKey = (r: RbacRule) =>
      JSON.stringify([
        r.verbs,
        r.apiGroups ?? [],
        r.resources ?? [],
        r.resourceNames ?? [],
        r.nonResourceURLs ?? [],
      ]);
    for (const x of ['a', 'b']) {
      const expected = new Set(
        clusterRoles.filter((c) => c.labels[aggLabel(x)]).flatMap((c) => c.rules.map(ruleKey)),
      );
      await eventually(
        async () => {
          const stored = await cluster.admin.get<KubeObject & { rules?: RbacRule[] }>(
            Resources.clusterRoles,
            `${p}-agg-${x}`,
          );
          const got = new Set((stored?.rules ?? []).map(ruleKey));
          return got.size === expected.size && [...expected].every((k) => got.has(k));
        },
        { what: `aggregated ClusterRole ${x} filled`, timeoutMs: 30_000 },
      );
    }

    // A sentinel written after everything else, in each of the four kinds: once both the API server's
    // authorizer and the provider see it, they have seen every earlier change of those kinds.
    const sentinel: SearchUser = { username: `${p}-sentinel`, groups: [] };
    const sentinelRules = [{ apiGroups: [customGroup], resources: ['sentinels'], verbs: ['list'] }];
    await cluster.grant({ kind: 'User', name: sentinel.username }, { rules: sentinelRules });
    await cluster.grant({ kind: 'User', name: sentinel.username }, { rules: sentinelRules }, namespaces[0]);
    const sentinelAttrs = { group: customGroup, resource: 'sentinels' };
    await eventually(
      async () =>
        (await apiServerAllows(sentinel, sentinelAttrs)) &&
        allows(provider.forUser(sentinel), sentinelAttrs) &&
        allows(provider.forUser(sentinel), { ...sentinelAttrs, namespace: namespaces[0]! }),
      { what: 'RBAC state seen by both sides', timeoutMs: 30_000 },
    );
    const setupMs = Date.now() - started;

    const checkGroups: [string, string][] = [
      ['', 'pods'],
      ['', 'configmaps'],
      ['', 'secrets'],
      ['', 'services'],
      ['apps', 'deployments'],
      ['apps', 'replicasets'],
      ['apps', 'pods'],
      ['batch', 'jobs'],
      [customGroup, 'widgets'],
      ['', 'nodes'],
      ['other.example.com', 'things'],
    ];
    const checks = Array.from({ length: 10_000 }, () => {
      const [group, resource] = rnd.one(checkGroups);
      const namespace = rnd.next() < 0.2 ? undefined : rnd.next() < 0.05 ? `${p}-ghost` : rnd.one(namespaces);
      const name = rnd.next() < 0.4 ? undefined : rnd.one(['a', 'b', 'c', 'z']);
      return {
        user: rnd.one(users),
        attrs: {
          group,
          resource,
          ...(namespace ? { namespace } : {}),
          ...(name ? { name } : {}),
        },
      };
    });
    const checksStarted = Date.now();
    const results = await mapLimit(checks, 24, async (c) => ({
      ...c,
      expected: await apiServerAllows(c.user, c.attrs),
      actual: allows(provider.forUser(c.user), c.attrs),
    }));
    const checksMs = Date.now() - checksStarted;
    const mismatches = results.filter((r) => r.expected !== r.actual);
    const allowed = results.filter((r) => r.expected).length;
    console.log(
      `[search-access] differential: seed ${seed}, ${objects} RBAC objects, setup ${setupMs} ms; ` +
        `${checks.length} checks (${allowed} allowed) in ${checksMs} ms; ${mismatches.length} mismatches`,
    );
    // Both answers must occur often, or the test would prove little.
    expect(allowed).toBeGreaterThan(500);
    expect(checks.length - allowed).toBeGreaterThan(500);
    expect(
      mismatches.slice(0, 5).map((m) => ({
        ...m,
        set: provider.forUser(m.user),
        seed,
      })),
    ).toEqual([]);
  });
});

describe('cache and invalidation', () => {
  it('a revoked binding is gone from the next answer after its watch event', async () => {
    const namespace = await cluster.namespace('revoke');
    const user: SearchUser = { username: cluster.unique('revoked'), groups: [] };
    await cluster.grant(
      { kind: 'User', name: user.username },
      { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }], name: 'pods' },
      namespace,
    );
    const pods = { namespace, group: '', resource: 'pods' };
    await eventually(() => allows(provider.forUser(user), pods), { what: 'grant seen' });
    let notified = 0;
    const unsubscribe = provider.onChange(() => notified++);
    const deleted = Date.now();
    await cluster.admin.delete(Resources.roleBindings, 'pods', namespace);
    // The next call after the event must already answer from the new state: poll tightly and measure.
    await eventually(() => !allows(provider.forUser(user), pods), {
      intervalMs: 2,
      timeoutMs: 5_000,
      what: 'revoked',
    });
    const delay = Date.now() - deleted;
    unsubscribe();
    console.log(`[search-access] revocation visible ${delay} ms after the delete was sent`);
    expect(delay).toBeLessThan(1_000);
    expect(notified).toBeGreaterThan(0);
    // The API server's authorizer follows RBAC on its own watch, which may lag the provider's.
    await eventually(async () => !(await apiServerAllows(user, pods)), {
      what: "the API server's authorizer sees the revocation",
    });
  });

  it('users with empty uids and different groups never share a cached set', async () => {
    const namespace = await cluster.namespace('uid');
    const granted = cluster.unique('granted');
    await cluster.grant(
      { kind: 'Group', name: granted },
      { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }] },
      namespace,
    );
    const pods = { namespace, group: '', resource: 'pods' };
    const inGroup: SearchUser = { username: 'same-name', uid: '', groups: [granted] };
    const notInGroup: SearchUser = { username: 'same-name', uid: '', groups: [cluster.unique('other')] };
    await eventually(() => allows(provider.forUser(inGroup), pods), { what: 'grant seen' });
    const other = provider.forUser(notInGroup);
    expect(allows(other, pods)).toBe(false);
    expect(other.digest).not.toBe(provider.forUser(inGroup).digest);
    expect(await apiServerAllows(notInGroup, pods)).toBe(false);
  });
});

describe('identities', () => {
  it('a ServiceAccount token user, as TokenReview reports it, sees what it may list', async () => {
    const namespace = await cluster.namespace('sa-user');
    const elsewhere = await cluster.namespace('sa-else');
    const { client, token } = await cluster.serviceAccount(namespace, 'reader');
    // The subject names no namespace: in a RoleBinding that means the binding's own.
    await cluster.admin.apply(
      Resources.roles,
      {
        metadata: { name: 'cm', namespace },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }],
      } as KubeObject,
      apply,
    );
    await cluster.admin.apply(
      Resources.roleBindings,
      {
        metadata: { name: 'cm', namespace },
        roleRef: { apiGroup: rbacGroup, kind: 'Role', name: 'cm' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader' }],
      } as KubeObject,
      apply,
    );
    type TokenReview = KubeObject & { spec: { token: string }; status: { user: SearchUser } };
    const review = await cluster.admin.create<TokenReview>(Resources.tokenReviews, {
      metadata: {},
      spec: { token },
    } as TokenReview);
    const user = review.status.user;
    expect(user.username).toBe(`system:serviceaccount:${namespace}:reader`);
    const configMaps = { group: '', resource: 'configmaps' };
    await eventually(() => allows(provider.forUser(user), { ...configMaps, namespace }), {
      what: 'grant seen',
    });
    expect(allows(provider.forUser(user), { ...configMaps, namespace: elsewhere })).toBe(false);
    // The real API server, asked by the service account itself, agrees.
    await client.list(Resources.configMaps, { namespace });
    await expect(client.list(Resources.configMaps, { namespace: elsewhere })).rejects.toThrow(ApiError);
  });
});

describe('managed clusters', () => {
  async function managedCluster(name: string): Promise<void> {
    await cluster.admin.create(ManagedClusterType, { metadata: { name }, spec: {} } as KubeObject);
    cluster.defer(() => cluster.admin.delete(ManagedClusterType, name));
    await cluster.admin.create(Resources.namespaces, { metadata: { name } });
    cluster.defer(() => cluster.admin.delete(Resources.namespaces, name));
  }

  it('are visible to who may create managedclusterviews in the cluster namespace', async () => {
    const [c1, c2] = [cluster.unique('mc'), cluster.unique('mc')] as [string, string];
    await managedCluster(c1);
    await managedCluster(c2);
    const viewer: SearchUser = { username: cluster.unique('mc-viewer'), groups: [] };
    await cluster.grant(
      { kind: 'User', name: viewer.username },
      {
        rules: [
          {
            apiGroups: ['view.open-cluster-management.io'],
            resources: ['managedclusterviews'],
            verbs: ['create'],
          },
        ],
      },
      c1,
    );
    await eventually(() => provider.forUser(viewer).managedClusters.includes(c1), {
      what: 'cluster visible',
    });
    const set = provider.forUser(viewer);
    expect(set.managedClusters).toEqual([c1]);
    expect(allows(set, { cluster: c1, namespace: 'x', group: 'apps', resource: 'deployments' })).toBe(true);
    expect(allows(set, { cluster: c1, namespace: 'x', group: '', resource: 'secrets' })).toBe(false);
    expect(allows(set, { cluster: c2, namespace: 'x', group: 'apps', resource: 'deployments' })).toBe(false);
    // The API server's authorizer follows RBAC on its own watch, which may lag the provider's.
    expect(
      await eventually(
        () =>
          subjectCan(
            cluster.admin,
            { username: viewer.username, groups: ['system:authenticated'] },
            {
              resource: {
                verb: 'create',
                group: 'view.open-cluster-management.io',
                resource: 'managedclusterviews',
                namespace: c1,
              },
            },
          ),
        { what: "the API server's authorizer sees the grant" },
      ),
    ).toBe(true);

    // A deleted ManagedCluster is no longer visible.
    await cluster.admin.delete(ManagedClusterType, c1);
    await eventually(() => provider.forUser(viewer).managedClusters.length === 0, { what: 'cluster gone' });
  });
  it('follow the ManagedCluster API as it goes away and comes back (discovery on CRD changes)', async () => {
    const everywhere: SearchUser = { username: cluster.unique('mc-admin'), groups: [] };
    await cluster.grant(
      { kind: 'User', name: everywhere.username },
      {
        rules: [
          {
            apiGroups: ['view.open-cluster-management.io'],
            resources: ['managedclusterviews'],
            verbs: ['create'],
          },
        ],
      },
    );
    const before = cluster.unique('mc');
    await managedCluster(before);
    await eventually(() => provider.forUser(everywhere).managedClusters.includes(before), {
      what: 'cluster visible',
    });

    const crd = await cluster.admin.get<KubeObject>(
      Resources.customResourceDefinitions,
      ManagedClusterCrdName,
    );
    const manifest = crdManifest(ManagedClusterCrd) as unknown as KubeObject;
    try {
      await cluster.admin.delete(Resources.customResourceDefinitions, ManagedClusterCrdName);
      await eventually(
        async () => !(await cluster.admin.get(Resources.customResourceDefinitions, ManagedClusterCrdName)),
        {
          what: 'CRD deleted',
          timeoutMs: 30_000,
        },
      );
      await eventually(() => provider.forUser(everywhere).managedClusters.length === 0, {
        what: 'clusters gone',
      });
    } finally {
      if (crd) await installCrds(cluster.admin, [manifest]);
    }
    const after = cluster.unique('mc');
    await managedCluster(after);
    await eventually(() => provider.forUser(everywhere).managedClusters.includes(after), {
      what: 'cluster visible after the API came back',
      timeoutMs: 20_000,
    });
  });
});

describe('verification against SelfSubjectRulesReview', () => {
  it('finds no difference for an RBAC-only cluster, and reports a difference when there is one', async () => {
    const namespace = await cluster.namespace('verify');
    const user: SearchUser = {
      username: cluster.unique('verified'),
      groups: [cluster.unique('grp')],
      uid: 'u-1',
    };
    await cluster.grant(
      { kind: 'User', name: user.username },
      {
        rules: [
          { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['list'], resourceNames: ['a', 'b'] },
        ],
      },
      namespace,
    );
    await cluster.grant(
      { kind: 'Group', name: user.groups[0]! },
      {
        rules: [
          { apiGroups: ['', 'apps'], resources: ['configmaps', 'deployments'], verbs: ['get', 'list'] },
        ],
      },
    );
    // Both grants (the Role and the ClusterRole, which arrive through different watches) must be seen.
    await eventually(
      () =>
        allows(provider.forUser(user), { namespace, group: '', resource: 'pods', name: 'a' }) &&
        allows(provider.forUser(user), { namespace, group: 'apps', resource: 'deployments' }),
      { what: 'grants seen' },
    );
    const set = provider.forUser(user);
    const same = await compareWithRulesReview(verifier, user, set, namespace);
    expect(same.incomplete).toBe(false);
    expect(same.differences).toEqual([]);

    // A set missing the cluster-wide grants (as a non-RBAC authorizer could cause) is caught.
    const doctored = { ...set, clusterWide: [] };
    const diff = await compareWithRulesReview(verifier, user, doctored, namespace);
    expect(diff.differences).toContainEqual({
      apiGroup: 'apps',
      resource: 'deployments',
      computed: 'none',
      reviewed: 'all',
    });
  });
});

describe('runtime wiring', () => {
  it('runs on a Manager, sharing its informers', async () => {
    const manager = new Manager({
      client: cluster.admin,
      logger: silentLogger,
      component: 'search-access-test',
    });
    const shared = new RbacAccessProvider({ client: cluster.admin, manager });
    const managerStop = new AbortController();
    const running = Promise.all([manager.start(managerStop.signal), shared.start(managerStop.signal)]);
    try {
      await shared.waitForSync();
      expect(manager.informer(AccessTypes.clusterRoleBindings).hasSynced()).toBe(true);
      const root = shared.forUser({ username: 'root', groups: ['system:masters'] });
      expect(root.all).toBe(true);
      const someone = { username: cluster.unique('someone'), groups: [] };
      // Every authenticated user may create SelfSubjectAccessReviews but list nothing by default.
      expect(shared.forUser(someone).all).toBe(false);
      expect(allows(shared.forUser(someone), { group: '', resource: 'pods' })).toBe(false);
    } finally {
      managerStop.abort();
      await running;
    }
    await sleep(0);
  });
});
