// What a tenant may ask of a NonAdminBackupStorageLocation, and what its credential file may hold: pure
// rules, tested on their own (the integration test runs them through the API server and Velero).
import { describe, expect, it } from 'vitest';
import { isMadeFor, isNacuuidOf } from '../../src/backup/controllers/location/lookup.ts';
import { Annotations, Labels, managedLabels } from '../../src/backup/model.ts';
import {
  bslSpecProblems,
  credentialProfile,
  forcedPrefix,
  prefixProblems,
  veleroBslSpec,
} from '../../src/backup/policy/bsl-validate.ts';
import {
  credentialProblems,
  readCredentials,
  renderCredentials,
} from '../../src/backup/policy/credentials.ts';
import type { JsonObject } from '../../src/backup/policy/enforce.ts';
import { backupSpecProblems } from '../../src/backup/policy/validate.ts';
import { nacObjectName } from '../../src/backup/velero/names.ts';

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
      // The copy's one profile, named so that Velero's environment cannot pick another.
      config: { region: 'us-east-1', profile: 'default' },
      accessMode: 'ReadWrite',
      default: false,
    });
  });

  it('refuses config keys that only look allowed through Object.prototype', () => {
    for (const key of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
      // JSON.parse makes "__proto__" an own key, as the API server's JSON does.
      const config = JSON.parse(`{"${key}": "x"}`) as JsonObject;
      expect(problems({ ...good, config }), key).toEqual([
        expect.stringContaining(`config.${key} is not a setting tenants may use`),
      ]);
    }
    // Enforced config of the admin: only its own keys count as enforced.
    expect(problems({ ...good, config: { constructor: 'x' } as JsonObject }, { config: {} })).toEqual([
      expect.stringContaining('config.constructor is not a setting tenants may use'),
    ]);
    expect(problems({ ...good, credential: { name: 'creds', key: 'a/b' } })).toEqual([
      expect.stringContaining('credential.key "a/b" is not a Secret key'),
    ]);
  });

  it('lets an admin pin every location to one endpoint with an enforced config.s3Url', () => {
    const enforced = { config: { s3Url: 'https://s3.corp.example' } };
    // Another endpoint (the metadata service, a tarpit, …) is refused with the seed message.
    expect(problems({ ...good, config: { s3Url: 'http://169.254.169.254' } }, enforced)).toEqual([
      'NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.s3Url field value is enforced by admin user, can not override it',
    ]);
    // Left out (with or without other config), it is filled in; the same value passes.
    const { config: _c, ...noConfig } = good;
    expect(problems(noConfig, enforced)).toEqual([]);
    expect(veleroBslSpec(ns, noConfig, enforced, 'u').config).toEqual({
      s3Url: 'https://s3.corp.example',
      profile: 'default',
    });
    const regionOnly = { ...good, config: { region: 'eu-west-1' } };
    expect(problems(regionOnly, enforced)).toEqual([]);
    expect(veleroBslSpec(ns, regionOnly, enforced, 'u').config).toEqual({
      region: 'eu-west-1',
      s3Url: 'https://s3.corp.example',
      profile: 'default',
    });
    const same = { ...good, config: { s3Url: 'https://s3.corp.example' } };
    expect(problems(same, enforced)).toEqual([]);
    // Case matters to the plugin (it reads config["s3Url"]): another spelling is not a setting at all.
    expect(problems({ ...good, config: { s3URL: 'http://x' } }, enforced)).toEqual([
      expect.stringContaining('config.s3URL is not a setting tenants may use'),
    ]);
  });

  it('ignores an enforced credential or objectStorage (tenantkit sets those)', () => {
    const enforced = { objectStorage: { bucket: 'admin' }, credential: { name: 'x', key: 'y' } };
    expect(problems(good, enforced)).toEqual([]);
    const spec = veleroBslSpec(ns, good, enforced, 'u');
    expect(spec.objectStorage).toEqual({ bucket: 'mine', prefix: 'shop/team/backups' });
    expect(spec.credential).toEqual({ name: 'u', key: 'cloud' });
  });
});

describe('readCredentials and renderCredentials', () => {
  const where = 'Secret creds key cloud';
  const canonical = '[default]\naws_access_key_id = AKIA\naws_secret_access_key = secret\n';
  /** The file Velero would get, or the problems. */
  const copy = (text: string, profile?: string) => {
    const read = readCredentials(text, profile, where);
    return read.keys ? renderCredentials(read.keys) : read.problems;
  };

  it('writes a canonical [default] file with the static keys of the profile in use, nothing else', () => {
    expect(copy(staticKeys)).toBe(canonical);
    const rich = `# mine\n[default]\nregion = eu-west-1\naws_access_key_id = AKIA\n; note\naws_secret_access_key = secret\ns3 =\n  addressing_style = path\n[other]\naws_access_key_id = OTHER\nrole_arn = arn:aws:iam::1:role/x\n`;
    expect(copy(rich)).toBe(canonical);
    expect(copy('[profile app]\naws_access_key_id = APP\naws_secret_access_key = s\n', 'app')).toBe(
      '[default]\naws_access_key_id = APP\naws_secret_access_key = s\n',
    );
    // Session tokens are base64: their padding is kept.
    expect(copy(`${staticKeys}aws_session_token = IQoJb3+/Zz==\n`)).toBe(
      `${canonical}aws_session_token = IQoJb3+/Zz==\n`,
    );
    expect(credentialProfile({ config: { profile: 'app' } }, {})).toBe('app');
    expect(credentialProfile({ config: { profile: 'app' } }, { config: { profile: 'admin' } })).toBe('admin');
    expect(credentialProfile({}, {})).toBe('default');
  });

  it('refuses the file that made the SDK run a script: "#" values and a ":" credential_process', () => {
    const pwn =
      '[default]\naws_access_key_id = #x\naws_secret_access_key = #y\ncredential_process: /tmp/pwn.sh';
    const found = credentialProblems(pwn, undefined, where);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringContaining("sets credential_process, which runs a command on Velero's machine"),
        expect.stringContaining('aws_access_key_id of profile [default] (line 2) contains "#" or ";"'),
        expect.stringContaining('aws_secret_access_key of profile [default] (line 3) contains "#" or ";"'),
      ]),
    );
    // Without credential_process the SDK would have fallen back to Velero's own identity (IMDS).
    expect(copy('[default]\naws_access_key_id = #x\naws_secret_access_key = #y\n')).toEqual([
      expect.stringContaining('contains "#" or ";"'),
      expect.stringContaining('contains "#" or ";"'),
    ]);
    // The value is never echoed in a message: it is a secret.
    for (const p of credentialProblems(
      '[default]\naws_access_key_id = AK IA\naws_secret_access_key = se"cret\n',
    )) {
      expect(p).not.toMatch(/AK IA|se"cret/);
    }
  });

  it('reads ":" as a separator, as the SDK does, and refuses dangerous keys written that way', () => {
    expect(copy('[default]\naws_access_key_id: AKIA\naws_secret_access_key:secret\n')).toBe(canonical);
    expect(credentialProblems(`${staticKeys}web_identity_token_file: /var/run/token\n`)).toEqual([
      expect.stringContaining('sets web_identity_token_file'),
    ]);
    // Whichever of "=" and ":" comes first ends the key; the other one left in a value is refused.
    expect(
      credentialProblems('[default]\naws_access_key_id: AK=IA\naws_secret_access_key = se:cret\n'),
    ).toEqual([
      expect.stringContaining('contains "=" or ":"'),
      expect.stringContaining('contains "=" or ":"'),
    ]);
    expect(credentialProblems(`${staticKeys}aws_session_token = ab=cd\n`)).toEqual([
      expect.stringContaining('aws_session_token of profile [default] (line 4) contains "=" or ":"'),
    ]);
  });

  it('refuses inline comments, quotes, whitespace, control and non-ASCII characters in values', () => {
    const bad: Record<string, string> = {
      'AKIA # mine': 'contains a space or tab',
      'AKIA;x': 'contains "#" or ";"',
      '"AKIA"': 'contains a quote',
      "'AKIA'": 'contains a quote',
      'AK\\IA': 'contains a backslash',
      'AK\u0007IA': 'contains a control character',
      AKIÄ: 'contains a non-ASCII character',
      '': 'is empty',
    };
    for (const [value, expected] of Object.entries(bad)) {
      expect(
        credentialProblems(
          `[default]\naws_access_key_id = ${value}\naws_secret_access_key = s\n`,
          undefined,
          where,
        ),
        value,
      ).toEqual([expect.stringContaining(`aws_access_key_id of profile [default] (line 2) ${expected}`)]);
    }
  });

  it('refuses headers with anything after them, repeated profiles and repeated keys', () => {
    // The SDK ignores `[default]x`: the keys after it would belong to the profile before.
    expect(credentialProblems(`${staticKeys}[default]x\ncredential_process = /tmp/pwn.sh\n`)).toEqual(
      expect.arrayContaining([
        expect.stringContaining('line 4 is not a section header'),
        expect.stringContaining('sets credential_process'),
      ]),
    );
    expect(credentialProblems('[default]x\naws_access_key_id = A\naws_secret_access_key = B\n')).toEqual(
      expect.arrayContaining([expect.stringContaining('line 1 is not a section header')]),
    );
    expect(credentialProblems('[]\n')).toEqual(
      expect.arrayContaining([expect.stringContaining('line 1 is not a section header')]),
    );
    for (const twice of [
      '[default]\naws_access_key_id = A\n[default]\naws_secret_access_key = B\n',
      '[default]\naws_access_key_id = A\naws_secret_access_key = B\n[profile default]\naws_access_key_id = C\n',
    ]) {
      expect(credentialProblems(twice)).toEqual(
        expect.arrayContaining([expect.stringContaining('profile [default] appears 2 times')]),
      );
    }
    expect(credentialProblems(`${staticKeys}aws_access_key_id = OTHER\n`)).toEqual([
      expect.stringContaining('sets aws_access_key_id twice (lines 2 and 4)'),
    ]);
    expect(credentialProblems(`${staticKeys}just words\n`)).toEqual([
      expect.stringContaining('line 4 is neither a [section], a key = value line nor a comment'),
    ]);
  });

  it('reads CRLF and a byte order mark, and writes neither', () => {
    expect(copy('\uFEFF[default]\r\naws_access_key_id = AKIA\r\naws_secret_access_key = secret\r\n')).toBe(
      canonical,
    );
    expect(copy('[default]\raws_access_key_id = AKIA\raws_secret_access_key = secret')).toBe(canonical);
    // A mark anywhere else is part of a value: refused.
    expect(
      credentialProblems('[default]\naws_access_key_id = \uFEFFAKIA\naws_secret_access_key = s\n'),
    ).toEqual([expect.stringContaining('contains a non-ASCII character')]);
  });

  it('refuses keys that read files, run processes or borrow Velero identity, in any profile', () => {
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
      const found = credentialProblems(text, undefined, where);
      expect(
        found.some((p) => p.includes(`sets ${key}`)),
        `${key}: ${found.join(' | ')}`,
      ).toBe(true);
    }
    // Keys are matched case-insensitively, indented or not, and in any profile, not only the one used.
    expect(credentialProblems(`${staticKeys}[other]\nCREDENTIAL_PROCESS=x\n`)).toEqual([
      expect.stringContaining('sets credential_process'),
    ]);
    expect(credentialProblems(`${staticKeys}s3 =\n  credential_process = x\n`)).toEqual([
      expect.stringContaining('sets credential_process'),
    ]);
    expect(credentialProblems(`${staticKeys}[sso-session corp]\nsso_region = x\n`).length).toBe(2);
    // A key named like an Object.prototype member is just an unknown key.
    expect(credentialProblems(`${staticKeys}constructor = x\ntoString = y\n__proto__ = z\n`)).toEqual([]);
  });

  it('refuses a profile without static keys, and roles (only static keys reach Velero)', () => {
    expect(credentialProblems('[default]\nregion = eu-west-1\n')).toEqual([
      expect.stringContaining('profile [default] has no aws_access_key_id'),
      expect.stringContaining('profile [default] has no aws_secret_access_key'),
    ]);
    expect(credentialProblems('[default]\nrole_arn = arn:aws:iam::1:role/x\n')).toEqual(
      expect.arrayContaining([
        expect.stringContaining('sets role_arn: tenantkit gives Velero only the static keys'),
      ]),
    );
    const chained = `${staticKeys}\n[profile app]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = default\n`;
    expect(credentialProblems(chained, 'app')).toEqual(
      expect.arrayContaining([
        expect.stringContaining('sets role_arn'),
        expect.stringContaining('sets source_profile'),
      ]),
    );
    // A role in a profile not in use is dropped, not refused.
    expect(credentialProblems(chained)).toEqual([]);
    expect(credentialProblems(staticKeys, 'missing')).toEqual([
      expect.stringContaining('has no profile [missing]; add it or change config.profile'),
    ]);
    expect(credentialProblems('just a token')).toEqual(
      expect.arrayContaining([expect.stringContaining('is not an AWS credentials file')]),
    );
  });

  it('never writes more than the three keys, one per line, whatever it accepted', () => {
    const accepted = [
      staticKeys,
      '\uFEFF[ default ]\r\n  # c\r\naws_access_key_id:AK\r\naws_secret_access_key = s/+k\r\nregion=x\r\n',
      `${staticKeys}aws_session_token = tok\noutput = json\n[profile x]\ncredential_source_not = 1\n`,
    ];
    for (const text of accepted) {
      const file = copy(text);
      expect(typeof file, String(file)).toBe('string');
      expect(file).toMatch(
        /^\[default\]\naws_access_key_id = [!-~]+\naws_secret_access_key = [!-~]+\n(aws_session_token = [!-~]+\n)?$/,
      );
      expect(file).not.toMatch(/[#;"'`:\\]|= .*=.*=|\r/);
    }
  });
});

describe('status as identity', () => {
  it('accepts only the NACUUID shape tenantkit writes for this very location', () => {
    const id = nacObjectName('shop', 'mine');
    expect(isNacuuidOf(id, 'shop', 'mine')).toBe(true);
    for (const forged of [
      'cloud-credentials',
      'default',
      `${id}x`,
      id.toUpperCase(),
      'shop-mine-not-a-uuid',
    ]) {
      expect(isNacuuidOf(forged, 'shop', 'mine'), forged).toBe(false);
    }
    expect(isNacuuidOf(id, 'shop', 'other')).toBe(false);
    const long = nacObjectName('a'.repeat(40), 'b'.repeat(40));
    expect(isNacuuidOf(long, 'a'.repeat(40), 'b'.repeat(40))).toBe(true);
  });

  it("counts an object as tenantkit's only with its labels and this location's origin", () => {
    const id = nacObjectName('a', 'b-c');
    const marked = {
      metadata: {
        name: id,
        labels: { ...managedLabels, [Labels.nabslUuid]: id },
        annotations: { [Annotations.nabslNamespace]: 'a', [Annotations.nabslName]: 'b-c' },
      },
    };
    expect(isMadeFor(marked, id, 'a', 'b-c')).toBe(true);
    // Namespace a-b, location c: the same NACUUID prefix, another location.
    expect(isNacuuidOf(id.replace(/^a-b-c/, 'a-b-c'), 'a-b', 'c')).toBe(true);
    expect(isMadeFor(marked, id, 'a-b', 'c')).toBe(false);
    expect(isMadeFor({ metadata: { name: id } }, id, 'a', 'b-c')).toBe(false);
    expect(
      isMadeFor({ metadata: { ...marked.metadata, labels: { [Labels.nabslUuid]: id } } }, id, 'a', 'b-c'),
    ).toBe(false);
    expect(isMadeFor(marked, nacObjectName('a', 'b-c'), 'a', 'b-c')).toBe(false);
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
