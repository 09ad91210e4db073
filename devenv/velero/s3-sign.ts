// Signs requests to the local S3 server (devenv/go/velero/cmd/s3server) with AWS Signature Version 4, as it
// requires: tests and `tenantkit dev` read and write the store as Velero does, with its credentials. The
// payload is always hashed (bodies here are small), the path and query encoded as SigV4 canonicalizes
// them, so the URL sent is the one signed.
import { createHash, createHmac } from 'node:crypto';

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** The `[default]` static keys of an AWS shared credentials file (as in Velero's cloud Secret). */
export function parseCredentials(file: string): S3Credentials {
  const value = (name: string) => new RegExp(`^\\s*${name}\\s*[=:]\\s*(\\S+)\\s*$`, 'm').exec(file)?.[1];
  const accessKeyId = value('aws_access_key_id');
  const secretAccessKey = value('aws_secret_access_key');
  if (!accessKeyId || !secretAccessKey) throw new Error('no aws_access_key_id and aws_secret_access_key');
  return { accessKeyId, secretAccessKey };
}

/** The credentials as an AWS shared credentials file with one `[default]` profile. */
export const credentialsFile = (c: S3Credentials): string =>
  `[default]\naws_access_key_id = ${c.accessKeyId}\naws_secret_access_key = ${c.secretAccessKey}\n`;

/** SigV4's URI encoding: every byte but A-Z a-z 0-9 - _ . ~ (and '/' in a path) as %XX. */
export function uriEncode(text: string, path = false): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out +=
      /[A-Za-z0-9\-_.~]/.test(c) || (path && c === '/')
        ? c
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

export interface SignInput {
  method: string;
  /** The endpoint, e.g. http://127.0.0.1:9000. */
  endpoint: string;
  /** Decoded path, e.g. `/bucket/backups/a b.tar.gz`. */
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Uint8Array;
  region?: string;
  now?: Date;
}

/** The URL and headers (Authorization included) of a signed request. */
export function signRequest(
  credentials: S3Credentials,
  input: SignInput,
): { url: string; headers: Record<string, string> } {
  const url = new URL(input.endpoint);
  const amzDate = (input.now ?? new Date())
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const date = amzDate.slice(0, 8);
  const region = input.region ?? 'minio';
  const path = uriEncode(input.path, true);
  const query = Object.entries(input.query ?? {})
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const headers: Record<string, string> = {
    ...Object.fromEntries(Object.entries(input.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v.trim()])),
    host: url.host,
    'x-amz-date': amzDate,
    'x-amz-content-sha256': sha256(input.body ?? new Uint8Array()),
  };
  const names = Object.keys(headers).sort();
  const canonical = [
    input.method,
    path,
    query,
    ...names.map((n) => `${n}:${headers[n]}`),
    '',
    names.join(';'),
    headers['x-amz-content-sha256'],
  ].join('\n');
  const scope = `${date}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  let key = hmac(`AWS4${credentials.secretAccessKey}`, date);
  for (const part of [region, 's3', 'aws4_request']) key = hmac(key, part);
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  const { host: _host, ...sent } = headers;
  return {
    url: `${url.origin}${path}${query ? `?${query}` : ''}`,
    headers: {
      ...sent,
      authorization: `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`,
    },
  };
}

/** fetch() of a signed request to the store. */
export async function s3Fetch(
  credentials: S3Credentials,
  input: SignInput,
  init: { signal?: AbortSignal } = {},
): Promise<Response> {
  const { url, headers } = signRequest(credentials, input);
  return fetch(url, {
    method: input.method,
    headers,
    ...(input.body ? { body: input.body } : {}),
    signal: init.signal ?? AbortSignal.timeout(30_000),
  });
}
