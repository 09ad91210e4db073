// What a tenant may ask of a NonAdminBackupStorageLocation, and what its credential file may hold: pure
// rules, tested on their own (the integration test runs them through the API server and Velero).
import { describe, expect, it } from 'vitest';
import {
  bslSpecProblems,
  credentialProblems,
  forcedPrefix,
  prefixProblems,
  veleroBslSpec,
} from '../../src/backup/bsl-validate.ts';
import type { JsonObject } from '../../src/backup/enforce.ts';
import { backupSpecProblems } from '../../src/backup/validate.ts';

const ns = 'shop';
const good: JsonObject = {
  provider: 'aws',
  objectStorage: { bucket: 'mine', prefix: 'team/backups' },
  credential: { name: 'creds', key: 'cloud' },
  config: { region: 'eu-west-1', s3Url: 'https://s3.example.com', s3ForcePathStyle: 'true' },
};
const problems = (spec: JsonObject, enforced: JsonObject = {}) => bslSpecProblems(ns, spec, enforced);
const staticKeys = '[default]\naws_access_key_id = AKIA\naws_secret_access_key = secret\n';

describe('bslSpecProblems', () => {
  it('accepts an S3 location with a Secret of the namespace', () => {
    expect(problems(good)).toEqual([]);
    expect(problems({ ...good, provider: 'velero.io/aws', objectStorage: { bucket: 'b' } })).toEqual([]);
  });

  it('requires a credential: without one Velero would use its own identity', () => {
    const { credential: _c, ...rest } = good;
    expect(problems(rest)).toEqual([
      expect.stringContaining('spec.backupStorageLocationSpec.credential is required'),
    ]);
    expect(problems({ ...good, credential: { name: 'creds', key: '' } })).toEqual([
      expect.stringContaining('credential.key is required'),
    ]);
  });

  it('refuses default: true and says how to use the location instead', () => {
    expect(problems({ ...good, default: true })).toEqual([
      expect.stringContaining('default may not be true'),
    ]);
    expect(problems({ ...good, default: false })).toEqual([]);
  });

  it('refuses prefixes that leave the namespace prefix', () => {
    for (const prefix of ['../other', 'a/../../b', '/abs', 'a//b', 'a/', './a', 'a\\b', 'a\u0000b']) {
      expect(prefixProblems(prefix), prefix).not.toEqual([]);
      expect(problems({ ...good, objectStorage: { bucket: 'b', prefix } }), prefix).not.toEqual([]);
    }
    expect(prefixProblems('a/b.c/d..e')).toEqual([]);
    expect(forcedPrefix(ns, undefined)).toBe('shop');
    expect(forcedPrefix(ns, '')).toBe('shop');
    expect(forcedPrefix(ns, 'x/y')).toBe('shop/x/y');
  });

  it('refuses config keys that read files on Velero machine or are not reviewed', () => {
    for (const key of [
      'credentialsFile',
      'customerKeyEncryptionFile',
      'enableSharedConfig',
      'bucket',
      'prefix',
    ]) {
      const found = problems({ ...good, config: { [key]: '/etc/velero/cloud' } });
      expect(found, key).toEqual([expect.stringContaining(`config.${key} is not allowed`)]);
    }
    expect(problems({ ...good, config: { someFutureKey: 'x' } })).toEqual([
      expect.stringContaining('config.someFutureKey is not a setting tenants may use'),
    ]);
    expect(
      problems({ ...good, config: { profile: 'p', tagging: 'a=b', kmsKeyId: 'k', caCert: 'PEM' } }),
    ).toEqual([]);
  });

  it('refuses other providers and caCertRef (a Secret in Velero namespace)', () => {
    expect(problems({ ...good, provider: 'velero.io/gcp' })).toEqual([
      expect.stringContaining('provider "velero.io/gcp" is not available to tenants'),
    ]);
    expect(
      problems({
        ...good,
        objectStorage: { bucket: 'b', caCertRef: { name: 'cloud-credentials', key: 'cloud' } },
      }),
    ).toEqual([expect.stringContaining('caCertRef is not allowed')]);
  });

  it('refuses too frequent validation and sync', () => {
    expect(problems({ ...good, validationFrequency: '1s' })).toEqual([
      expect.stringContaining('validationFrequency "1s" is too short'),
    ]);
    expect(problems({ ...good, backupSyncPeriod: 'soon' })).toEqual([
      expect.stringContaining('is not a duration'),
    ]);
    expect(problems({ ...good, backupSyncPeriod: '0', validationFrequency: '5m' })).toEqual([]);
  });

  it('refuses overrides of enforced fields with the seed message, and fills them in', () => {
    const enforced = { config: { region: 'us-east-1' }, accessMode: 'ReadWrite' };
    expect(problems(good, enforced)).toEqual([
      'NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.region field value is enforced by admin user, can not override it',
    ]);
    const { config: _c, ...noConfig } = good;
    expect(problems(noConfig, enforced)).toEqual([]);
    const spec = veleroBslSpec(ns, noConfig, enforced, 'shop-loc-uuid');
    expect(spec).toEqual({
      provider: 'aws',
      objectStorage: { bucket: 'mine', prefix: 'shop/team/backups' },
      credential: { name: 'shop-loc-uuid', key: 'cloud' },
      config: { region: 'us-east-1' },
      accessMode: 'ReadWrite',
      default: false,
    });
  });

  it('ignores an enforced credential or objectStorage (tenantkit sets those)', () => {
    const enforced = { objectStorage: { bucket: 'admin' }, credential: { name: 'x', key: 'y' } };
    expect(problems(good, enforced)).toEqual([]);
    const spec = veleroBslSpec(ns, good, enforced, 'u');
    expect(spec.objectStorage).toEqual({ bucket: 'mine', prefix: 'shop/team/backups' });
    expect(spec.credential).toEqual({ name: 'u', key: 'cloud' });
  });
});

describe('credentialProblems', () => {
  it('accepts static keys, and a role chained from static keys in the same file', () => {
    expect(credentialProblems(staticKeys)).toEqual([]);
    const chained = `${staticKeys}\n[profile app]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = default\n`;
    expect(credentialProblems(chained, 'app')).toEqual([]);
  });

  it('refuses keys that read files, run processes or borrow Velero identity', () => {
    const cases: Record<string, string> = {
      web_identity_token_file:
        '[default]\nrole_arn = arn:aws:iam::1:role/x\nweb_identity_token_file = /var/run/secrets/eks.amazonaws.com/serviceaccount/token\n',
      credential_process: `${staticKeys}credential_process = /bin/sh -c id\n`,
      credential_source:
        '[default]\nrole_arn = arn:aws:iam::1:role/x\ncredential_source = Ec2InstanceMetadata\n',
      sso_start_url: '[default]\nsso_start_url = https://x\nsso_role_name = r\n',
      ca_bundle: `${staticKeys}ca_bundle = /etc/ssl/ca.pem\n`,
    };
    for (const [key, text] of Object.entries(cases)) {
      const found = credentialProblems(text, undefined, 'Secret creds key cloud');
      expect(
        found.some((p) => p.includes(`sets ${key}`)),
        `${key}: ${found.join(' | ')}`,
      ).toBe(true);
    }
    // Keys are matched case-insensitively and in any profile, not only the one used.
    expect(credentialProblems(`${staticKeys}[other]\nCREDENTIAL_PROCESS=x\n`)).toEqual([
      expect.stringContaining('sets credential_process'),
    ]);
    expect(credentialProblems(`${staticKeys}[sso-session corp]\nsso_region = x\n`).length).toBe(2);
  });

  it('refuses a profile without static keys (the SDK would fall back to Velero identity)', () => {
    expect(credentialProblems('[default]\nregion = eu-west-1\n')).toEqual([
      expect.stringContaining('has no aws_access_key_id and aws_secret_access_key'),
    ]);
    expect(credentialProblems('[default]\nrole_arn = arn:aws:iam::1:role/x\n')).toEqual([
      expect.stringContaining('role_arn without source_profile'),
    ]);
    expect(credentialProblems(staticKeys, 'missing')).toEqual([
      expect.stringContaining('has no profile [missing]'),
    ]);
    expect(
      credentialProblems(
        '[a]\nrole_arn = r\nsource_profile = b\n[b]\nrole_arn = r\nsource_profile = a\n',
        'a',
      ),
    ).toEqual([expect.stringContaining('loops back')]);
    expect(credentialProblems('just a token')).toEqual([
      expect.stringContaining('is not an AWS credentials file'),
    ]);
  });
});

describe('backupSpecProblems storageLocation', () => {
  it('accepts only a NonAdminBackupStorageLocation of the namespace, by name', () => {
    const mine = (name: string) => name === 'mine';
    expect(backupSpecProblems(ns, { storageLocation: 'mine' }, {}, mine)).toEqual([]);
    expect(backupSpecProblems(ns, { storageLocation: 'default' }, {}, mine)).toEqual([
      expect.stringContaining('"default" is not a NonAdminBackupStorageLocation of namespace shop'),
    ]);
    // Callers that cannot resolve locations refuse any.
    expect(backupSpecProblems(ns, { storageLocation: 'mine' }, {})).toEqual([
      expect.stringContaining('storageLocation is not supported here'),
    ]);
  });
});
