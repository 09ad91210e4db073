// The credentials file of a tenant's storage location, read and written by tenantkit.
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
 * The settings of any profile that would make Velero's AWS SDK use something other than the static keys
 * given (a process to run, a role, a web identity, SSO), each said once.
 */
function refusedSettings(ini: ReturnType<typeof parseIni>, where: string): string[] {
  const problems: string[] = [];
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
  return problems;
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
  const problems = [...ini.problems, ...refusedSettings(ini, where)];
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
