import { describe, expect, it } from 'vitest';
import type { ScopeInstance, ScopeTemplate } from '../../src/crds/scopes.ts';
import { permissionsOf, privilegedRules } from '../../src/scopes/admission/escalation.ts';
import { planBindings } from '../../src/scopes/controllers/instance.ts';
import type { Namespace } from '../../src/scopes/model.ts';
import {
  bindingUpToDate,
  desiredBinding,
  desiredClusterRole,
  roleUpToDate,
} from '../../src/scopes/policy/desired.ts';
import { bindingName, clusterRoleName } from '../../src/scopes/policy/names.ts';

const template = {
  metadata: { name: 'tpl', uid: 'uid-t' },
  spec: {
    clusterRoles: [
      {
        generateName: 'reader-',
        rules: [{ apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get', 'list'] }],
        subjects: [
          { kind: 'ServiceAccount', namespace: 'ops', name: 'op' },
          { kind: 'Group', name: 'team' },
        ],
      },
    ],
  },
} as ScopeTemplate;
const instance = {
  metadata: { name: 'inst', uid: 'uid-i' },
  spec: { scopeTemplateName: 'tpl' },
} as ScopeInstance;
const role = template.spec.clusterRoles[0]!;

describe('scope names', () => {
  it('are deterministic and keep the generateName prefix', () => {
    expect(clusterRoleName('tpl', 'reader-')).toBe(clusterRoleName('tpl', 'reader-'));
    expect(clusterRoleName('tpl', 'reader-')).toMatch(/^reader-[0-9a-f]{10}$/);
  });

  it('never collide across templates, roles or instances', () => {
    const names = new Set([
      clusterRoleName('a', 'x-'),
      clusterRoleName('b', 'x-'),
      clusterRoleName('a', 'y-'),
      bindingName('i', clusterRoleName('a', 'x-')),
      bindingName('j', clusterRoleName('a', 'x-')),
      bindingName('i', clusterRoleName('b', 'x-')),
    ]);
    expect(names.size).toBe(6);
  });

  it('stay valid object names for very long inputs', () => {
    const long = 'a'.repeat(300);
    expect(clusterRoleName(long, long).length).toBeLessThanOrEqual(253);
    expect(bindingName(long, long).length).toBeLessThanOrEqual(253);
  });
});

describe('desired objects', () => {
  it('binds the template role with RBAC-correct subjects and an owner reference', () => {
    const b = desiredBinding(instance, template, role, 'ns1');
    expect(b.kind).toBe('RoleBinding');
    expect(b.metadata.namespace).toBe('ns1');
    expect(b.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: clusterRoleName('tpl', 'reader-'),
    });
    expect(b.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'op', namespace: 'ops' },
      { kind: 'Group', name: 'team', apiGroup: 'rbac.authorization.k8s.io' },
    ]);
    expect(b.metadata.ownerReferences?.[0]).toMatchObject({
      uid: 'uid-i',
      kind: 'ScopeInstance',
      controller: true,
    });
    expect(desiredBinding(instance, template, role, undefined).kind).toBe('ClusterRoleBinding');
  });

  it('sees a live object as up to date regardless of key order, and notices real drift', () => {
    const want = desiredClusterRole(template, role);
    const live = JSON.parse(JSON.stringify(want));
    live.rules = [{ verbs: ['get', 'list'], resources: ['pods', 'pods/log'], apiGroups: [''] }];
    live.metadata.labels.extra = 'kept';
    expect(roleUpToDate(live, want)).toBe(true);
    live.rules[0].verbs.push('delete');
    expect(roleUpToDate(live, want)).toBe(false);

    const binding = desiredBinding(instance, template, role, 'ns1');
    const other = JSON.parse(JSON.stringify(binding));
    expect(bindingUpToDate(other, binding)).toBe(true);
    other.metadata.ownerReferences = [];
    expect(bindingUpToDate(other, binding)).toBe(false);
  });
});

describe('escalation guard rules', () => {
  it('expands a rule into single permissions, with subresources and names', () => {
    const texts = permissionsOf(
      { apiGroups: ['', 'apps'], resources: ['pods/log'], resourceNames: ['a'], verbs: ['get'] },
      'ns',
    ).map((p) => p.query);
    expect(texts).toEqual([
      {
        resource: {
          verb: 'get',
          group: '',
          resource: 'pods',
          subresource: 'log',
          name: 'a',
          namespace: 'ns',
        },
      },
      {
        resource: {
          verb: 'get',
          group: 'apps',
          resource: 'pods',
          subresource: 'log',
          name: 'a',
          namespace: 'ns',
        },
      },
    ]);
  });

  it('checks non-resource URLs only at cluster scope', () => {
    const rule = { nonResourceURLs: ['/metrics'], verbs: ['get'] };
    expect(permissionsOf(rule, undefined).map((p) => p.text)).toEqual(['get /metrics']);
    expect(permissionsOf(rule, 'ns')).toEqual([]);
  });

  it('flags rules that escalate RBAC or impersonate', () => {
    const flagged = (rules: ScopeTemplate['spec']['clusterRoles'][0]['rules']) =>
      privilegedRules({ generateName: 'r-', rules, subjects: [{ kind: 'User', name: 'u' }] });
    expect(
      flagged([{ apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['bind'] }]),
    ).toHaveLength(1);
    expect(flagged([{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }])).toHaveLength(1);
    expect(flagged([{ apiGroups: [''], resources: ['users'], verbs: ['impersonate'] }])).toHaveLength(1);
    expect(
      flagged([{ apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'], verbs: ['get', 'list'] }]),
    ).toEqual([]);
    expect(flagged([{ apiGroups: [''], resources: ['pods'], verbs: ['*'] }])).toEqual([]);
  });
});

describe('planBindings (what an instance wants, before anything is written)', () => {
  const ns = (name: string, labels: Record<string, string> = {}, terminating = false): Namespace => ({
    metadata: { name, labels, ...(terminating ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
  });
  const all = [ns('a', { team: 'x' }), ns('b', { team: 'x' }), ns('c'), ns('gone', { team: 'x' }, true)];
  const lookup = (name: string) => all.find((n) => n.metadata.name === name);
  const plan = (spec: Partial<ScopeInstance['spec']>, tpl: ScopeTemplate | undefined = template) =>
    planBindings({ ...instance, spec: { ...instance.spec, ...spec } }, tpl, lookup, () => all);

  it('binds cluster-wide only when neither namespaces nor a selector limit the scope', () => {
    const p = plan({});
    expect(p.clusterWide).toBe(true);
    expect(p.desired.map((b) => b.metadata.namespace)).toEqual([undefined]);
  });

  it('binds listed and selected namespaces once each, and reports missing and terminating ones', () => {
    const p = plan({ namespaces: ['c', 'missing', 'a'], namespaceSelector: { matchLabels: { team: 'x' } } });
    expect(p.clusterWide).toBe(false);
    expect(p.targets).toEqual(['a', 'b', 'c']);
    expect(p.desired.map((b) => b.metadata.namespace)).toEqual(['a', 'b', 'c']);
    expect(p.failures.map((f) => [f.namespace, f.reason])).toEqual([
      ['gone', 'NamespaceTerminating'],
      ['missing', 'NamespaceNotFound'],
    ]);
  });

  it('binds nowhere when a selector matches nothing, and explains a missing template or a bad selector', () => {
    expect(plan({ namespaceSelector: { matchLabels: { team: 'none' } } })).toMatchObject({
      clusterWide: false,
      desired: [],
    });
    expect(planBindings(instance, undefined, lookup, () => all).problem).toMatchObject({
      reason: 'TemplateNotFound',
    });
    const bad = plan({
      namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'Sideways' }] } as never,
    });
    expect(bad.problem).toMatchObject({
      reason: 'InvalidSelector',
      message: expect.stringContaining('namespaceSelector'),
    });
    expect(bad.desired).toEqual([]);
  });

  it('pins listed namespaces by UID per spec generation and does not bind a replaced one', () => {
    const live = (uid: string) => (name: string) => ({ metadata: { name, uid } }) as Namespace;
    const at = (generation: number, pinned?: { gen: number; uid: string }) =>
      ({
        ...instance,
        metadata: { ...instance.metadata, generation },
        spec: { scopeTemplateName: 'tpl', namespaces: ['r'] },
        ...(pinned
          ? {
              status: {
                boundNamespaceUIDs: [{ namespace: 'r', uid: pinned.uid }],
                boundNamespaceUIDsGeneration: pinned.gen,
              },
            }
          : {}),
      }) as ScopeInstance;
    // First sight: the live UID is recorded and bound.
    const first = planBindings(at(1), template, live('u1'), () => []);
    expect(first.pins).toEqual([{ namespace: 'r', uid: 'u1' }]);
    expect(first.targets).toEqual(['r']);
    // Same generation, another namespace of that name: not bound, the pin is kept.
    const replaced = planBindings(at(1, { gen: 1, uid: 'u1' }), template, live('u2'), () => []);
    expect(replaced.targets).toEqual([]);
    expect(replaced.desired).toEqual([]);
    expect(replaced.pins).toEqual([{ namespace: 'r', uid: 'u1' }]);
    expect(replaced.failures).toMatchObject([{ namespace: 'r', reason: 'NamespaceReplaced' }]);
    // A missing template keeps the pins too.
    expect(planBindings(at(1, { gen: 1, uid: 'u1' }), undefined, live('u2'), () => []).pins).toEqual([
      { namespace: 'r', uid: 'u1' },
    ]);
    // A newer (re-admitted) generation records the live UID again.
    const readmitted = planBindings(at(2, { gen: 1, uid: 'u1' }), template, live('u2'), () => []);
    expect(readmitted.pins).toEqual([{ namespace: 'r', uid: 'u2' }]);
    expect(readmitted.targets).toEqual(['r']);
  });
});
