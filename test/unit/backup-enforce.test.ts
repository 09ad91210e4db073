// Admin enforcement and NACUUID naming: pure rules, tested on their own.
import { describe, expect, it } from 'vitest';
import {
  enforcedMessage,
  jsonEqual,
  policyProblems,
  violations,
  withEnforced,
} from '../../src/backup/policy/enforce.ts';
import { nacObjectName } from '../../src/backup/velero/names.ts';

const uuid = '0b6d2a3c-8c1e-4f4e-9a1b-3f1d2e4c5b6a';

describe('NACUUID names', () => {
  it('is <namespace>-<name>-<uuid> when it fits', () => {
    expect(nacObjectName('team-a', 'nightly', uuid)).toBe(`team-a-nightly-${uuid}`);
  });

  it('cuts the name first, then the namespace, to 63 characters, keeping the whole UUID', () => {
    const name = nacObjectName('team-a', 'a-very-long-backup-name-indeed', uuid);
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name.startsWith('team-a-a-very-long-backup')).toBe(true);
    expect(name.endsWith(uuid)).toBe(true);
    const longest = nacObjectName('n'.repeat(63), 'b'.repeat(253), uuid);
    expect(longest).toBe(`${'n'.repeat(25)}-${uuid}`);
    expect(longest.length).toBeLessThanOrEqual(63);
  });

  it('never leaves two separators in a row where a cut falls on a dash', () => {
    const name = nacObjectName('team-a', `${'x'.repeat(18)}-tail`, uuid);
    expect(name).not.toMatch(/--/);
    expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  });
});

describe('admin enforcement', () => {
  it('accepts an equal or absent value and rejects a different one, with the seed message', () => {
    expect(violations({ ttl: '3h' }, { snapshotVolumes: false })).toEqual([]);
    expect(violations({ snapshotVolumes: false }, { snapshotVolumes: false })).toEqual([]);
    expect(violations({ snapshotVolumes: true }, { snapshotVolumes: false })).toEqual(['snapshotVolumes']);
    expect(enforcedMessage('NonAdminBackup', 'snapshotVolumes')).toBe(
      'NonAdminBackup spec.backupSpec.snapshotVolumes field value is enforced by admin user, can not override it',
    );
  });

  it('enforces falsy values and compares nested objects field by field', () => {
    expect(violations({ includedResources: ['pods'] }, { includedResources: [] })).toEqual([
      'includedResources',
    ]);
    expect(violations({ ttl: '' }, { ttl: '' })).toEqual([]);
    const enforced = { labelSelector: { matchLabels: { team: 'a' } } };
    expect(violations({ labelSelector: { matchLabels: { team: 'a', app: 'web' } } }, enforced)).toEqual([]);
    expect(violations({ labelSelector: { matchLabels: { team: 'b' } } }, enforced)).toEqual([
      'labelSelector.matchLabels.team',
    ]);
  });

  it('fills enforced values in, merging nested objects, without changing the input', () => {
    const tenant = { ttl: '3h', labelSelector: { matchLabels: { app: 'web' } } };
    const merged = withEnforced(tenant, {
      snapshotVolumes: false,
      labelSelector: { matchLabels: { team: 'a' } },
    });
    expect(merged).toEqual({
      ttl: '3h',
      snapshotVolumes: false,
      labelSelector: { matchLabels: { app: 'web', team: 'a' } },
    });
    expect(tenant).toEqual({ ttl: '3h', labelSelector: { matchLabels: { app: 'web' } } });
  });

  it('compares JSON regardless of key order', () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
  });

  it('refuses to enforce the fields that keep tenants apart, saying why', () => {
    const problems = policyProblems(
      'NonAdminBackup',
      { includedNamespaces: ['x'], ttl: '1h', storageLocation: 'other' },
      'spec.nonAdmin.enforceBackupSpec',
    );
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(
      /^spec\.nonAdmin\.enforceBackupSpec\.includedNamespaces cannot be enforced: /,
    );
    expect(policyProblems('NonAdminRestore', { namespaceMapping: {} }, 'x')[0]).toMatch(/other namespaces/);
  });
});
