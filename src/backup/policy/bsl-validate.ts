// What a tenant may ask of a storage location (NonAdminBackupStorageLocation), checked the same way by the
// admission webhook and the controller, and what the Velero BackupStorageLocation made for it looks like.
// A tenant location runs inside Velero, with Velero's files, environment and cloud identity next to it:
// nothing a tenant writes may make the AWS plugin read a file, run a process or fall back to Velero's own
// identity, and the objects always land under a prefix named after the tenant's namespace.
import { BlockList, isIP } from 'node:net';
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
  // Selects the profile of the tenant's file whose static keys are copied (readCredentials); Velero's
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

// ---- The endpoint ------------------------------------------------------------------------------------
//
// Velero (and tenantkit's reachability check) send requests to a tenant location's endpoint from inside
// the cluster, and report what came back in the location's status: an endpoint is a way to reach, and
// to probe, whatever Velero can reach. Link-local addresses (where clouds serve instance metadata and
// credentials) are never allowed; an admin's allow-list narrows the rest to stores they trust to answer
// (a store that accepts a connection and never answers holds Velero's one backup worker).

/** Link-local ranges and the names clouds give their metadata service. */
const linkLocal = new BlockList();
linkLocal.addSubnet('169.254.0.0', 16, 'ipv4');
linkLocal.addSubnet('fe80::', 10, 'ipv6');
linkLocal.addSubnet('::ffff:169.254.0.0', 112, 'ipv6');
const metadataHosts = new Set([
  'metadata',
  'metadata.google.internal',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** The host of a URL's hostname without IPv6 brackets, lower case. */
const bareHost = (hostname: string) => hostname.replace(/^\[|\]$/g, '').toLowerCase();

/** Whether `host` (an address or a name) is link-local or a cloud metadata service's name. */
export function isLinkLocal(host: string): boolean {
  const family = isIP(host);
  if (family === 4) return linkLocal.check(host, 'ipv4');
  if (family === 6) return linkLocal.check(host, 'ipv6');
  return metadataHosts.has(host.replace(/\.$/, ''));
}

/**
 * Whether `host`/`port` match an allow-list entry: `host` (any port), `host:port`, `*.domain` (any
 * subdomain, not the domain itself) or `*.domain:port`; IPv6 as `[addr]` or `[addr]:port`.
 */
export function endpointAllowed(host: string, port: string, entry: string): boolean {
  const m = /^(\[[^\]]*\]|[^:]*)(?::([0-9]{1,5}))?$/.exec(entry.toLowerCase());
  if (!m) return false;
  const pattern = bareHost(m[1]!);
  const wantPort = m[2];
  if (wantPort !== undefined && wantPort !== port) return false;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return host === pattern;
}

/**
 * Problems with the endpoint a tenant location's config names (config.s3Url; AWS's own S3 when it is
 * absent), against the admin's allow-list (undefined: any endpoint but link-local ones).
 */
export function endpointProblems(config: JsonObject, allowed: readonly string[] | undefined): string[] {
  const field = `${path}.config.s3Url`;
  const raw = config.s3Url;
  const listed = allowed && allowed.length > 0 ? ` (allowed: ${allowed.join(', ')})` : '';
  const policy = 'NonAdminBackupConfig "cluster" spec.nonAdmin.allowedStorageEndpoints';
  if (raw === undefined || raw === null || raw === '') {
    if (allowed === undefined) return [];
    const region =
      typeof config.region === 'string' && /^[a-z0-9-]{1,32}$/.test(config.region) ? config.region : '';
    const host = region ? `s3.${region}.amazonaws.com` : 's3.amazonaws.com';
    if (allowed.some((e) => endpointAllowed(host, '443', e))) return [];
    return [
      `${field} is required on this cluster: without it the location would use AWS's own S3 (${host}), which is not in ${policy}${listed}; set config.s3Url to an allowed endpoint`,
    ];
  }
  if (typeof raw !== 'string') return [`${field} must be a string such as https://s3.example.com`];
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return [
      `${field} "${raw}" is not a URL; write it like https://s3.example.com or http://minio.storage.svc:9000`,
    ];
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return [`${field} "${raw}" must start with http:// or https://`];
  }
  if (url.username !== '' || url.password !== '') {
    return [`${field} may not hold a user name or password; put the keys in the credential Secret`];
  }
  const host = bareHost(url.hostname);
  if (isLinkLocal(host)) {
    return [
      `${field} "${raw}" names a link-local address (${host}), where clouds serve instance metadata and credentials; tenant locations may never use it`,
    ];
  }
  if (allowed === undefined) return [];
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  if (allowed.some((e) => endpointAllowed(host, port, e))) return [];
  return [
    `${field} "${raw}" is not an endpoint tenants may use on this cluster: ${host}:${port} is not in ${policy}${listed}; use an allowed endpoint or ask your admin to add yours`,
  ];
}

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
  // The copy holds a single `[default]` profile (renderCredentials), and the BSL must name it: the SDK
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

// ---- The credentials file ------------------------------------------------------------------------------
//
// The tenant's file is never handed to Velero: it is read only to take the static keys of the profile
// in use, and Velero gets a file tenantkit writes itself (renderCredentials). Whatever the AWS SDK's own
// INI reader makes of odd syntax (`key: value`, inline ` #` comments, `[default]x` headers), the file it
// reads then holds nothing but those keys, so it cannot run a process, read a file or fall back to
// Velero's own identity. The reader below is strict: anything it could read two ways is refused.

/** The keys tenantkit carries over, in the order written; the session token is optional. */
const staticKeyNames = ['aws_access_key_id', 'aws_secret_access_key', 'aws_session_token'] as const;
type StaticKeyName = (typeof staticKeyNames)[number];
export type StaticCredentials = Partial<Record<StaticKeyName, string>> &
  Record<'aws_access_key_id' | 'aws_secret_access_key', string>;

/**
 * Keys that would make the AWS SDK (inside Velero) read a file, run a process or borrow an identity from
 * Velero's machine, each with the reason given to the tenant. They are dropped from the copy anyway; they
 * are refused (in any profile) so the tenant learns that they would not work and why.
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

/** Keys of the profile in use that only the static keys could not honour: refused rather than dropped. */
const unsupportedKeys: Record<string, string> = {
  role_arn:
    'tenantkit gives Velero only the static keys (roles are not assumed); give the keys of an identity that may use the bucket and remove role_arn',
  source_profile:
    'tenantkit gives Velero only the static keys of the profile in use; put aws_access_key_id and aws_secret_access_key in that profile and remove source_profile',
};

const reasonFor = (table: Record<string, string>, key: string): string | undefined =>
  Object.hasOwn(table, key) ? table[key] : undefined;

interface Entry {
  line: number;
  key: string;
  value: string;
  /** The section the entry is in (profile name, `profile ` removed), if any. */
  section: string | undefined;
  /** Indented lines are sub-properties (e.g. of `s3 =`), not profile keys. */
  indented: boolean;
}

interface Ini {
  sections: { name: string; line: number }[];
  entries: Entry[];
  problems: string[];
}

/** ASCII blanks only, as Go's reader trims: JavaScript's trim() would also drop a U+FEFF inside a value. */
const trim = (text: string) => text.replace(/^[ \t\v\f]+|[ \t\v\f]+$/g, '');

/** The profile a section header names: `[name]` and `[profile name]` are the same profile. */
const profileOf = (header: string) => trim(header.replace(/^profile[ \t]+/, ''));

/** The lines of an INI file, strictly: a line is blank, a comment, a lone `[header]` or `key = value`. */
function parseIni(text: string, where: string): Ini {
  const ini: Ini = { sections: [], entries: [], problems: [] };
  let section: string | undefined;
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
  for (const [i, line] of lines.entries()) {
    const n = i + 1;
    const trimmed = trim(line);
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    if (trimmed.startsWith('[')) {
      // The SDK ignores a header followed by anything (`[default]x`): its keys would land elsewhere.
      const header = /^\[([^[\]]*)\]$/.exec(trimmed);
      if (!header || trim(header[1]!) === '') {
        ini.problems.push(
          `${where}: line ${n} is not a section header: write the profile name alone in brackets on its own line, like [default]`,
        );
        section = undefined;
        continue;
      }
      const name = trim(header[1]!);
      ini.sections.push({ name, line: n });
      section = profileOf(name);
      continue;
    }
    // As the SDK does: the key ends at the first "=" or ":", whichever comes first.
    const sep = trimmed.search(/[=:]/);
    if (sep <= 0) {
      ini.problems.push(
        `${where}: line ${n} is neither a [section], a key = value line nor a comment; fix or remove it`,
      );
      continue;
    }
    ini.entries.push({
      line: n,
      key: trim(trimmed.slice(0, sep)).toLowerCase(),
      value: trim(trimmed.slice(sep + 1)),
      section,
      indented: /^[ \t\v\f]/.test(line),
    });
  }
  return ini;
}

/**
 * What is wrong with a key's value, or undefined: printable ASCII without anything an INI reader might
 * take as a separator, a comment or a quote. The value itself is never echoed (it is a secret).
 */
function valueProblem(key: StaticKeyName, value: string): string | undefined {
  // A session token is base64: its padding "=" is kept (the written file puts it after the separator).
  const v = key === 'aws_session_token' ? value.replace(/={1,2}$/, '') : value;
  if (v === '') return 'is empty';
  if (/[ \t]/.test(v)) return 'contains a space or tab (an inline comment? put comments on their own line)';
  if (/[#;]/.test(v)) return 'contains "#" or ";" (an inline comment? put comments on their own line)';
  if (/["'`]/.test(v)) return 'contains a quote (write the value without quotes)';
  if (/[=:]/.test(v)) return 'contains "=" or ":" (one key = value per line)';
  if (v.includes('\\')) return 'contains a backslash';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(v)) return 'contains a control character';
  if (/[^\u0021-\u007e]/.test(v)) return 'contains a non-ASCII character';
  return undefined;
}

/**
 * Reads a tenant's credential Secret key (an AWS credentials file): the static keys of `profile` (the
 * location's config.profile, default `default`), or every problem found, each saying what to change.
 * `where` names the Secret and key in messages.
 */
export function readCredentials(
  text: string,
  profile = 'default',
  where = 'the Secret',
): { keys: StaticCredentials; problems: [] } | { keys?: undefined; problems: string[] } {
  const ini = parseIni(text, where);
  const problems = [...ini.problems];
  const told = new Set<string>();
  for (const { key } of ini.entries) {
    const why = reasonFor(refusedKeys, key) ?? (key.startsWith('sso_') ? refusedKeys.sso_session : undefined);
    if (why && !told.has(key)) {
      told.add(key);
      problems.push(
        `${where} sets ${key}, which ${why}; remove it and give aws_access_key_id and aws_secret_access_key`,
      );
    }
  }
  for (const { name } of ini.sections) {
    if (/^sso-session(\s|$)/.test(name)) {
      problems.push(
        `${where} has an [${name}] section, which uses SSO tokens cached on Velero's machine; remove it`,
      );
    }
  }
  if (ini.sections.length === 0) {
    problems.push(
      `${where} is not an AWS credentials file: write "[default]" followed by aws_access_key_id = ... and aws_secret_access_key = ...`,
    );
    return { problems };
  }
  const headers = ini.sections.filter((s) => profileOf(s.name) === profile);
  if (headers.length === 0) {
    problems.push(
      `${where} has no profile [${profile}]; add it${profile === 'default' ? '' : ' or change config.profile'}`,
    );
  } else if (headers.length > 1) {
    // The SDK merges repeated sections; which key wins is not worth guessing.
    problems.push(
      `${where}: profile [${profile}] appears ${headers.length} times (lines ${headers.map((h) => h.line).join(', ')}); keep one`,
    );
  }
  const own = ini.entries.filter((e) => e.section === profile && !e.indented);
  const keys: Partial<Record<StaticKeyName, string>> = {};
  const lineOf: Partial<Record<StaticKeyName, number>> = {};
  for (const entry of own) {
    const unsupported = reasonFor(unsupportedKeys, entry.key);
    if (unsupported) problems.push(`${where}: profile [${profile}] sets ${entry.key}: ${unsupported}`);
    const name = staticKeyNames.find((k) => k === entry.key);
    if (!name) continue; // region, output, …: not needed by Velero's plugin, not copied
    if (lineOf[name] !== undefined) {
      problems.push(
        `${where}: profile [${profile}] sets ${name} twice (lines ${lineOf[name]} and ${entry.line}); keep one`,
      );
      continue;
    }
    lineOf[name] = entry.line;
    const wrong = valueProblem(name, entry.value);
    if (wrong) {
      problems.push(
        `${where}: ${name} of profile [${profile}] (line ${entry.line}) ${wrong}; write it as ${name} = <value>`,
      );
    } else keys[name] = entry.value;
  }
  if (headers.length > 0) {
    for (const name of ['aws_access_key_id', 'aws_secret_access_key'] as const) {
      if (lineOf[name] === undefined) {
        problems.push(
          `${where}: profile [${profile}] has no ${name}, so the AWS SDK would fall back to Velero's own identity; add a line ${name} = <value> under [${profile}]`,
        );
      }
    }
  }
  if (problems.length > 0 || !keys.aws_access_key_id || !keys.aws_secret_access_key) {
    return { problems: problems.length > 0 ? problems : [`${where}: no usable static keys`] };
  }
  return {
    keys: {
      ...keys,
      aws_access_key_id: keys.aws_access_key_id,
      aws_secret_access_key: keys.aws_secret_access_key,
    },
    problems: [],
  };
}

/** Problems with a tenant's credentials file (see readCredentials), or none. */
export function credentialProblems(text: string, profile = 'default', where = 'the Secret'): string[] {
  return readCredentials(text, profile, where).problems;
}

/**
 * The credentials file Velero gets: one `[default]` profile holding the tenant's static keys and
 * nothing else (the values were checked by readCredentials: no separators, comments or whitespace).
 */
export function renderCredentials(keys: StaticCredentials): string {
  const lines = ['[default]'];
  for (const name of staticKeyNames) {
    const value = keys[name];
    if (value !== undefined) lines.push(`${name} = ${value}`);
  }
  return `${lines.join('\n')}\n`;
}
