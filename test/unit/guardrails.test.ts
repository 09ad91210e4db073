// The organization guardrails' rules, without a cluster: which field applies (Organization over
// TenancyConfig), image references read as container runtimes read them, registry entries, classes,
// host names, and enforced namespace metadata.
import { describe, expect, it } from 'vitest';
import type { Organization } from '../../src/crds/tenancy.ts';
import { effective } from '../../src/tenancy/policy/config.ts';
import {
  classProblem,
  defaultedClass,
  enforcedChanges,
  guardrailsOf,
  hostProblem,
  imageProblem,
  missingMetadata,
  registryCovers,
  repositoryOf,
} from '../../src/tenancy/policy/guardrails.ts';

const org = (guardrails: NonNullable<Organization['spec']['guardrails']>): Organization =>
  ({ metadata: { name: 'acme' }, spec: { guardrails } }) as Organization;

describe('organization guardrails', () => {
  it('takes each field from the Organization when it sets it, else from the TenancyConfig, and says which', () => {
    const config = effective({
      metadata: { name: 'cluster' },
      spec: { guardrails: { registries: ['registry.corp'], storageClasses: { allowed: ['fast'] } } },
    } as never);
    const g = guardrailsOf(config, 'acme', org({ registries: ['ghcr.io/acme'] }));
    expect(g.rules.registries).toEqual(['ghcr.io/acme']);
    expect(g.rules.storageClasses).toEqual({ allowed: ['fast'] });
    expect(g.source('registries')).toBe('Organization acme, spec.guardrails.registries');
    expect(g.source('storageClasses')).toBe('TenancyConfig cluster, spec.guardrails.storageClasses');
    // Nothing set anywhere: nothing restricted.
    const open = guardrailsOf(effective(undefined), 'acme', undefined);
    expect(imageProblem(open, 'anything/at:all')).toBeUndefined();
    expect(classProblem(open, 'storageClasses', 'x')).toBeUndefined();
  });

  it('reads image references as container runtimes do', () => {
    expect(repositoryOf('nginx')).toBe('docker.io/library/nginx');
    expect(repositoryOf('nginx:1.27')).toBe('docker.io/library/nginx');
    expect(repositoryOf('bitnami/redis:7')).toBe('docker.io/bitnami/redis');
    expect(repositoryOf('index.docker.io/library/busybox')).toBe('docker.io/library/busybox');
    expect(repositoryOf('ghcr.io/acme/app@sha256:abc')).toBe('ghcr.io/acme/app');
    expect(repositoryOf('registry.local:5000/team/app:v1')).toBe('registry.local:5000/team/app');
    expect(repositoryOf('localhost/app')).toBe('localhost/app');
    expect(repositoryOf('')).toBeUndefined();
    expect(repositoryOf('a b')).toBeUndefined();
    expect(repositoryOf('/x')).toBeUndefined();
  });

  it('lets an entry cover a whole registry or a repository prefix, * within one segment', () => {
    expect(registryCovers('ghcr.io', 'ghcr.io/acme/app')).toBe(true);
    expect(registryCovers('ghcr.io/acme', 'ghcr.io/acme/app')).toBe(true);
    expect(registryCovers('ghcr.io/acme', 'ghcr.io/acme-evil/app')).toBe(false);
    expect(registryCovers('ghcr.io/acme/', 'ghcr.io/acme/app')).toBe(true);
    expect(registryCovers('*.corp.example', 'eu.corp.example/app')).toBe(true);
    expect(registryCovers('*.corp.example', 'corp.example.evil.io/app')).toBe(false);
    expect(registryCovers('docker.io/library', 'docker.io/library/nginx')).toBe(true);
    expect(registryCovers('docker.io/library', 'docker.io/evil/nginx')).toBe(false);
    // A registry's name as a path segment elsewhere is not that registry.
    expect(registryCovers('ghcr.io', 'evil.io/ghcr.io/app')).toBe(false);
  });

  it('names the image, the repository it read, what is allowed and where an admin changes it', () => {
    const g = guardrailsOf(effective(undefined), 'acme', org({ registries: ['ghcr.io/acme'] }));
    expect(imageProblem(g, 'ghcr.io/acme/app:1')).toBeUndefined();
    const problem = imageProblem(g, 'nginx');
    expect(problem).toContain('image "nginx" (repository docker.io/library/nginx)');
    expect(problem).toContain('allowed: ghcr.io/acme');
    expect(problem).toContain('Organization acme, spec.guardrails.registries');
    expect(imageProblem(guardrailsOf(effective(undefined), 'acme', org({ registries: [] })), 'x')).toContain(
      'allowed: (none)',
    );
  });

  it('fills in the default class for none, and for the cluster default where it is not allowed', () => {
    const g = guardrailsOf(
      effective(undefined),
      'acme',
      org({ storageClasses: { allowed: ['fast', 'cheap'], default: 'cheap' } }),
    );
    expect(defaultedClass(g, 'storageClasses', undefined, 'standard')).toBe('cheap');
    expect(defaultedClass(g, 'storageClasses', 'standard', 'standard')).toBe('cheap');
    // Chosen by the tenant: kept (and then judged).
    expect(defaultedClass(g, 'storageClasses', 'fast', 'standard')).toBeUndefined();
    expect(defaultedClass(g, 'storageClasses', 'gold', 'standard')).toBeUndefined();
    expect(classProblem(g, 'storageClasses', 'gold')).toContain('StorageClass "gold" is not one');
    expect(classProblem(g, 'storageClasses', 'fast')).toBeUndefined();
  });

  it('matches Ingress hosts against the allowed names, wildcard hosts too', () => {
    const g = guardrailsOf(effective(undefined), 'acme', org({ ingressHostnames: ['*.acme.apps.example'] }));
    expect(hostProblem(g, 'shop.acme.apps.example')).toBeUndefined();
    expect(hostProblem(g, '*.acme.apps.example')).toBeUndefined();
    expect(hostProblem(g, 'SHOP.ACME.apps.example')).toBeUndefined();
    expect(hostProblem(g, 'shop.other.apps.example')).toContain('host "shop.other.apps.example"');
    expect(hostProblem(g, '*.apps.example')).toContain('is not one organization "acme" may serve');
  });

  it('finds enforced keys a change removes or sets to another value, and what a namespace lacks', () => {
    const enforced = { 'pod-security.kubernetes.io/enforce': 'restricted' };
    const key = 'pod-security.kubernetes.io/enforce';
    expect(enforcedChanges(enforced, { [key]: 'restricted' }, {})).toEqual([key]);
    expect(enforcedChanges(enforced, { [key]: 'restricted' }, { [key]: 'privileged' })).toEqual([key]);
    expect(enforcedChanges(enforced, { [key]: 'restricted' }, { [key]: 'restricted', x: 'y' })).toEqual([]);
    // Not yet applied by the controller, and left alone by this change: not the tenant's doing.
    expect(enforcedChanges(enforced, {}, { x: 'y' })).toEqual([]);
    const g = guardrailsOf(effective(undefined), 'acme', org({ namespaceLabels: enforced }));
    expect(missingMetadata(g, { metadata: { labels: { [key]: 'baseline' } } })).toEqual({
      labels: enforced,
      annotations: {},
    });
    expect(missingMetadata(g, { metadata: { labels: enforced } })).toBeUndefined();
  });
});
