// Scoped RBAC end to end: controllers and the escalation guard run as their own least-privilege
// identities; access is checked by acting as the bound service account through the API server.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ScopeInstance,
  ScopeInstanceCrd,
  type ScopeTemplate,
  ScopeTemplateCrd,
} from '../../src/crds/scopes.ts';
import { ApiError, type KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { scopes } from '../../src/scopes/index.ts';
import { managedBy, managedByLabel } from '../../src/scopes/model.ts';
import { bindingName, clusterRoleName } from '../../src/scopes/policy/names.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { type RunningCapability, runCapability } from '../harness/components.ts';

const cluster = await TestCluster.connect();
let running: RunningCapability;
beforeAll(async () => {
  running = await runCapability(cluster, scopes);
});
afterAll(() => cluster.cleanup());

const ours = `${managedByLabel}=${managedBy}`;

async function serviceAccountClient(namespace: string, name: string): Promise<KubeClient> {
  return (await cluster.serviceAccount(namespace, name)).client;
}

async function canList(client: KubeClient, namespace?: string): Promise<boolean> {
  try {
    await client.list(Resources.pods, namespace ? { namespace, limit: 1 } : { limit: 1 });
    return true;
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) return false;
    throw err;
  }
}

function template(
  name: string,
  subject: { namespace: string; name: string },
  rules?: unknown[],
): ScopeTemplate {
  return {
    metadata: { name },
    spec: {
      clusterRoles: [
        {
          generateName: 'pod-reader-',
          rules: (rules ?? [
            { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
          ]) as ScopeTemplate['spec']['clusterRoles'][0]['rules'],
          subjects: [{ kind: 'ServiceAccount', ...subject }],
        },
      ],
    },
  } as ScopeTemplate;
}

const createInstance = (name: string, spec: ScopeInstance['spec'], client = cluster.admin) =>
  client.create<ScopeInstance>(ScopeInstanceCrd.type, { metadata: { name }, spec } as ScopeInstance);

async function instanceReady(name: string) {
  const i = await cluster.admin.get<ScopeInstance>(ScopeInstanceCrd.type, name);
  const ready = i?.status?.conditions?.find((c) => c.type === 'Ready');
  return ready?.status === 'True' && ready.observedGeneration === i?.metadata.generation ? i : undefined;
}

async function ourBindings(instance: string) {
  const [rbs, crbs] = await Promise.all([
    cluster.admin.listAll<KubeObject>(Resources.roleBindings, { labelSelector: ours }),
    cluster.admin.listAll<KubeObject>(Resources.clusterRoleBindings, { labelSelector: ours }),
  ]);
  return [...rbs.items, ...crbs.items].filter(
    (b) => b.metadata.annotations?.['scopes.tenantkit.io/instance'] === instance,
  );
}

async function ourRoles(templateName: string) {
  const roles = await cluster.admin.listAll<KubeObject>(Resources.clusterRoles, { labelSelector: ours });
  return roles.items.filter((r) => r.metadata.annotations?.['scopes.tenantkit.io/template'] === templateName);
}

/**
 * A namespace `home` with a ServiceAccount `operator`, a template whose role lets it read Pods, and an
 * instance of that template with `spec(home)`.
 */
async function operatorScope(
  prefix: string,
  spec: (home: string) => Omit<ScopeInstance['spec'], 'scopeTemplateName'>,
) {
  const home = await cluster.namespace(prefix);
  const operator = await serviceAccountClient(home, 'operator');
  const tpl = cluster.unique('tpl');
  await cluster.admin.create(ScopeTemplateCrd.type, template(tpl, { namespace: home, name: 'operator' }));
  const inst = cluster.unique('inst');
  await createInstance(inst, { scopeTemplateName: tpl, ...spec(home) } as ScopeInstance['spec']);
  return { home, operator, tpl, inst };
}

describe('ScopeTemplate and ScopeInstance', () => {
  it('grants exactly the listed namespaces, cluster-wide when cleared, and cleans up on delete', async () => {
    const [a, b, c] = [
      await cluster.namespace('sa'),
      await cluster.namespace('sb'),
      await cluster.namespace('sc'),
    ];
    const operator = await serviceAccountClient(a, 'operator');
    const tpl = cluster.unique('tpl');
    const inst = cluster.unique('inst');
    await cluster.admin.create(ScopeTemplateCrd.type, template(tpl, { namespace: a, name: 'operator' }));
    expect(await ourRoles(tpl)).toHaveLength(0); // no instance references it yet

    await createInstance(inst, { scopeTemplateName: tpl, namespaces: [a, b] });
    await eventually(() => instanceReady(inst), { what: 'instance ready' });
    await eventually(async () => (await canList(operator, a)) && (await canList(operator, b)), {
      what: 'access in a and b',
    });
    expect(await canList(operator, c)).toBe(false);
    expect(await canList(operator)).toBe(false);
    const status = (await instanceReady(inst))!.status!;
    expect(status.namespaceCount).toBe(2);
    expect(status.bindingCount).toBe(2);
    expect(await ourRoles(tpl)).toHaveLength(1);

    await cluster.admin.patch(ScopeInstanceCrd.type, inst, undefined, { spec: { namespaces: null } });
    await eventually(async () => (await canList(operator)) && (await canList(operator, c)), {
      what: 'cluster-wide access',
    });
    await eventually(
      async () => {
        const bindings = await ourBindings(inst);
        return bindings.length === 1 && !bindings[0]!.metadata.namespace;
      },
      { what: 'RoleBindings replaced by one ClusterRoleBinding' },
    );

    await cluster.admin.delete(ScopeInstanceCrd.type, inst, undefined, { propagationPolicy: 'Background' });
    await eventually(async () => (await ourBindings(inst)).length === 0, {
      what: 'bindings collected',
      timeoutMs: 30_000,
    });
    await eventually(async () => (await ourRoles(tpl)).length === 0, {
      what: 'ClusterRoles removed with the last instance',
      timeoutMs: 30_000,
    });
    expect(await canList(operator)).toBe(false);
    expect(await canList(operator, a)).toBe(false);
  });

  it('follows a namespace selector as labels come and go', async () => {
    const target = await cluster.namespace('sel-target');
    const key = `scope-test-${cluster.unique('k')}`;
    const { operator, inst } = await operatorScope('sel-home', () => ({
      namespaceSelector: { matchLabels: { [key]: 'yes' } },
    }));
    await eventually(() => instanceReady(inst), { what: 'instance ready' });
    // A selector matching nothing means nowhere, never cluster-wide.
    expect(await canList(operator)).toBe(false);
    expect(await canList(operator, target)).toBe(false);

    await cluster.admin.patch(Resources.namespaces, target, undefined, {
      metadata: { labels: { [key]: 'yes' } },
    });
    const labelled = Date.now();
    await eventually(() => canList(operator, target), { what: 'access after labelling', timeoutMs: 10_000 });
    console.log(`selector grant took ${Date.now() - labelled} ms`);
    await cluster.admin.patch(Resources.namespaces, target, undefined, {
      metadata: { labels: { [key]: null } },
    });
    await eventually(async () => !(await canList(operator, target)), {
      what: 'access revoked after unlabelling',
      timeoutMs: 10_000,
    });
  });

  it('refuses a namespaceSelector whose key or value the API server would refuse (__proto__ among them), saying which and why', async () => {
    // The API server checks selector keys and values of built-in objects only. `__proto__` once reached
    // the controller as an empty selector (a cache dropped the key), which means cluster-wide.
    const home = await cluster.namespace('bad-selector');
    const tpl = cluster.unique('tpl');
    await cluster.admin.create(ScopeTemplateCrd.type, template(tpl, { namespace: home, name: 'operator' }));
    const cases: [string, RegExp][] = [
      [
        '{"matchLabels":{"__proto__":"x"}}',
        /matchLabels key "__proto__" is not a label key: its name must be/,
      ],
      [
        '{"matchLabels":{"Example.com/team":"a"}}',
        /matchLabels key "Example.com\/team" is not a label key: its prefix/,
      ],
      ['{"matchLabels":{"team":"a b"}}', /matchLabels value "a b" \(key team\) is not a label value/],
      [
        '{"matchExpressions":[{"key":"team","operator":"In","values":["-x"]}]}',
        /matchExpressions\[0\] \(key team\) value "-x" is not a label value/,
      ],
    ];
    for (const [selector, said] of cases) {
      const inst = cluster.unique('inst');
      const err = await createInstance(inst, {
        scopeTemplateName: tpl,
        namespaceSelector: JSON.parse(selector),
      }).catch((e: unknown) => e);
      expect(err, selector).toBeInstanceOf(ApiError);
      expect((err as ApiError).status, selector).toBe(422);
      expect((err as ApiError).message, selector).toMatch(said);
      expect(await ourBindings(inst)).toEqual([]);
    }
  });

  it('updates roles on a template edit without a moment of lost access', async () => {
    const { home: ns, operator, tpl, inst } = await operatorScope('edit', (home) => ({ namespaces: [home] }));
    await eventually(() => canList(operator, ns), { what: 'initial access' });

    // Probe continuously while the template changes twice: a rule edit, then a role rename.
    let lost = 0;
    let probes = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        probes++;
        if (!(await canList(operator, ns))) lost++;
      }
    })();
    await cluster.admin.patch(ScopeTemplateCrd.type, tpl, undefined, {
      spec: {
        clusterRoles: [
          {
            generateName: 'pod-reader-',
            rules: [
              { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
              { apiGroups: [''], resources: ['configmaps'], verbs: ['list'] },
            ],
            subjects: [{ kind: 'ServiceAccount', namespace: ns, name: 'operator' }],
          },
        ],
      },
    });
    await eventually(
      async () => {
        try {
          await operator.list(Resources.configMaps, { namespace: ns });
          return true;
        } catch {
          return false;
        }
      },
      { what: 'new rule effective' },
    );
    const renamed: ScopeTemplate['spec'] = {
      clusterRoles: [
        {
          generateName: 'reader-v2-',
          rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
          subjects: [{ kind: 'ServiceAccount', namespace: ns, name: 'operator' }],
        },
      ],
    };
    await cluster.admin.patch(ScopeTemplateCrd.type, tpl, undefined, { spec: renamed });
    await eventually(
      async () => {
        const roles = await ourRoles(tpl);
        const bindings = await ourBindings(inst);
        return (
          roles.length === 1 &&
          roles[0]!.metadata.name === clusterRoleName(tpl, 'reader-v2-') &&
          bindings.length === 1 &&
          (bindings[0] as KubeObject & { roleRef: { name: string } }).roleRef.name === roles[0]!.metadata.name
        );
      },
      { what: 'renamed role and rebound', timeoutMs: 30_000 },
    );
    // Keep probing a little after the rename is seen: the old role goes after the new binding lands, and
    // a loss then must show too. (On a fast run the edits themselves take only a few probes.)
    const seen = probes;
    await eventually(() => probes >= seen + 5, { what: 'five more probes after the rename' });
    probing = false;
    await probe;
    expect(lost).toBe(0);
  });

  it('reports missing namespaces and name clashes instead of failing or overwriting', async () => {
    const ns = await cluster.namespace('clash');
    const tpl = cluster.unique('tpl');
    // Someone else's ClusterRole already has the name the template would generate.
    const taken = clusterRoleName(tpl, 'pod-reader-');
    await cluster.admin.create(Resources.clusterRoles, {
      metadata: { name: taken, labels: { [managedByLabel]: managedBy } },
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }],
    } as KubeObject);
    cluster.defer(() => cluster.admin.delete(Resources.clusterRoles, taken));
    await cluster.admin.create(ScopeTemplateCrd.type, template(tpl, { namespace: ns, name: 'x' }));
    const inst = cluster.unique('inst');
    await createInstance(inst, { scopeTemplateName: tpl, namespaces: [ns, 'does-not-exist-ns'] });
    const conflicted = await eventually(
      async () => {
        const t = await cluster.admin.get<ScopeTemplate>(ScopeTemplateCrd.type, tpl);
        const ready = t?.status?.conditions?.find((c) => c.type === 'Ready');
        return ready?.reason === 'NameConflict' ? ready : undefined;
      },
      { what: 'template reports the clash' },
    );
    expect(conflicted.message).toContain(
      `ClusterRole ${taken} already exists and is not managed by tenantkit`,
    );
    const role = await cluster.admin.get<KubeObject & { rules: { resources: string[] }[] }>(
      Resources.clusterRoles,
      taken,
    );
    expect(role?.rules[0]?.resources).toEqual(['secrets']);
    expect(role?.metadata.ownerReferences).toBeUndefined();

    const instance = await eventually(
      async () => {
        const i = await cluster.admin.get<ScopeInstance>(ScopeInstanceCrd.type, inst);
        return i?.status?.failedNamespaces?.length ? i : undefined;
      },
      { what: 'instance reports the missing namespace' },
    );
    expect(instance.status?.failedNamespaces).toContainEqual({
      namespace: 'does-not-exist-ns',
      reason: 'NamespaceNotFound',
      message: 'namespace does-not-exist-ns does not exist',
    });
    expect(instance.status?.namespaceCount).toBe(1);
    expect(instance.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('PartiallyBound');
  });

  it('repairs drift: an edited or deleted binding comes back', async () => {
    const ns = await cluster.namespace('drift');
    const tpl = cluster.unique('tpl');
    await cluster.admin.create(ScopeTemplateCrd.type, template(tpl, { namespace: ns, name: 'op' }));
    const inst = cluster.unique('inst');
    await createInstance(inst, { scopeTemplateName: tpl, namespaces: [ns] });
    const [binding] = await eventually(
      async () => {
        const b = await ourBindings(inst);
        return b.length === 1 ? b : undefined;
      },
      { what: 'binding created' },
    );
    const name = binding!.metadata.name!;
    await cluster.admin.patch(Resources.roleBindings, name, ns, {
      subjects: [{ kind: 'User', name: 'intruder', apiGroup: 'rbac.authorization.k8s.io' }],
    });
    await eventually(
      async () => {
        const b = await cluster.admin.get<KubeObject & { subjects: { name: string }[] }>(
          Resources.roleBindings,
          name,
          ns,
        );
        return b?.subjects.length === 1 && b.subjects[0]!.name === 'op';
      },
      { what: 'edited binding restored' },
    );
    await cluster.admin.delete(Resources.roleBindings, name, ns);
    await eventually(async () => (await cluster.admin.get(Resources.roleBindings, name, ns)) !== undefined, {
      what: 'deleted binding recreated',
    });
  });

  it('denies a tenant who may create instances but does not hold the permissions, and says why', async () => {
    const ns = await cluster.namespace('esc');
    const other = await cluster.namespace('esc-other');
    const tpl = cluster.unique('tpl');
    await cluster.admin.create(
      ScopeTemplateCrd.type,
      template(tpl, { namespace: ns, name: 'op' }, [
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] },
      ]),
    );
    const user = cluster.unique('mallory');
    await cluster.grant(
      { kind: 'User', name: user },
      {
        rules: [
          {
            apiGroups: ['operators.coreos.com'],
            resources: ['scopeinstances', 'scopetemplates'],
            verbs: ['create', 'get', 'list'],
          },
        ],
      },
    );
    // She may read secrets in her own namespace only.
    await cluster.grant(
      { kind: 'User', name: user },
      { rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] }] },
      ns,
    );
    const mallory = await cluster.user(user);
    const denial = async (promise: Promise<unknown>) =>
      promise.then(
        () => undefined,
        (e: unknown) => e as ApiError,
      );

    // Escape attempt 1: another namespace.
    const intoOther = await denial(
      createInstance(cluster.unique('i'), { scopeTemplateName: tpl, namespaces: [other] }, mallory),
    );
    expect(intoOther?.status).toBe(403);
    expect(intoOther?.message).toContain(`in namespace ${other}: missing get secrets`);
    expect(intoOther?.message).toContain("You need 'bind' on the ClusterRole");
    // Escape attempt 2: cluster-wide (no namespaces) and a selector (could match any namespace later).
    const clusterWide = await denial(
      createInstance(cluster.unique('i'), { scopeTemplateName: tpl }, mallory),
    );
    expect(clusterWide?.message).toContain('no namespaces are listed, so it binds cluster-wide');
    const bySelector = await denial(
      createInstance(
        cluster.unique('i'),
        { scopeTemplateName: tpl, namespaceSelector: { matchLabels: { a: 'b' } } },
        mallory,
      ),
    );
    expect(bySelector?.message).toContain('a namespaceSelector can match namespaces created later');
    // Escape attempt 3: a template with rules she does not hold, or that escalate RBAC.
    const bigTemplate = await denial(
      mallory.create(
        ScopeTemplateCrd.type,
        template(cluster.unique('t'), { namespace: ns, name: 'op' }, [
          { apiGroups: [''], resources: ['nodes'], verbs: ['delete'] },
        ]),
      ),
    );
    expect(bigTemplate?.message).toContain('delete nodes');
    const escalating = await denial(
      mallory.create(
        ScopeTemplateCrd.type,
        template(cluster.unique('t'), { namespace: ns, name: 'op' }, [
          {
            apiGroups: ['rbac.authorization.k8s.io'],
            resources: ['clusterroles'],
            verbs: ['bind', 'escalate'],
          },
        ]),
      ),
    );
    expect(escalating?.message).toContain('only a cluster admin may grant RBAC-escalating permissions');
    // A template naming a missing ScopeTemplate cannot be checked, so it is refused.
    const missing = await denial(
      createInstance(
        cluster.unique('i'),
        { scopeTemplateName: 'no-such-template', namespaces: [ns] },
        mallory,
      ),
    );
    expect(missing?.message).toContain('ScopeTemplate no-such-template does not exist');

    // Within her own namespace she holds the rules: allowed.
    const allowed = cluster.unique('i');
    await createInstance(allowed, { scopeTemplateName: tpl, namespaces: [ns] }, mallory);
    await eventually(() => instanceReady(allowed), { what: 'her instance is bound' });
    for (const name of [allowed]) cluster.defer(() => cluster.admin.delete(ScopeInstanceCrd.type, name));
  });

  it('does not bind a namespace that was deleted and re-created by someone else, until an entitled re-apply', async () => {
    const home = await cluster.namespace('reuse-home');
    const tpl = cluster.unique('tpl');
    // Subjects alice controls: a ServiceAccount in her namespace.
    await cluster.admin.create(ScopeTemplateCrd.type, template(tpl, { namespace: home, name: 'op' }));
    const sa = await serviceAccountClient(home, 'op');
    const scopeRights = {
      rules: [
        {
          apiGroups: ['operators.coreos.com'],
          resources: ['scopeinstances', 'scopetemplates'],
          verbs: ['create', 'get', 'list', 'update', 'patch'],
        },
      ],
    };
    const podReader = { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }] };
    const [aliceName, bobName] = [cluster.unique('alice'), cluster.unique('bob')];
    await cluster.grant({ kind: 'User', name: aliceName }, scopeRights);
    await cluster.grant({ kind: 'User', name: bobName }, scopeRights);
    const alice = await cluster.user(aliceName);
    const bob = await cluster.user(bobName);

    // Alice holds the rules in her namespace and binds her ServiceAccount there.
    const reused = cluster.unique('reuse');
    await cluster.admin.create(Resources.namespaces, { metadata: { name: reused } });
    cluster.defer(() => cluster.admin.delete(Resources.namespaces, reused));
    await cluster.grant({ kind: 'User', name: aliceName }, podReader, reused);
    const inst = cluster.unique('inst');
    await createInstance(inst, { scopeTemplateName: tpl, namespaces: [reused] }, alice);
    cluster.defer(() => cluster.admin.delete(ScopeInstanceCrd.type, inst));
    await eventually(() => instanceReady(inst), { what: 'alice’s instance is bound' });
    expect(await canList(sa, reused)).toBe(true);

    // The namespace goes; another tenant's namespace of the same name comes, with bob entitled in it.
    await cluster.admin.delete(Resources.namespaces, reused);
    await eventually(async () => (await cluster.admin.get(Resources.namespaces, reused)) === undefined, {
      what: 'the namespace is gone',
      timeoutMs: 60_000,
    });
    await cluster.admin.create(Resources.namespaces, { metadata: { name: reused } });
    await cluster.grant({ kind: 'User', name: bobName }, podReader, reused);
    const replaced = await eventually(
      async () => {
        const i = await cluster.admin.get<ScopeInstance>(ScopeInstanceCrd.type, inst);
        const ready = i?.status?.conditions?.find((c) => c.type === 'Ready');
        return i && ready?.reason === 'NamespaceReplaced' ? { i, ready } : undefined;
      },
      { what: 'the instance reports the replaced namespace' },
    );
    expect(replaced.ready.status).toBe('False');
    expect(replaced.i.status?.failedNamespaces).toContainEqual(
      expect.objectContaining({ namespace: reused, reason: 'NamespaceReplaced' }),
    );
    expect(replaced.i.status?.failedNamespaces?.[0]?.message).toContain('checked again');
    // No binding for alice's subjects in the new namespace, and her ServiceAccount cannot read there.
    expect((await ourBindings(inst)).filter((b) => b.metadata.namespace === reused)).toEqual([]);
    expect(await canList(sa, reused)).toBe(false);

    // Bob, entitled in the new namespace, changes the spec: the guard checks it again and it binds.
    // (A spec change is what the guard checks; he adds his own namespace.)
    const bobHome = await cluster.namespace('reuse-bob');
    await cluster.grant({ kind: 'User', name: bobName }, podReader, bobHome);
    await bob.patch(ScopeInstanceCrd.type, inst, undefined, { spec: { namespaces: [reused, bobHome] } });
    await eventually(() => instanceReady(inst), { what: 'bound again after the re-apply' });
    expect(await canList(sa, reused)).toBe(true);
  });

  it('ends exact, without duplicates or orphans, when the controller process is killed at random points', async () => {
    await running.stopControllers();
    const label = cluster.unique('bulk');
    const namespaces: string[] = [];
    for (let i = 0; i < 40; i++) namespaces.push(await cluster.namespace('bulk', { [label]: 'yes' }));
    const tpl = cluster.unique('tpl');
    const role = (generateName: string) => ({
      generateName,
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
      subjects: [{ kind: 'ServiceAccount' as const, namespace: namespaces[0]!, name: 'op' }],
    });
    await cluster.admin.create(ScopeTemplateCrd.type, {
      metadata: { name: tpl },
      spec: { clusterRoles: [role('a-'), role('b-'), role('c-')] },
    } as ScopeTemplate);
    const inst = cluster.unique('inst');
    await createInstance(inst, {
      scopeTemplateName: tpl,
      namespaceSelector: { matchLabels: { [label]: 'yes' } },
    });

    const cli = join(dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.ts');
    const startProcess = () =>
      spawn(
        process.execPath,
        [cli, 'controllers', '--no-leader-elect', '--metrics-port=0', '--capabilities=scopes'],
        {
          env: { ...process.env, KUBECONFIG: running.controllerKubeconfig, LOG_LEVEL: 'warn' },
          stdio: 'ignore',
        },
      );
    for (let round = 0; round < 5; round++) {
      const child = startProcess();
      await new Promise((r) => setTimeout(r, 700 + Math.floor(Math.random() * 1500)));
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      // Change the desired state between crashes: rename a role, then move half the namespaces out.
      if (round === 1) {
        await cluster.admin.patch(ScopeTemplateCrd.type, tpl, undefined, {
          spec: { clusterRoles: [role('a-'), role('b2-'), role('c-')] },
        });
      }
      if (round === 3) {
        for (const ns of namespaces.slice(20))
          await cluster.admin.patch(Resources.namespaces, ns, undefined, {
            metadata: { labels: { [label]: null } },
          });
      }
    }
    const final = startProcess();
    cluster.defer(async () => {
      final.kill('SIGKILL');
    });
    await eventually(() => instanceReady(inst), {
      what: 'instance converged after crashes',
      timeoutMs: 60_000,
    });
    const expectedRoles = ['a-', 'b2-', 'c-'].map((g) => clusterRoleName(tpl, g)).sort();
    await eventually(
      async () =>
        JSON.stringify((await ourRoles(tpl)).map((r) => r.metadata.name).sort()) ===
        JSON.stringify(expectedRoles),
      {
        what: 'exactly the three current roles',
        timeoutMs: 30_000,
      },
    );
    const expectedBindings = namespaces
      .slice(0, 20)
      .flatMap((ns) => expectedRoles.map((r) => `${ns}/${bindingName(inst, r)}`))
      .sort();
    await eventually(
      async () => {
        const actual = (await ourBindings(inst))
          .map((b) => `${b.metadata.namespace}/${b.metadata.name}`)
          .sort();
        return JSON.stringify(actual) === JSON.stringify(expectedBindings);
      },
      { what: 'exactly 60 bindings: 20 namespaces x 3 roles', timeoutMs: 30_000 },
    );
    final.kill('SIGKILL');
    running.startControllers();
  }, 120_000);
});
