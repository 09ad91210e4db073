// What a tenant may ask of a storage location (NonAdminBackupStorageLocation), checked the same way by the
// admission webhook and the controller, and what the Velero BackupStorageLocation made for it looks like.
// A tenant location runs inside Velero, with Velero's files, environment and cloud identity next to it:
// nothing a tenant writes may make the AWS plugin read a file, run a process or fall back to Velero's own
// identity, and the objects always land under a prefix named after the tenant's namespace.
import { parseDuration } from './config.ts';
import { endpointProblems } from './endpoint.ts';
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
  // Selects the profile of the tenant's file whose static keys are copied (credentials.ts readCredentials); Velero's
  // BSL always names the copy's one profile, `default`.
  profile: "the profile of the tenant's credentials file to take the keys from",
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
    Object.entries(enforced).filter(
      ([field]) => !Object.hasOwn(unenforceable.NonAdminBackupStorageLocation, field),
    ),
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
export function bslSpecProblems(
  namespace: string,
  spec: JsonObject,
  enforced: JsonObject,
  allowedEndpoints?: readonly string[],
): string[] {
  const problems: string[] = [];
  const allowed = enforceableBslSpec(enforced);
  const provider = Object.hasOwn(allowed, 'provider') ? allowed.provider : spec.provider;
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
  } else if (!/^[-._a-zA-Z0-9]{1,253}$/.test(credential.key) || /^\.\.?$/.test(credential.key)) {
    problems.push(
      `${path}.credential.key "${credential.key}" is not a Secret key: use letters, digits, "-", "_" and "."`,
    );
  }
  if (isObject(credential) && Object.hasOwn(credential, 'namespace')) {
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
    // Own keys only: `key in {}` is true for "constructor", "toString", "__proto__", ….
    for (const key of Object.keys(config)) {
      if (Object.hasOwn(enforcedConfig, key)) continue; // checked against the enforced value below
      if (Object.hasOwn(refusedConfig, key)) {
        problems.push(`${path}.config.${key} is not allowed: it ${refusedConfig[key]}`);
      } else if (!Object.hasOwn(allowedConfig, key)) {
        problems.push(
          `${path}.config.${key} is not a setting tenants may use; remove it (allowed: ${Object.keys(allowedConfig).join(', ')})`,
        );
      }
    }
  }
  if (isObject(config) && !(isObject(allowed.config) && Object.hasOwn(allowed.config, 's3Url'))) {
    problems.push(...endpointProblems(config, allowedEndpoints));
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
  // The copy holds a single `[default]` profile (credentials.ts renderCredentials), and the BSL must name it: the SDK
  // ignores a profile it cannot find and falls back to Velero's own identity, so neither the tenant's
  // config.profile nor an AWS_PROFILE in Velero's environment may select another.
  out.config = { ...(isObject(out.config) ? out.config : {}), profile: 'default' };
  out.default = false;
  return out;
}

/** The profile of the tenant's credentials file to take the keys from: config.profile (enforced first). */
export function credentialProfile(spec: JsonObject, enforced: JsonObject): string {
  const want = enforceableBslSpec(enforced).config;
  const config = spec.config;
  const profile =
    isObject(want) && Object.hasOwn(want, 'profile')
      ? want.profile
      : isObject(config)
        ? config.profile
        : undefined;
  return typeof profile === 'string' && profile !== '' ? profile : 'default';
}
