import { describe, expect, it } from 'vitest';
import type { TenancyConfig } from '../../src/crds/tenancy.ts';
import { parseQuantity } from '../../src/kube/quantity.ts';
import { claimVolumeVerdict } from '../../src/tenancy/admission/claim-volume.ts';
import { serviceAccountNamespace } from '../../src/tenancy/admission/identity.ts';
import { parseSelector } from '../../src/tenancy/admission/pod-policy.ts';
import {
  defaults,
  effective,
  matchesAny,
  unknownConfigKeys,
  wildcard,
} from '../../src/tenancy/policy/config.ts';

describe('tenancy configuration', () => {
  it('matches wildcards against whole values only', () => {
    expect(wildcard('kube-*', 'kube-system')).toBe(true);
    expect(wildcard('kube-*', 'my-kube-system')).toBe(false);
    expect(wildcard('*.example.com/*', 'a.example.com/x')).toBe(true);
    expect(wildcard('a.b', 'axb')).toBe(false);
    expect(
      matchesAny(
        ['x', 'system:serviceaccount:tenantkit-system:*'],
        'system:serviceaccount:tenantkit-system:webhooks',
      ),
    ).toBe(true);
  });

  it('fills defaults and keeps what the admin set', () => {
    const cfg = effective({
      metadata: { name: 'cluster' },
      spec: { defaultNamespaceQuota: 3, organizationLabel: 'example.org/owner' },
    } as TenancyConfig);
    expect(cfg.defaultNamespaceQuota).toBe(3);
    expect(cfg.organizationLabel).toBe('example.org/owner');
    expect(cfg.reservedNamespaces).toEqual(defaults.reservedNamespaces);
    expect(effective(undefined)).toEqual(defaults);
  });

  it('names unknown configuration keys', () => {
    expect(unknownConfigKeys({ allowedLabel: [], defaultNamespaceQuota: 1 })).toEqual(['allowedLabel']);
    expect(unknownConfigKeys(undefined)).toEqual([]);
  });

  it('recognises service-account user names', () => {
    expect(serviceAccountNamespace('system:serviceaccount:team-a:builder')).toBe('team-a');
    expect(serviceAccountNamespace('alice')).toBeUndefined();
  });
});

describe('pod policy parsing', () => {
  it('parses Kubernetes quantities', () => {
    expect(parseQuantity('500m')).toBe(0.5);
    expect(parseQuantity('2Gi')).toBe(2 * 2 ** 30);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity('128M')).toBe(128e6);
    expect(parseQuantity('lots')).toBeUndefined();
  });

  it('parses node-selector annotations and explains bad ones', () => {
    expect(parseSelector('a=b, c=d')).toEqual({ a: 'b', c: 'd' });
    expect(parseSelector('')).toEqual({});
    expect(parseSelector('a=b=c')).toBe('"a=b=c" is not key=value');
    expect(parseSelector('flex')).toBe('"flex" is not key=value');
  });

  it('keeps a node-selector pair whose key is __proto__ as a pair, never as the prototype', () => {
    const parsed = parseSelector('__proto__=x, a=b') as Record<string, string>;
    expect(Object.keys(parsed)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(JSON.stringify(parsed)).toBe('{"__proto__":"x","a":"b"}');
  });
});

describe('claim volume', () => {
  const volume = (claimRef?: { namespace?: string; name?: string }) => ({
    metadata: { name: 'pv-1' },
    spec: claimRef ? { claimRef } : {},
  });
  it('allows a volume reserved for exactly this claim', () => {
    expect(claimVolumeVerdict('ns', 'data', 'pv-1', volume({ namespace: 'ns', name: 'data' })).allowed).toBe(
      true,
    );
  });
  it('refuses any other volume with one message, a missing one included', () => {
    const refusals = [
      volume(),
      volume({ namespace: 'ns', name: 'other' }),
      volume({ namespace: 'other', name: 'data' }),
      volume({ name: 'data' }),
      undefined,
    ].map((v) => claimVolumeVerdict('ns', 'data', 'pv-1', v));
    for (const verdict of refusals) {
      expect(verdict.allowed).toBe(false);
      expect(verdict.message).toBe(refusals[0]!.message);
    }
    expect(refusals[0]!.message).toContain(
      'PersistentVolumeClaim ns/data: spec.volumeName "pv-1" names a PersistentVolume that is not reserved for this claim',
    );
  });
});
