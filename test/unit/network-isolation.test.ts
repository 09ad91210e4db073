import { describe, expect, it } from 'vitest';
import type { Organization } from '../../src/crds/tenancy.ts';
import { effective } from '../../src/tenancy/policy/config.ts';
import { isolationOf, isolationPolicy } from '../../src/tenancy/policy/network-isolation.ts';

const config = (networkIsolation?: Record<string, unknown>) =>
  effective({ metadata: { name: 'cluster' }, spec: networkIsolation ? { networkIsolation } : {} } as never);
const org = { metadata: { name: 'acme', uid: 'u1' } } as Organization;
const ingress = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress' } } };

describe('network isolation of organizations', () => {
  it('isolates every organization by default, with nothing allowed from outside it', () => {
    expect(isolationOf(config(), 'acme')).toEqual({ isolated: true, allowFrom: [] });
    const policy = isolationPolicy(config(), org, []);
    expect(policy.spec.priority).toBe(900);
    expect(policy.spec.subject.namespaces).toEqual({
      matchLabels: { 'appuio.io/organization': 'acme' },
      matchExpressions: [
        { key: 'tenancy.tenantkit.io/not-for-tenants', operator: 'NotIn', values: ['true'] },
      ],
    });
    expect(policy.spec.ingress.map((r) => r.action)).toEqual(['Pass', 'Deny']);
    // The Deny rule names every namespace: nothing outside the organization gets through by default.
    expect(policy.spec.ingress.at(-1)?.from).toEqual([{ namespaces: {} }]);
  });

  it("adds the admin's allowances, for all organizations and for one, before the Deny rule", () => {
    const monitoring = { namespaceSelector: { matchLabels: { role: 'monitoring' } } };
    const cfg = config({ allowFrom: [ingress], organizations: [{ name: 'acme', allowFrom: [monitoring] }] });
    const wanted = isolationOf(cfg, 'acme');
    expect(wanted).toEqual({
      isolated: true,
      allowFrom: [ingress.namespaceSelector, monitoring.namespaceSelector],
    });
    expect(isolationOf(cfg, 'other')).toEqual({ isolated: true, allowFrom: [ingress.namespaceSelector] });
    const policy = isolationPolicy(cfg, org, wanted.isolated ? wanted.allowFrom : []);
    expect(policy.spec.ingress.map((r) => `${r.name}:${r.action}:${r.from.length}`)).toEqual([
      'same-organization:Pass:1',
      'allowed-by-the-cluster-admin:Pass:2',
      'other-namespaces:Deny:1',
    ]);
  });

  it('leaves an organization the admin exempts, or every one when isolation is off, unisolated', () => {
    expect(isolationOf(config({ organizations: [{ name: 'acme', isolated: false }] }), 'acme')).toEqual({
      isolated: false,
    });
    expect(isolationOf(config({ enabled: false }), 'acme')).toEqual({ isolated: false });
    // Settings given partly keep the defaults of the rest.
    expect(config({ allowFrom: [ingress] }).networkIsolation).toMatchObject({ enabled: true, priority: 900 });
  });
});
