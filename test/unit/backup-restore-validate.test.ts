// What a tenant may ask of a NonAdminRestore: pure rules, tested on their own.
import { describe, expect, it } from 'vitest';
import { enforceableRestoreSpec, restoreSpecProblems } from '../../src/backup/policy/validate.ts';
import type { NonAdminBackup } from '../../src/crds/backup.ts';

const ns = 'shop';

function nab(name: string, status: NonAdminBackup['status'], extra: Partial<NonAdminBackup> = {}) {
  return { metadata: { name, namespace: ns }, spec: { backupSpec: {} }, status, ...extra } as NonAdminBackup;
}

const completed = nab('nightly', {
  phase: 'Created',
  veleroBackup: { nacuuid: 'shop-nightly-x', name: 'shop-nightly-x', status: { phase: 'Completed' } },
});
const nabs = new Map<string, NonAdminBackup>([
  ['nightly', completed],
  [
    'running',
    nab('running', { phase: 'Created', veleroBackup: { name: 'r', status: { phase: 'InProgress' } } }),
  ],
  [
    'partial',
    nab('partial', { phase: 'Created', veleroBackup: { name: 'p', status: { phase: 'PartiallyFailed' } } }),
  ],
  ['refused', nab('refused', { phase: 'BackingOff' })],
  ['fresh', nab('fresh', undefined)],
  ['going', nab('going', completed.status, { spec: { backupSpec: {}, deleteBackup: true } })],
]);
const find = (name: string) => nabs.get(name);
const check = (spec: Record<string, unknown>, enforced: Record<string, unknown> = {}) =>
  restoreSpecProblems(ns, spec as never, enforced as never, find);

describe('NonAdminRestore spec', () => {
  it('accepts a restore from a completed NonAdminBackup of the namespace', () => {
    expect(check({ backupName: 'nightly' })).toEqual([]);
    expect(
      check({
        backupName: 'nightly',
        includedNamespaces: [ns],
        namespaceMapping: {},
        excludedNamespaces: [],
      }),
    ).toEqual([]);
    expect(check({ backupName: 'nightly', includeClusterResources: false })).toEqual([]);
  });

  it('requires backupName and says what it must name', () => {
    expect(check({})).toEqual([
      'spec.restoreSpec.backupName is required: set it to the name of a NonAdminBackup in namespace shop whose backup completed',
    ]);
    expect(check({ backupName: '' })).toHaveLength(1);
  });

  it('refuses a name that is no NonAdminBackup of this namespace', () => {
    expect(check({ backupName: 'shop-nightly-x' })).toEqual([
      'spec.restoreSpec.backupName "shop-nightly-x" is not a NonAdminBackup in namespace shop: name one of this namespace\'s NonAdminBackups (kubectl get nonadminbackups -n shop)',
    ]);
  });

  it('says which phase an unfinished or failed backup is in, and whether to wait', () => {
    expect(check({ backupName: 'running' })[0]).toBe(
      'spec.restoreSpec.backupName "running": its backup is InProgress, not Completed yet; wait for it to complete, or pick another NonAdminBackup',
    );
    expect(check({ backupName: 'fresh' })[0]).toContain('its backup is New, not Completed yet; wait');
    expect(check({ backupName: 'partial' })[0]).toContain(
      'its backup ended PartiallyFailed, and only a Completed backup can be restored; pick another',
    );
    expect(check({ backupName: 'refused' })[0]).toContain('was not accepted (BackingOff)');
    expect(check({ backupName: 'going' })[0]).toContain('is being deleted; pick another');
  });

  it('refuses every way out of the namespace, naming the field and the fix', () => {
    const problems = check({
      backupName: 'nightly',
      scheduleName: 'daily',
      includedNamespaces: [ns, 'other'],
      excludedNamespaces: ['kube-system'],
      namespaceMapping: { shop: 'other' },
      includeClusterResources: true,
      resourceModifier: { kind: 'ConfigMap', name: 'rules' },
    });
    expect(problems).toEqual([
      'spec.restoreSpec.scheduleName is not allowed: tenants restore from their own NonAdminBackups; leave it out and set backupName to a NonAdminBackup',
      'spec.restoreSpec.includedNamespaces may only name this namespace (shop); leave it out, tenantkit sets it',
      'spec.restoreSpec.excludedNamespaces is not allowed: a restore covers this namespace only; leave it out',
      'spec.restoreSpec.namespaceMapping is not allowed: a restore writes into this namespace (shop) only; leave it out',
      'spec.restoreSpec.includeClusterResources may not be true: tenants cannot restore cluster-scoped resources; leave it out',
      "spec.restoreSpec.resourceModifier is not allowed: it names a ConfigMap in Velero's namespace, which only an admin may choose; leave it out",
    ]);
  });

  it('refuses overrides of enforced fields with the seed message, and fills nothing it should not', () => {
    expect(check({ backupName: 'nightly', restorePVs: true }, { restorePVs: false })).toEqual([
      'NonAdminRestore spec.restoreSpec.restorePVs field value is enforced by admin user, can not override it',
    ]);
    expect(check({ backupName: 'nightly', restorePVs: false }, { restorePVs: false })).toEqual([]);
    const modifier = { kind: 'ConfigMap', name: 'admin-rules' };
    expect(
      check({ backupName: 'nightly', resourceModifier: modifier }, { resourceModifier: modifier }),
    ).toEqual([]);
  });

  it('never takes the NAB name in backupName (or a forced field) for an override of an enforced value', () => {
    // A config stored before the CRD refused these fields: tenantkit's own values, not the admin's.
    const stale = {
      backupName: 'shop-nightly-x',
      includedNamespaces: ['elsewhere'],
      existingResourcePolicy: 'update',
    };
    expect(check({ backupName: 'nightly', includedNamespaces: [ns] }, stale)).toEqual([]);
    expect(enforceableRestoreSpec(stale as never)).toEqual({ existingResourcePolicy: 'update' });
  });
});
