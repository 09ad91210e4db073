// What a tenant may ask of a storage location (NonAdminBackupStorageLocation), checked the same way by the
// admission webhook and the controller, and what the Velero BackupStorageLocation made for it looks like.
// A tenant location runs inside Velero, with Velero's files, environment and cloud identity next to it:
// nothing a tenant writes may make the AWS plugin read a file, run a process or fall back to Velero's own
// identity, and the objects always land under a prefix named after the tenant's namespace.
import { parseDuration } from './config.ts';
import { enforcedMessage, type Json, type JsonObject, unenforceable, violations } from './enforce.ts';

const path = 'spec.backupStorageLocationSpec';
const kind = 'NonAdminBackupStorageLocation';

/**
 * Providers whose settings were reviewed (velero-plugin-for-aws v1.14, object_store.go and config.go).
 * Other plugins have their own file-reading settings (e.g. Azure's and GCP's credentialsFile), so they are
 * refused until someone reviews them.
 */
export const tenantProviders = ['aws', 'velero.io/aws'];

/**
 * The AWS plugin's settings a tenant may use, and why each is safe: they only shape requests made with
 * the tenant's own credentials to the tenant's own endpoint.
 */
const allowedConfig: Record<string, string> = {
  region: 'the bucket region',
  s3Url: "the tenant's S3 endpoint (requests carry the tenant's credentials only)",
  publicUrl: 'the endpoint put in download links',
  s3ForcePathStyle: 'path-style addressing',
  signatureVersion: 'request signing version',
  // Selects a profile inside the tenant's own credentials file (the only shared file the plugin loads
  // when a credential is set); every profile in that file is checked (credentialProblems).
  profile: "a profile of the tenant's credentials file",
  kmsKeyId: "a KMS key, used with the tenant's credentials",
  serverSideEncryption: 'the server-side encryption algorithm',
  insecureSkipTLSVerify: "TLS checks of the tenant's own endpoint",
  caCert: "a PEM CA bundle for the tenant's endpoint (inline, not a file)",
  tagging: 'tags on uploaded objects',
  checksumAlgorithm: 'the upload checksum',
};

/** Settings refused, each with what is wrong and what to do instead. */
const refusedConfig: Record<string, string> = {
  // The plugin reads this path on Velero's machine: it could load Velero's own credentials.
  credentialsFile:
    "reads a file on Velero's machine; leave it out and set credential to a Secret of this namespace",
  // Read from a path on Velero's machine too.
  customerKeyEncryptionFile:
    "reads a file on Velero's machine; leave it out (use kmsKeyId or serverSideEncryption)",
  // Only exists to load the shared AWS config files (~/.aws/config on Velero's machine).
  enableSharedConfig:
    "loads the shared AWS config of Velero's machine; leave it out (the credential Secret may hold config settings too)",
  // Velero sets both from objectStorage; tenantkit forces the prefix under the namespace.
  bucket: 'is set from objectStorage.bucket; leave it out',
  prefix: 'is set from objectStorage.prefix; leave it out',
};

/** Smallest validationFrequency/backupSyncPeriod a tenant may ask for: each run costs Velero work. */
const minPeriodMs = 60_000;

const isObject = (v: Json | undefined): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The admin's enforced BSL spec, less what tenantkit sets itself (credential, objectStorage). */
export function enforceableBslSpec(enforced: JsonObject): JsonObject {
  return Object.fromEntries(
    Object.entries(enforced).filter(([field]) => !(field in unenforceable.NonAdminBackupStorageLocation)),
  );
}

/** Problems with a tenant's prefix (inside the bucket, below the namespace), or none. */
export function prefixProblems(prefix: string): string[] {
  const field = `${path}.objectStorage.prefix "${prefix}"`;
  if (prefix === '') return [];
  const problems: string[] = [];
  if (prefix.length > 512) problems.push(`${field} is longer than 512 characters; shorten it`);
  if (prefix.startsWith('/')) {
    problems.push(`${field} may not start with "/": it is a path inside this namespace's prefix; remove it`);
  }
  if (prefix.endsWith('/')) problems.push(`${field} may not end with "/"; remove it`);
  // S3 keys are opaque, but some S3-compatible stores map keys to files: never let a key climb out.
  const segments = prefix.replace(/^\/+|\/+$/g, '').split('/');
  if (segments.some((s) => s === '..' || s === '.')) {
    problems.push(`${field} may not contain "." or ".." segments: it cannot leave this namespace's prefix`);
  }
  if (segments.some((s) => s === '') && prefix.replace(/^\/+|\/+$/g, '') !== '') {
    problems.push(`${field} may not contain "//"; use single slashes`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\\\u0000-\u001f\u007f]/.test(prefix)) {
    problems.push(`${field} may not contain backslashes or control characters`);
  }
  return problems;
}

/** Where the tenant's objects go: always below `<namespace>/` in the bucket. */
export function forcedPrefix(namespace: string, prefix: string | undefined): string {
  return prefix ? `${namespace}/${prefix}` : namespace;
}

const period = (field: string, value: Json | undefined, zeroAllowed: boolean): string[] => {
  if (value === undefined || value === null) return [];
  const ms = typeof value === 'string' ? parseDuration(value) : undefined;
  const what = `${path}.${field} "${String(value)}"`;
  if (ms === undefined) return [`${what} is not a duration; write it like 1h or 10m`];
  if (ms === 0 && zeroAllowed) return [];
  if (ms < minPeriodMs) {
    return [
      `${what} is too short: tenant locations may use 1m or more${zeroAllowed ? ' (or 0 to disable)' : ''}; leave it out for Velero's default`,
    ];
  }
  return [];
};

/**
 * Everything wrong with a tenant's BackupStorageLocation spec, each naming the field and the fix; the
 * enforced values are the admin's and are trusted. The Secret's content is checked separately (it needs
 * a read of the Secret; see credentialProblems).
 */
export function bslSpecProblems(namespace: string, spec: JsonObject, enforced: JsonObject): string[] {
  const problems: string[] = [];
  const allowed = enforceableBslSpec(enforced);
  const provider = 'provider' in allowed ? allowed.provider : spec.provider;
  if (typeof provider !== 'string' || provider === '') {
    problems.push(`${path}.provider is required: set it to aws (an S3-compatible store)`);
  } else if (!tenantProviders.includes(provider)) {
    problems.push(
      `${path}.provider "${provider}" is not available to tenants: use aws (any S3-compatible store); tenantkit has reviewed only that plugin's settings`,
    );
  }
  const storage = spec.objectStorage;
  if (!isObject(storage) || typeof storage.bucket !== 'string' || storage.bucket === '') {
    problems.push(`${path}.objectStorage.bucket is required: name your bucket`);
  }
  if (isObject(storage)) {
    const prefix = storage.prefix;
    if (prefix !== undefined && prefix !== null && typeof prefix !== 'string') {
      problems.push(`${path}.objectStorage.prefix must be a string`);
    } else if (typeof prefix === 'string') problems.push(...prefixProblems(prefix));
    if (storage.caCertRef !== undefined && storage.caCertRef !== null) {
      problems.push(
        `${path}.objectStorage.caCertRef is not allowed: it names a Secret in Velero's namespace; put the CA bundle in objectStorage.caCert (base64) or config.caCert (PEM) instead`,
      );
    }
  }
  const credential = spec.credential;
  if (!isObject(credential) || typeof credential.name !== 'string' || credential.name === '') {
    problems.push(
      `${path}.credential is required: name a Secret of namespace ${namespace} and its key holding an AWS credentials file (without it Velero would use its own cloud identity)`,
    );
  } else if (typeof credential.key !== 'string' || credential.key === '') {
    problems.push(
      `${path}.credential.key is required: the key of Secret ${credential.name} that holds the AWS credentials file`,
    );
  }
  if (isObject(credential) && 'namespace' in credential) {
    problems.push(
      `${path}.credential.namespace is not allowed: the Secret is always read from this namespace (${namespace}); leave it out`,
    );
  }
  if (spec.default === true) {
    problems.push(
      `${path}.default may not be true: only an admin chooses Velero's default location; leave it out and name this location in spec.backupSpec.storageLocation of your NonAdminBackups`,
    );
  }
  const config = spec.config;
  if (isObject(config)) {
    const enforcedConfig = isObject(allowed.config) ? allowed.config : {};
    for (const key of Object.keys(config)) {
      if (key in enforcedConfig) continue; // checked against the enforced value below
      const refused = refusedConfig[key];
      if (refused) problems.push(`${path}.config.${key} is not allowed: it ${refused}`);
      else if (!(key in allowedConfig)) {
        problems.push(
          `${path}.config.${key} is not a setting tenants may use; remove it (allowed: ${Object.keys(allowedConfig).join(', ')})`,
        );
      }
    }
  }
  problems.push(...period('validationFrequency', spec.validationFrequency, false));
  problems.push(...period('backupSyncPeriod', spec.backupSyncPeriod, true));
  for (const field of violations(spec, allowed)) problems.push(enforcedMessage(kind, field));
  return problems;
}

/**
 * The Velero BackupStorageLocation spec for a tenant location (call only when bslSpecProblems found
 * nothing): the admin's enforced values filled in, the credential pointing at tenantkit's copy of the
 * tenant's Secret, the prefix under the namespace, never the default location.
 */
export function veleroBslSpec(
  namespace: string,
  spec: JsonObject,
  enforced: JsonObject,
  secretCopy: string,
): JsonObject {
  const allowed = enforceableBslSpec(enforced);
  const out: JsonObject = { ...structuredClone(spec) };
  for (const [key, want] of Object.entries(allowed)) {
    const have = out[key];
    out[key] =
      isObject(want) && isObject(have) ? { ...have, ...structuredClone(want) } : structuredClone(want);
  }
  const storage = isObject(spec.objectStorage) ? spec.objectStorage : {};
  const { caCertRef: _ref, ...rest } = storage;
  out.objectStorage = {
    ...rest,
    prefix: forcedPrefix(namespace, typeof storage.prefix === 'string' ? storage.prefix : undefined),
  };
  const credential = isObject(spec.credential) ? spec.credential : {};
  out.credential = { name: secretCopy, key: String(credential.key ?? '') };
  out.default = false;
  return out;
}

// ---- The credentials file ------------------------------------------------------------------------------

/**
 * Keys of an AWS shared credentials/config file that make the SDK (inside Velero) read a file, run a
 * process or borrow an identity from Velero's machine, each with the reason given to the tenant. The
 * plugin loads the credential file as both the credentials and the config file, so config keys count.
 */
const refusedKeys: Record<string, string> = {
  credential_process: "runs a command on Velero's machine",
  web_identity_token_file: "reads a token file on Velero's machine (Velero's own identity)",
  credential_source: "takes credentials from Velero's environment, instance or container",
  ca_bundle: "reads a file on Velero's machine; use config.caCert in the location instead",
  // The SSO provider reads cached tokens from Velero's home directory.
  sso_start_url: "uses SSO tokens cached on Velero's machine",
  sso_session: "uses SSO tokens cached on Velero's machine",
  sso_account_id: "uses SSO tokens cached on Velero's machine",
  sso_role_name: "uses SSO tokens cached on Velero's machine",
  sso_region: "uses SSO tokens cached on Velero's machine",
  sso_registration_scopes: "uses SSO tokens cached on Velero's machine",
};

interface Profile {
  keys: Map<string, string>;
}

/** Sections of an INI file as the AWS SDK reads them: `[name]` and `[profile name]` are the same profile. */
function parseIni(text: string): { profiles: Map<string, Profile>; sections: string[]; keys: string[] } {
  const profiles = new Map<string, Profile>();
  const sections: string[] = [];
  const keys: string[] = [];
  let current: Profile | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/^\uFEFF/, '');
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const section = /^\[([^\]]*)\]/.exec(trimmed);
    if (section) {
      const name = section[1]!.trim();
      sections.push(name);
      const profile = name.replace(/^profile\s+/, '').trim();
      current = profiles.get(profile) ?? { keys: new Map() };
      profiles.set(profile, current);
      continue;
    }
    const eq = trimmed.indexOf('=');
    const key = (eq < 0 ? trimmed : trimmed.slice(0, eq)).trim().toLowerCase();
    const value = eq < 0 ? '' : trimmed.slice(eq + 1).trim();
    keys.push(key);
    // Indented lines are sub-properties (e.g. `s3 =` blocks), not profile keys.
    if (current && !/^\s/.test(line)) current.keys.set(key, value);
  }
  return { profiles, sections, keys };
}

/**
 * Problems with the content of a tenant's credential Secret key (an AWS credentials/config file), each
 * saying what to change. `profile` is the location's config.profile (default `default`); that profile
 * must give static keys, directly or through role_arn + source_profile within the same file, so the SDK
 * never falls back to Velero's own identity (environment, web identity, instance metadata).
 */
export function credentialProblems(text: string, profile = 'default', where = 'the Secret'): string[] {
  const { profiles, sections, keys } = parseIni(text);
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const key of keys) {
    const why = refusedKeys[key] ?? (key.startsWith('sso_') ? refusedKeys.sso_session : undefined);
    if (why && !seen.has(key)) {
      seen.add(key);
      problems.push(
        `${where} sets ${key}, which ${why}; remove it and give aws_access_key_id and aws_secret_access_key`,
      );
    }
  }
  for (const name of sections) {
    if (/^sso-session(\s|$)/.test(name)) {
      problems.push(
        `${where} has an [${name}] section, which uses SSO tokens cached on Velero's machine; remove it`,
      );
    }
  }
  if (profiles.size === 0) {
    problems.push(
      `${where} is not an AWS credentials file: write "[default]" followed by aws_access_key_id = ... and aws_secret_access_key = ...`,
    );
    return problems;
  }
  // Follow role_arn + source_profile to a profile with static keys, within this file only.
  const chain: string[] = [];
  let name = profile;
  for (;;) {
    const p = profiles.get(name);
    if (!p) {
      problems.push(
        chain.length === 0
          ? `${where} has no profile [${name}]; add it${name === 'default' ? '' : ' or change config.profile'}`
          : `${where}: profile [${chain.at(-1)}] names source_profile ${name}, which is not in the file; add it`,
      );
      break;
    }
    if (chain.includes(name)) {
      problems.push(
        `${where}: source_profile of [${name}] loops back to itself; end the chain at static keys`,
      );
      break;
    }
    chain.push(name);
    const source = p.keys.get('source_profile');
    if (p.keys.has('role_arn') && source) {
      if (chain.length > 5) {
        problems.push(`${where}: role chain from [${profile}] is longer than 5 profiles; shorten it`);
        break;
      }
      name = source;
      continue;
    }
    if (p.keys.has('role_arn')) {
      problems.push(
        `${where}: profile [${name}] sets role_arn without source_profile, so the SDK would assume the role with Velero's own identity; add source_profile naming a profile of this file with static keys`,
      );
      break;
    }
    if (!p.keys.get('aws_access_key_id') || !p.keys.get('aws_secret_access_key')) {
      problems.push(
        `${where}: profile [${name}] has no aws_access_key_id and aws_secret_access_key, so the SDK would fall back to Velero's own identity; add both`,
      );
    }
    break;
  }
  return problems;
}
