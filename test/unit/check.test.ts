// `tenantkit check` (the chart's `helm test`): a real HTTPS server on loopback with a certificate from a
// CA made here; the check passes only on a 200 from a server that CA vouches for, and says why otherwise.
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkUrl } from '../../src/cli/check.ts';
import { type CertificateAuthority, createCA } from '../../src/serving/certs.ts';

describe('tenantkit check', () => {
  let server: Server;
  let ca: CertificateAuthority;
  let base = '';
  beforeAll(async () => {
    ca = await createCA('check-test-ca');
    const pair = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
    server = createServer({ cert: pair.certPem, key: pair.keyPem }, (req, res) => {
      res.statusCode = req.url === '/readyz' ? 200 : 503;
      res.end(req.url === '/readyz' ? 'ok' : 'not ready');
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it('passes on a 200 from a server its CA vouches for', async () => {
    const outcome = await checkUrl(`${base}/readyz`, [ca.certPem], 5000);
    expect(outcome.ok).toBe(true);
    expect(outcome.detail).toMatch(/^HTTP 200 in \d+ ms$/);
  });

  it('fails on any other status, saying which', async () => {
    const outcome = await checkUrl(`${base}/livez`, [ca.certPem], 5000);
    expect(outcome).toMatchObject({ ok: false, detail: expect.stringMatching(/^HTTP 503/) });
  });

  it('fails on a server another CA vouches for', async () => {
    const other = await createCA('someone-else');
    const outcome = await checkUrl(`${base}/readyz`, [other.certPem], 5000);
    expect(outcome.ok).toBe(false);
    expect(outcome.detail).toContain('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
  });

  it('fails, saying so, on a closed port, plain http, and no URL at all', async () => {
    const closed = await checkUrl('https://127.0.0.1:1/readyz', [ca.certPem], 5000);
    expect(closed).toMatchObject({ ok: false, detail: expect.stringContaining('ECONNREFUSED') });
    expect(await checkUrl('http://127.0.0.1/readyz', [ca.certPem], 5000)).toMatchObject({
      ok: false,
      detail: 'only https URLs are checked',
    });
    expect((await checkUrl('readyz', [ca.certPem], 5000)).detail).toContain('not a URL');
  });
});
