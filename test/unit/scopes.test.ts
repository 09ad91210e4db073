import { describe, expect, it } from 'vitest';
import type { ScopeInstance, ScopeTemplate } from '../../src/api/scopes.ts';
import {
  bindingUpToDate,
  desiredBinding,
  desiredClusterRole,
  roleUpToDate,
} from '../../src/scopes/desired.ts';
import { permissionsOf, privilegedRules } from '../../src/scopes/escalation.ts';
import { bindingName, clusterRoleName } from '../../src/scopes/names.ts';

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
