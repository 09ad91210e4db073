// What tenantkit forces into the Velero objects it makes, and the tenant fields that could stall or steer
// Velero for everyone (hooks, long timeouts, Velero-namespace ConfigMaps): pure rules, tested on their own.
import { describe, expect, it } from 'vitest';
import { backupSpecProblems, restoreSpecProblems } from '../../src/backup/policy/validate.ts';
import {
  nonAdminKinds,
  restoreExclusions,
  withForcedBackupFields,
  withForcedRestoreFields,
} from '../../src/backup/policy/velero-filters.ts';
import { isNacObjectName, nacObjectName } from '../../src/backup/velero/names.ts';

const ns = 'shop';
const backup = (spec: Record<string, unknown>, enforced: Record<string, unknown> = {}) =>
  backupSpecProblems(ns, spec as never, enforced as never);
const restore = (spec: Record<string, unknown>, enforced: Record<string, unknown> = {}) =>
  restoreSpecProblems(ns, { backupName: 'nightly', ...spec } as never, enforced as never);

const hook = {
  resources: [{ name: 'slow', pre: [{ exec: { command: ['sleep', '1d'], timeout: '8760h' } }] }],
};

describe('tenant fields that reach every tenant', () => {
  it('refuses backup and restore hooks unless the admin enforces them', () => {
    expect(backup({ hooks: hook })).toEqual([
      "spec.backupSpec.hooks is not allowed: hooks run commands in the namespace's pods while Velero waits, and Velero runs one backup or restore at a time, so a slow hook stalls every tenant; leave it out, or ask an admin to enforce it",
    ]);
    expect(restore({ hooks: { resources: [] } })).toEqual([
      "spec.restoreSpec.hooks is not allowed: hooks run commands in the namespace's pods while Velero waits, and Velero runs one backup or restore at a time, so a slow hook stalls every tenant; leave it out, or ask an admin to enforce it",
    ]);
    // Enforced: the admin's hooks are the only ones; the same value passes, another is an override.
    expect(backup({ hooks: hook }, { hooks: hook })).toEqual([]);
    expect(backup({}, { hooks: hook })).toEqual([]);
    expect(backup({ hooks: { resources: [] } }, { hooks: hook })).toEqual([
      'NonAdminBackup spec.backupSpec.hooks.resources field value is enforced by admin user, can not override it',
    ]);
    expect(restore({ hooks: { resources: [] } }, { hooks: { resources: [] } })).toEqual([]);
  });

  it('refuses backupSpec.resourcePolicy (a ConfigMap in Velero namespace) unless enforced', () => {
    const policy = { kind: 'configmap', name: 'admin-policy' };
    expect(backup({ resourcePolicy: policy })).toEqual([
      "spec.backupSpec.resourcePolicy is not allowed: it names a ConfigMap in Velero's namespace, which only an admin may choose; leave it out, or ask an admin to enforce it",
    ]);
    expect(backup({ resourcePolicy: policy }, { resourcePolicy: policy })).toEqual([]);
    expect(backup({}, { resourcePolicy: policy })).toEqual([]);
  });

  it('caps timeouts at 4h unless enforced, and says how to fix them', () => {
    expect(backup({ csiSnapshotTimeout: '10m', itemOperationTimeout: '4h' })).toEqual([]);
    expect(backup({ itemOperationTimeout: '3h59m60s' })).toEqual([]);
    expect(backup({ csiSnapshotTimeout: '8760h', itemOperationTimeout: '4h0m1s' })).toEqual([
      "spec.backupSpec.csiSnapshotTimeout 8760h is longer than 4h: Velero runs one operation at a time, so a long wait stalls every tenant's backups and restores; ask for at most 4h (or leave it out for Velero's default), or ask an admin to enforce a longer one",
      "spec.backupSpec.itemOperationTimeout 4h0m1s is longer than 4h: Velero runs one operation at a time, so a long wait stalls every tenant's backups and restores; ask for at most 4h (or leave it out for Velero's default), or ask an admin to enforce a longer one",
    ]);
    expect(backup({ csiSnapshotTimeout: 'forever' })).toEqual([
      'spec.backupSpec.csiSnapshotTimeout "forever" is not a duration: write it like 30m or 1h30m',
    ]);
    expect(restore({ itemOperationTimeout: '5h' })[0]).toContain(
      'spec.restoreSpec.itemOperationTimeout 5h is longer than 4h',
    );
    expect(restore({ itemOperationTimeout: '1h' })).toEqual([]);
    // The admin's value, whatever its length.
    expect(backup({}, { itemOperationTimeout: '12h' })).toEqual([]);
    expect(backup({ itemOperationTimeout: '12h' }, { itemOperationTimeout: '12h' })).toEqual([]);
    expect(restore({ itemOperationTimeout: '12h' }, { itemOperationTimeout: '12h' })).toEqual([]);
  });
});

describe('what every Velero Restore made for a NonAdminRestore carries', () => {
  it('never includes cluster-scoped resources, and excludes the non-admin and velero.io kinds', () => {
    const spec = withForcedRestoreFields(
      { backupName: 'b', includedNamespaces: [ns], excludedResources: ['secrets'] },
      false,
    );
    expect(spec.includeClusterResources).toBe(false);
    expect(spec.excludedResources).toEqual([
      'secrets',
      'nonadminbackups.oadp.openshift.io',
      'nonadminrestores.oadp.openshift.io',
      'nonadmindownloadrequests.oadp.openshift.io',
      'nonadminbackupstoragelocations.oadp.openshift.io',
      'nonadminschedules.oadp.openshift.io',
      'nonadminbackupstoragelocationrequests.oadp.openshift.io',
      '*.velero.io',
    ]);
    // A tenant's explicit false stays false; an admin's exclusion is kept, not duplicated.
    expect(
      withForcedRestoreFields({ includeClusterResources: false, excludedResources: ['*.velero.io'] }, false)
        .excludedResources,
    ).toEqual(['*.velero.io', ...nonAdminKinds]);
  });

  it("from a tenant's own storage location, excludes Roles and RoleBindings too", () => {
    expect(restoreExclusions(true)).toEqual([
      ...nonAdminKinds,
      '*.velero.io',
      'roles.rbac.authorization.k8s.io',
      'rolebindings.rbac.authorization.k8s.io',
    ]);
    expect(restoreExclusions(false)).not.toContain('rolebindings.rbac.authorization.k8s.io');
  });
});

describe('what every Velero Backup (and schedule template) made for a tenant carries', () => {
  const operations = [
    'nonadminbackups.oadp.openshift.io',
    'nonadminrestores.oadp.openshift.io',
    'nonadmindownloadrequests.oadp.openshift.io',
  ];
  it('excludes NonAdminBackups, NonAdminRestores and NonAdminDownloadRequests', () => {
    expect(withForcedBackupFields({ includedNamespaces: [ns] })).toEqual({
      includedNamespaces: [ns],
      excludedResources: operations,
    });
    expect(withForcedBackupFields({ excludedResources: ['secrets'] }).excludedResources).toEqual([
      'secrets',
      ...operations,
    ]);
    // Velero refuses old and new filters together: with the new ones, the new field.
    expect(withForcedBackupFields({ includedNamespaceScopedResources: ['configmaps'] })).toEqual({
      includedNamespaceScopedResources: ['configmaps'],
      excludedNamespaceScopedResources: operations,
    });
    expect(withForcedBackupFields({})).not.toHaveProperty('includeClusterResources');
  });
});

describe('NACUUIDs read back from status', () => {
  it('are trusted only in the shape tenantkit writes for that object', () => {
    const uuid = '0f8fad5b-d9cb-469f-a165-70867728950e';
    const good = nacObjectName(ns, 'nightly', uuid);
    expect(isNacObjectName(ns, 'nightly', good)).toBe(true);
    expect(isNacObjectName(ns, 'nightly', nacObjectName(ns, 'nightly'))).toBe(true);
    const long = 'a'.repeat(60);
    expect(isNacObjectName(long, long, nacObjectName(long, long, uuid))).toBe(true);
    // Another namespace's or another object's, a bare Velero name, nothing.
    expect(isNacObjectName(ns, 'nightly', nacObjectName('victim', 'nightly', uuid))).toBe(false);
    expect(isNacObjectName(ns, 'nightly', nacObjectName(ns, 'other', uuid))).toBe(false);
    expect(isNacObjectName(ns, 'nightly', 'velero-admin-backup')).toBe(false);
    expect(isNacObjectName(ns, 'nightly', `${good}x`)).toBe(false);
    expect(isNacObjectName(ns, 'nightly', undefined)).toBe(false);
  });
});
