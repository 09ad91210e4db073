// The webhook server over real HTTPS: certificate reload without restart, request validation, deadlines.
import { X509Certificate } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/kube/log.ts';
import { createCA } from '../../src/serving/certs.ts';
import { allow } from '../../src/webhook/admission.ts';
import { WebhookServer } from '../../src/webhook/server.ts';

const servers: WebhookServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

function call(port: number, path: string, body?: unknown) {
  return new Promise<{ status: number; text: string; serial: string }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body === undefined ? 'GET' : 'POST',
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        const serial = new X509Certificate(
          (res.socket as unknown as { getPeerX509Certificate(): X509Certificate }).getPeerX509Certificate()
            .raw,
        ).serialNumber;
        let text = '';
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, serial }));
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.write(typeof body === 'string' ? body : JSON.stringify(body));
    req.end();
  });
}

/** A webhook server on a fresh CA's certificate, stopped after the test. */
async function newServer(): Promise<WebhookServer> {
  const ca = await createCA('ca');
  const server = new WebhookServer({
    logger: silentLogger,
    certificate: await ca.issue({ commonName: 'x', usage: 'server', ipAddresses: ['127.0.0.1'] }),
  });
  servers.push(server);
  return server;
}

/** A server with one validating webhook at `/name` that allows everything. */
async function allowing(name: string, warnings?: string[]): Promise<WebhookServer> {
  const server = await newServer();
  server.register({
    name,
    type: 'validating',
    failurePolicy: 'Fail',
    rules: [],
    handler: () => allow(warnings),
  });
  return server;
}

const review = (uid: string) => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid,
    kind: { group: '', version: 'v1', kind: 'ConfigMap' },
    resource: { group: '', version: 'v1', resource: 'configmaps' },
    operation: 'CREATE',
    userInfo: { username: 'u' },
    object: { metadata: { name: 'x' } },
  },
});

describe('webhook server', () => {
  it('picks up a rotated serving certificate from disk without a restart', async () => {
    const ca = await createCA('reload-ca');
    const dir = await mkdtemp(join(tmpdir(), 'wh-cert-'));
    const certFile = join(dir, 'tls.crt');
    const keyFile = join(dir, 'tls.key');
    const first = await ca.issue({ commonName: 'one', usage: 'server', ipAddresses: ['127.0.0.1'] });
    await writeFile(certFile, first.certPem);
    await writeFile(keyFile, first.keyPem);
    const server = new WebhookServer({ logger: silentLogger, certificate: { certFile, keyFile } });
    servers.push(server);
    const port = await server.start();
    const before = await call(port, '/healthz');
    expect(before.serial).toBe(new X509Certificate(first.certPem).serialNumber);

    const second = await ca.issue({ commonName: 'two', usage: 'server', ipAddresses: ['127.0.0.1'] });
    await writeFile(keyFile, second.keyPem);
    await writeFile(certFile, second.certPem);
    const expected = new X509Certificate(second.certPem).serialNumber;
    const deadline = Date.now() + 10_000;
    let serial = before.serial;
    while (serial !== expected && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      serial = (await call(port, '/healthz')).serial;
    }
    expect(serial).toBe(expected);
  });

  it('answers a review with the same uid, and rejects what is not a review', async () => {
    const server = await allowing('ok', ['note']);
    const port = await server.start();
    const ok = await call(port, '/ok', review('abc'));
    expect(JSON.parse(ok.text).response).toEqual({ uid: 'abc', allowed: true, warnings: ['note'] });
    expect((await call(port, '/ok', 'not json')).status).toBe(400);
    expect((await call(port, '/ok', { kind: 'AdmissionReview' })).status).toBe(400);
    // JSON that is not an object: a clear 400, never a 500.
    for (const body of ['null', '42', '[]', '"x"']) {
      expect((await call(port, '/ok', body)).status, body).toBe(400);
    }
    expect((await call(port, '/missing', review('x'))).status).toBe(404);
    // A body over the limit (3 MiB), still being sent when the server decides: a 413 that says so, not a reset.
    const huge = await call(port, '/ok', 'x'.repeat(4 * 1024 * 1024));
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.text)).toEqual({
      code: 'RequestTooLarge',
      message: 'request body too large: the limit is 3145728 bytes',
    });
    // A uid that is not a string is never echoed back: nothing can be answered to it.
    for (const uid of [42, { a: 1 }, ['x'], '', 'u'.repeat(129)]) {
      const bad = await call(port, '/ok', { ...review('x'), request: { ...review('x').request, uid } });
      expect(bad.status, JSON.stringify(uid)).toBe(400);
      expect(JSON.parse(bad.text).code).toBe('InvalidReview');
    }
    // Nesting no Kubernetes object has is refused before it is parsed.
    const deep = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"d","object":${'['.repeat(5000)}${']'.repeat(5000)}}}`;
    const tooDeep = await call(port, '/ok', deep);
    expect(tooDeep.status).toBe(400);
    expect(JSON.parse(tooDeep.text)).toMatchObject({
      code: 'NestedTooDeep',
      message: expect.stringContaining('128'),
    });
    // Brackets inside strings are not nesting.
    const brackets = review('s');
    brackets.request.object.metadata.name = '['.repeat(500);
    expect(JSON.parse((await call(port, '/ok', brackets)).text).response.allowed).toBe(true);
  });

  it('reports where a review spent its time: body, checks and reply per webhook, beside the handler', async () => {
    const server = await allowing('timed');
    const port = await server.start();
    const count = (text: string, phase: string) => {
      const line = text
        .split('\n')
        .find(
          (l) =>
            l.startsWith('tenantkit_webhook_phase_seconds_count{') &&
            l.includes('webhook="timed"') &&
            l.includes(`phase="${phase}"`),
        );
      return Number(line?.split(' ').at(-1) ?? 0);
    };
    const before = (await call(port, '/metrics')).text;
    for (let i = 0; i < 3; i++) await call(port, '/timed', review(`t${i}`));
    const after = (await call(port, '/metrics')).text;
    for (const phase of ['body', 'checks', 'reply']) {
      expect(count(after, phase) - count(before, phase), phase).toBe(3);
    }
  });

  it('denies a review of the wrong shape naming the field, before any handler reads it', async () => {
    const server = await newServer();
    let called = 0;
    server.register({
      name: 'defaults',
      type: 'mutating',
      failurePolicy: 'Ignore',
      rules: [],
      specSchema: Type.Object({ includedNamespaces: Type.Optional(Type.Array(Type.String())) }),
      handler: () => {
        called++;
        return allow();
      },
    });
    const port = await server.start();
    const base = review('w');
    const cases: [unknown, string][] = [
      [{ ...base.request, userInfo: { username: 'u', groups: 'system:masters' } }, 'request.userInfo.groups'],
      [{ ...base.request, userInfo: { username: 7 } }, 'request.userInfo.username'],
      [{ ...base.request, operation: 'PATCH' }, 'request.operation'],
      [{ ...base.request, object: { spec: {} } }, 'request.object.metadata'],
      [{ ...base.request, object: { metadata: { labels: { a: 1 } } } }, 'request.object.metadata.labels.a'],
      [
        { ...base.request, object: { metadata: {}, spec: { includedNamespaces: 'team-b' } } },
        'request.object.spec.includedNamespaces',
      ],
      [
        { ...base.request, object: { metadata: {}, spec: { includedNamespaces: { 0: 'team-b' } } } },
        'request.object.spec.includedNamespaces',
      ],
      [{ ...base.request, object: { metadata: {}, spec: [] } }, 'request.object.spec'],
    ];
    for (const [request, field] of cases) {
      const answer = await call(port, '/defaults', { ...base, request });
      expect(answer.status).toBe(200);
      const response = JSON.parse(answer.text).response;
      expect(response, field).toMatchObject({ uid: 'w', allowed: false, status: { code: 400 } });
      expect(response.status.message, field).toContain(`cannot read this request: ${field}`);
    }
    expect(called).toBe(0);
  });

  it('never shows a handler error to the client, and never lets it skip defaults', async () => {
    const server = await newServer();
    const fail = () => {
      throw new TypeError("Cannot read properties of undefined (reading 'labels')");
    };
    server.register(
      { name: 'defaults', type: 'mutating', failurePolicy: 'Ignore', rules: [], handler: fail },
      { name: 'advice', type: 'validating', failurePolicy: 'Ignore', rules: [], handler: fail },
      { name: 'policy', type: 'validating', failurePolicy: 'Fail', rules: [], handler: fail },
    );
    const port = await server.start();
    const answers = Object.fromEntries(
      await Promise.all(
        ['defaults', 'advice', 'policy'].map(async (name) => [
          name,
          JSON.parse((await call(port, `/${name}`, review(name))).text).response,
        ]),
      ),
    );
    expect(answers.defaults).toMatchObject({ allowed: false, status: { code: 500 } });
    expect(answers.defaults.status.message).toMatch(
      /could not apply its defaults .*error [0-9a-f]{8}.*refused/,
    );
    expect(answers.advice).toMatchObject({ allowed: true });
    expect(answers.policy).toMatchObject({ allowed: false, status: { code: 500 } });
    expect(JSON.stringify(answers)).not.toContain('Cannot read properties');
  });

  it('answers within the webhook timeout when a handler hangs: deny if Fail, allow with a warning if Ignore (validating)', async () => {
    const server = await newServer();
    const hang = () => new Promise<never>(() => {});
    server.register(
      {
        name: 'closed',
        type: 'validating',
        failurePolicy: 'Fail',
        timeoutSeconds: 1,
        rules: [],
        handler: hang,
      },
      {
        name: 'open',
        type: 'validating',
        failurePolicy: 'Ignore',
        timeoutSeconds: 1,
        rules: [],
        handler: hang,
      },
    );
    const port = await server.start();
    const started = Date.now();
    const [closed, open] = await Promise.all([
      call(port, '/closed', review('c')),
      call(port, '/open', review('o')),
    ]);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(JSON.parse(closed.text).response).toMatchObject({ allowed: false, status: { code: 500 } });
    expect(JSON.parse(open.text).response).toMatchObject({ allowed: true });
    expect(JSON.parse(open.text).response.warnings[0]).toContain('could not check');
  });
});
