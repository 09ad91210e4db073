// Which namespace a Velero Backup belongs to: tenant storage locations decide whatever the Backup says;
// admin locations need tenantkit's own records; everything else belongs to nobody.
import { describe, expect, it } from 'vitest';
import { reviewSyncedFrom } from '../../src/backup/admission/synced-from.ts';
import { scheduleObjectName } from '../../src/backup/controllers/schedule/runs.ts';
import { syncedNabName } from '../../src/backup/controllers/sync/adopt.ts';
import { Annotations, Labels, managedLabels } from '../../src/backup/model.ts';
import {
  backupOwner,
  defaultLocationOf,
  type Location,
  type NamespaceLike,
  OrganizationLabel,
  type OwnedBackup,
  originRecord,
  ownerNow,
} from '../../src/backup/velero/ownership.ts';
import type { Ownerships } from '../../src/backup/velero/ownerships.ts';
import type { NonAdminBackup, NonAdminBackupConfig } from '../../src/crds/backup.ts';
import type { Informer } from '../../src/kube/informer.ts';

const adminBsl: Location = { metadata: { name: 'default' }, spec: { default: true } };
const tenantBsl: Location = {
  metadata: {
    name: 'team-a-store-1234',
    labels: { ...managedLabels, [Labels.nabslUuid]: 'team-a-store-1234' },
    annotations: { [Annotations.nabslNamespace]: 'team-a', [Annotations.nabslName]: 'store' },
  },
};
const locations = [adminBsl, tenantBsl];
const owner = (b: OwnedBackup, bsls: Location[] = locations) =>
  backupOwner(
    b,
    (name) => bsls.find((l) => l.metadata.name === name),
    () => defaultLocationOf(bsls),
  );

const made = (ns: string, extra: Partial<OwnedBackup['metadata']> = {}, spec: OwnedBackup['spec'] = {}) => ({
  metadata: {
    name: `${ns}-nightly-x`,
    labels: { ...managedLabels, [Labels.nabUuid]: `${ns}-nightly-x`, ...extra.labels },
    annotations: { [Annotations.nabNamespace]: ns, [Annotations.nabName]: 'nightly', ...extra.annotations },
  },
  spec: { includedNamespaces: [ns], storageLocation: 'default', ...spec },
});

describe('backupOwner', () => {
  it('gives a backup of an admin location to the namespace tenantkit recorded on it', () => {
    expect(owner(made('shop'))).toEqual({ namespace: 'shop', via: 'tenantkit-records', location: 'default' });
  });

  it('uses the default location for a backup that names none', () => {
    expect(owner(made('shop', {}, { storageLocation: '' })).namespace).toBe('shop');
    expect(owner(made('shop', {}, { storageLocation: undefined }), [tenantBsl]).namespace).toBeUndefined();
  });

  it("gives schedule runs to the schedule's namespace (annotations copied from the Schedule)", () => {
    const run = {
      metadata: {
        name: 'shop-daily-x-20260101000000',
        labels: { ...managedLabels, [Labels.nasUuid]: 'shop-daily-x' },
        annotations: { [Annotations.nasNamespace]: 'shop', [Annotations.nasName]: 'daily' },
      },
      spec: { includedNamespaces: ['shop'], storageLocation: 'default' },
    };
    expect(owner(run).namespace).toBe('shop');
  });

  it("gives nothing of an admin location without all of tenantkit's records", () => {
    const noLabels = made('shop');
    noLabels.metadata.labels = {} as typeof noLabels.metadata.labels;
    expect(owner(noLabels)).toEqual({ why: 'tenantkit did not make it (an admin backup)' });
    const noOrigin = made('shop');
    noOrigin.metadata.annotations = {} as typeof noOrigin.metadata.annotations;
    expect(owner(noOrigin).namespace).toBeUndefined();
    // Two different origins: nobody's.
    expect(
      owner(made('shop', { annotations: { [Annotations.nasNamespace]: 'other' } })).namespace,
    ).toBeUndefined();
    // Wider or other namespaces than the recorded one: nobody's.
    expect(owner(made('shop', {}, { includedNamespaces: ['shop', 'bank'] })).namespace).toBeUndefined();
    expect(owner(made('shop', {}, { includedNamespaces: ['bank'] })).namespace).toBeUndefined();
    expect(owner(made('shop', {}, { includedNamespaces: [] })).namespace).toBeUndefined();
    expect(owner(made('shop', {}, { includedNamespaces: undefined })).namespace).toBeUndefined();
  });

  it("gives everything of a tenant's location to that tenant, whatever the backup claims", () => {
    // Forged in team-a's bucket to look like shop's backup: still team-a's, never shop's.
    const forged = made('shop', {}, { storageLocation: 'team-a-store-1234' });
    expect(owner(forged)).toEqual({
      namespace: 'team-a',
      via: 'tenant-location',
      location: 'team-a-store-1234',
    });
    const bare = { metadata: { name: 'anything' }, spec: { storageLocation: 'team-a-store-1234' } };
    expect(owner(bare).namespace).toBe('team-a');
  });

  it('gives nothing when the location is unknown or lacks its origin namespace', () => {
    expect(owner(made('shop', {}, { storageLocation: 'gone' }))).toEqual({
      why: 'its storage location gone does not exist',
    });
    const broken: Location = { metadata: { name: 'b', labels: { [Labels.nabslUuid]: 'b' } } };
    expect(owner(made('shop', {}, { storageLocation: 'b' }), [broken]).namespace).toBeUndefined();
  });

  it('picks a default location only when exactly one is marked', () => {
    expect(defaultLocationOf(locations)).toBe(adminBsl);
    expect(defaultLocationOf([adminBsl, { ...tenantBsl, spec: { default: true } }])).toBeUndefined();
    expect(defaultLocationOf([tenantBsl])).toBeUndefined();
  });
});

describe('names of NonAdminBackups for existing backups', () => {
  const run = {
    metadata: {
      name: 'shop-daily-1b2c3d4e-0000-4000-8000-000000000000-20260101030000',
      annotations: { [Annotations.nasNamespace]: 'shop', [Annotations.nasName]: 'daily' },
    },
  };
  it('names a schedule run <schedule>-<timestamp>, a NAB backup by its original name, if free', () => {
    expect(syncedNabName(run, 'shop', () => false)).toBe('daily-20260101030000');
    expect(syncedNabName(made('shop'), 'shop', () => false)).toBe('nightly');
  });

  it('falls back, deterministically, to the backup name and then synced-<backup name>', () => {
    expect(syncedNabName(made('shop'), 'shop', (n) => n === 'nightly')).toBe('shop-nightly-x');
    expect(syncedNabName(made('shop'), 'shop', (n) => n !== 'synced-shop-nightly-x')).toBe(
      'synced-shop-nightly-x',
    );
    // Another namespace's origin name is never used.
    expect(syncedNabName(made('bank'), 'shop', () => false)).toBe('shop-nightly-x'.replace('shop', 'bank'));
  });

  it('keeps Velero Schedule names within 48 characters, so that run names stay label values', () => {
    const long = scheduleObjectName('n'.repeat(63), 's'.repeat(253));
    expect(long.length).toBeLessThanOrEqual(48);
    expect(`${long}-20260101030000`.length).toBeLessThanOrEqual(63);
    expect(scheduleObjectName('shop', 'daily')).toMatch(/^shop-daily-[0-9a-f-]{36}$/);
  });
});

describe('reviewSyncedFrom (admission of the sync label)', () => {
  // The webhook's caches, as plain data: one backup of "shop" in Velero's namespace.
  const backups = new Map([
    [
      'velero/shop-nightly-x',
      { ...made('shop'), metadata: { ...made('shop').metadata, namespace: 'velero' } },
    ],
  ]);
  const o = {
    backup: (ns: string, name: string) => backups.get(`${ns}/${name}`),
    ownerOf: (b: OwnedBackup) => owner(b),
  } as unknown as Ownerships;
  const configs = {
    get: () => ({
      metadata: { name: 'cluster' },
      spec: { nonAdmin: { enable: true, veleroNamespace: 'velero' } },
    }),
  } as unknown as Informer<NonAdminBackupConfig>;
  const review = (
    namespace: string,
    operation: 'CREATE' | 'UPDATE',
    labels?: Record<string, string>,
    old?: NonAdminBackup,
  ) =>
    reviewSyncedFrom(o, configs, {
      uid: 'u',
      kind: { group: 'oadp.openshift.io', version: 'v1alpha1', kind: 'NonAdminBackup' },
      resource: { group: 'oadp.openshift.io', version: 'v1alpha1', resource: 'nonadminbackups' },
      namespace,
      operation,
      userInfo: { username: 'alice' },
      object: { metadata: { name: 'n', namespace, ...(labels ? { labels } : {}) }, spec: { backupSpec: {} } },
      ...(old ? { oldObject: old } : {}),
    });

  it("allows the label naming the namespace's own backup, and NABs without it", () => {
    expect(review('shop', 'CREATE', { [Labels.syncedFrom]: 'shop-nightly-x' })).toBeUndefined();
    expect(review('bank', 'CREATE')).toBeUndefined();
  });

  it("refuses another namespace's backup and a missing one with the same message", () => {
    const theirs = review('bank', 'CREATE', { [Labels.syncedFrom]: 'shop-nightly-x' });
    const missing = review('bank', 'CREATE', { [Labels.syncedFrom]: 'no-such-backup' });
    expect(theirs?.allowed).toBe(false);
    expect(theirs?.message).toContain('does not exist or does not belong to namespace bank');
    expect(missing?.message).toContain('does not exist or does not belong to namespace bank');
  });

  it('refuses adding, changing or removing the label on an accepted NAB', () => {
    const accepted: NonAdminBackup = {
      metadata: { name: 'n', namespace: 'shop' },
      spec: { backupSpec: {} },
      status: { veleroBackup: { nacuuid: 'shop-n-1' } },
    };
    const added = review('shop', 'UPDATE', { [Labels.syncedFrom]: 'shop-nightly-x' }, accepted);
    expect(added?.message).toMatch(/cannot be added, changed or removed/);
    const labelled = {
      ...accepted,
      metadata: { ...accepted.metadata, labels: { [Labels.syncedFrom]: 'shop-nightly-x' } },
    };
    expect(review('shop', 'UPDATE', undefined, labelled)?.message).toMatch(
      /cannot be added, changed or removed/,
    );
    expect(review('shop', 'UPDATE', { [Labels.syncedFrom]: 'shop-nightly-x' }, labelled)).toBeUndefined();
  });
});

describe('ownerNow: the namespace of that name, only as the instance or organization recorded', () => {
  const ns = (uid: string, org?: string, created = '2026-01-01T00:00:00Z'): NamespaceLike => ({
    metadata: { uid, creationTimestamp: created, labels: org ? { [OrganizationLabel]: org } : {} },
  });
  const taken = ns('uid-1', 'team-a');
  const recorded = (record: Record<string, string>, started = '2026-01-02T00:00:00Z') => ({
    ...made('shop', { annotations: record }),
    status: { startTimestamp: started },
  });
  const now = (b: OwnedBackup, live: NamespaceLike | undefined) =>
    ownerNow(owner(b), b, (name) => (name === 'shop' ? live : undefined)).namespace;

  it('keeps a backup with its namespace, and with a namespace its organization made again', () => {
    const b = recorded(originRecord(taken));
    expect(now(b, taken)).toBe('shop');
    expect(now(b, ns('uid-2', 'team-a'))).toBe('shop');
  });

  it('gives nothing to a namespace of that name of another organization, or of none', () => {
    const b = recorded(originRecord(taken));
    expect(now(b, ns('uid-2', 'team-b'))).toBeUndefined();
    expect(now(b, ns('uid-2'))).toBeUndefined();
    expect(now(b, undefined)).toBeUndefined();
  });

  it('gives an unrecorded backup only to a namespace older than it, until an admin assigns it', () => {
    const b = recorded({});
    expect(now(b, ns('uid-1', 'team-a', '2026-01-01T00:00:00Z'))).toBe('shop');
    expect(now(b, ns('uid-2', 'team-a', '2026-01-03T00:00:00Z'))).toBeUndefined();
    const assigned = recorded({ [Annotations.originOrganization]: 'team-a' });
    expect(now(assigned, ns('uid-2', 'team-a', '2026-01-03T00:00:00Z'))).toBe('shop');
  });

  it("leaves a tenant location's backups to that location's namespace", () => {
    const b = { ...made('shop', {}, { storageLocation: 'team-a-store-1234' }) };
    expect(ownerNow(owner(b), b, () => undefined).namespace).toBe('team-a');
  });
});
