// Where a tenant's storage location may point (the admin's allow-list, never link-local addresses) and
// tenantkit's probe of the endpoint: a store that accepts connections and never answers is caught within
// the probe's deadline, a closed port at once, and any HTTP answer counts as answering.
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeEndpoint } from '../../src/backup/controllers/location/probe.ts';
import { bslSpecProblems } from '../../src/backup/policy/bsl-validate.ts';
import { endpointAllowed, endpointProblems } from '../../src/backup/policy/endpoint.ts';
import type { JsonObject } from '../../src/backup/policy/enforce.ts';

const spec = (s3Url?: string): JsonObject => ({
  provider: 'aws',
  objectStorage: { bucket: 'mine' },
  credential: { name: 'creds', key: 'cloud' },
  config: { region: 'eu-west-1', ...(s3Url !== undefined ? { s3Url } : {}) },
});
const problems = (s3Url: string | undefined, allowed?: string[], enforced: JsonObject = {}) =>
  bslSpecProblems('shop', spec(s3Url), enforced, allowed);

describe('endpointAllowed', () => {
  it('matches hosts, ports and subdomains, nothing more', () => {
    expect(endpointAllowed('s3.example.com', '443', 's3.example.com')).toBe(true);
    expect(endpointAllowed('s3.example.com', '9000', 's3.example.com')).toBe(true);
    expect(endpointAllowed('s3.example.com', '9000', 's3.example.com:443')).toBe(false);
    expect(endpointAllowed('a.b.example.com', '443', '*.example.com')).toBe(true);
    expect(endpointAllowed('example.com', '443', '*.example.com')).toBe(false);
    expect(endpointAllowed('evilexample.com', '443', '*.example.com')).toBe(false);
    expect(endpointAllowed('s3.example.com.evil.io', '443', 's3.example.com')).toBe(false);
    expect(endpointAllowed('::1', '9000', '[::1]:9000')).toBe(true);
    expect(endpointAllowed('::1', '9001', '[::1]:9000')).toBe(false);
  });
});

describe('endpointProblems', () => {
  it('allows any endpoint but link-local ones when the admin lists none', () => {
    expect(problems('http://127.0.0.1:9000')).toEqual([]);
    expect(problems(undefined)).toEqual([]);
    for (const url of [
      'http://169.254.169.254/latest',
      'http://[fe80::1]:80',
      'http://[::ffff:169.254.169.254]/',
      'http://metadata.google.internal/',
    ]) {
      expect(problems(url), url).toEqual([expect.stringMatching(/link-local address .*never use it/)]);
    }
  });

  it("refuses an endpoint outside the admin's list and names the list", () => {
    const allowed = ['s3.example.com', '*.storage.corp:9000'];
    expect(problems('https://s3.example.com', allowed)).toEqual([]);
    expect(problems('http://minio.storage.corp:9000/', allowed)).toEqual([]);
    const [refused] = problems('http://minio.storage.corp:9001', allowed);
    expect(refused).toContain('minio.storage.corp:9001 is not in NonAdminBackupConfig "cluster"');
    expect(refused).toContain('allowed: s3.example.com, *.storage.corp:9000');
    expect(problems('http://10.0.0.5', allowed)).toHaveLength(1);
    // An empty list allows no tenant endpoint at all.
    expect(problems('https://s3.example.com', [])).toHaveLength(1);
  });

  it("treats a location without s3Url as AWS's own S3, allowed only when listed", () => {
    expect(problems(undefined, ['*.amazonaws.com'])).toEqual([]);
    expect(problems(undefined, ['s3.example.com'])).toEqual([
      expect.stringContaining("AWS's own S3 (s3.eu-west-1.amazonaws.com)"),
    ]);
  });

  it('refuses what is not an http(s) URL, and user names in it', () => {
    expect(endpointProblems({ s3Url: 'not a url' }, undefined)).toEqual([
      expect.stringContaining('is not a URL'),
    ]);
    expect(endpointProblems({ s3Url: 'file:///etc/passwd' }, undefined)).toEqual([
      expect.stringContaining('must start with http:// or https://'),
    ]);
    expect(endpointProblems({ s3Url: 'http://u:p@s3.example.com' }, undefined)).toEqual([
      expect.stringContaining('may not hold a user name or password'),
    ]);
    expect(endpointProblems({ s3Url: 42 }, undefined)).toEqual([expect.stringContaining('must be a string')]);
  });

  it("leaves an admin's enforced s3Url alone", () => {
    expect(problems(undefined, [], { config: { s3Url: 'http://169.254.1.1' } })).toEqual([]);
  });
});

describe('probeEndpoint', () => {
  const held: Socket[] = [];
  const silent = createServer((socket) => held.push(socket));
  const answering = createHttpServer((_req, res) => res.writeHead(403).end());
  const closed = createServer();
  const port = (s: { address(): unknown }) => (s.address() as { port: number }).port;
  let closedPort = 0;

  beforeAll(async () => {
    for (const s of [silent, answering, closed]) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    closedPort = port(closed);
    await new Promise<void>((r) => closed.close(() => r()));
  });
  afterAll(() => {
    for (const s of held) s.destroy();
    silent.close();
    answering.close();
  });

  it('says a store that never answers did not answer within the deadline', async () => {
    const started = performance.now();
    const result = await probeEndpoint({ s3Url: `http://127.0.0.1:${port(silent)}` }, 'b', 300);
    expect(result).toEqual({ ok: false, message: expect.stringContaining('did not answer within 0.3s') });
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('says a closed port cannot be reached, and takes any HTTP answer (403) as answering', async () => {
    expect(await probeEndpoint({ s3Url: `http://127.0.0.1:${closedPort}` }, 'b', 2_000)).toEqual({
      ok: false,
      message: expect.stringContaining('cannot be reached (ECONNREFUSED)'),
    });
    expect(await probeEndpoint({ s3Url: `http://127.0.0.1:${port(answering)}/` }, 'b', 2_000)).toEqual({
      ok: true,
    });
  });

  it("does not probe AWS's own S3 (no s3Url): this machine cannot reach it", async () => {
    expect(await probeEndpoint({}, 'b')).toEqual({ ok: true });
  });
});
