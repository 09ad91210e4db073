// Admission webhooks served in-process and registered by URL with the real API server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { allow, deny, mutate } from '../../src/webhook/admission.ts';
import type { WebhookDefinition } from '../../src/webhook/registration.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { startTestWebhooks } from '../harness/webhooks.ts';

const cluster = await TestCluster.connect();
afterAll(() => cluster.cleanup());

// Only objects in namespaces carrying this label reach the test webhooks, so other test files are untouched.
const scope = { matchLabels: { 'webhook-test': 'on' } };
const configMapRule = [
  {
    operations: ['CREATE' as const, 'UPDATE' as const],
    apiGroups: [''],
    apiVersions: ['v1'],
    resources: ['configmaps'],
  },
];

type ConfigMap = KubeObject & { data?: Record<string, string> };

const definitions: WebhookDefinition[] = [
  {
    name: 'test-deny',
    type: 'validating',
    failurePolicy: 'Fail',
    rules: configMapRule,
    namespaceSelector: scope,
    handler: (req) => {
      const data = (req.object as ConfigMap | undefined)?.data ?? {};
      if ('forbidden' in data) {
        return deny('data.forbidden is not allowed here: remove the key "forbidden" and try again');
      }
      if ('explode' in data) throw new Error('handler exploded');
      return allow('warn' in data ? ['data.warn is deprecated'] : []);
    },
  },
  {
    name: 'test-mutate',
    type: 'mutating',
    failurePolicy: 'Fail',
    rules: configMapRule,
    namespaceSelector: scope,
    handler: (req) => {
      const original = req.object as ConfigMap;
      const mutated = structuredClone(original);
      mutated.metadata.labels = { ...mutated.metadata.labels, 'tenantkit.io/mutated': 'yes' };
      mutated.metadata.annotations = {
        ...mutated.metadata.annotations,
        'tenantkit.io/user': req.userInfo.username,
      };
      return mutate(original, mutated);
    },
  },
];

let namespace = '';
beforeAll(async () => {
  namespace = await cluster.namespace('wh', { 'webhook-test': 'on' });
  await startTestWebhooks(cluster, definitions);
  // The API server picks registrations up asynchronously: wait until the mutating webhook acts.
  await eventually(
    async () => {
      const probe = await cluster.admin.create<ConfigMap>(Resources.configMaps, {
        metadata: { generateName: 'probe-', namespace },
      });
      return probe.metadata.labels?.['tenantkit.io/mutated'] === 'yes';
    },
    { what: 'webhooks registered', timeoutMs: 30_000 },
  );
});

describe('admission webhooks', () => {
  it('denies with a message that reaches the client', async () => {
    const err = await cluster.admin
      .create(Resources.configMaps, {
        metadata: { name: 'bad', namespace },
        data: { forbidden: 'x' },
      } as ConfigMap)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(403);
    // kubectl prints this Status message verbatim.
    expect((err as ApiError).message).toContain(
      'admission webhook "test-deny.tenantkit.io" denied the request',
    );
    expect((err as ApiError).message).toContain('remove the key "forbidden"');
    expect(await cluster.admin.get(Resources.configMaps, 'bad', namespace)).toBeUndefined();
  });

  it('stores the mutating patch on the object, and knows who asked', async () => {
    const tenant = await cluster.user('wh-tenant');
    await cluster.grant({ kind: 'User', name: 'wh-tenant' }, { clusterRole: 'edit' }, namespace);
    await eventually(async () => {
      await tenant.create(Resources.configMaps, {
        metadata: { name: 'good', namespace },
        data: { a: '1' },
      } as ConfigMap);
      return true;
    });
    const stored = await cluster.admin.get<ConfigMap>(Resources.configMaps, 'good', namespace);
    expect(stored?.metadata.labels?.['tenantkit.io/mutated']).toBe('yes');
    expect(stored?.metadata.annotations?.['tenantkit.io/user']).toBe('wh-tenant');
    expect(stored?.data).toEqual({ a: '1' });
  });

  it('fails closed with an explanation when a Fail-policy handler breaks', async () => {
    const err = await cluster.admin
      .create(Resources.configMaps, {
        metadata: { name: 'boom', namespace },
        data: { explode: '1' },
      } as ConfigMap)
      .then(
        () => undefined,
        (e: unknown) => e as ApiError,
      );
    expect(err?.status).toBe(500);
    // The tenant learns an error id to quote, never the handler's own error text.
    expect(err?.message).toMatch(/could not check this request \(error [0-9a-f]{8}\)/);
    expect(err?.message).not.toContain('handler exploded');
  });

  it('leaves namespaces outside its selector alone', async () => {
    const other = await cluster.namespace('plain');
    const created = await cluster.admin.create<ConfigMap>(Resources.configMaps, {
      metadata: { name: 'free', namespace: other },
      data: { forbidden: 'fine here' },
    } as ConfigMap);
    expect(created.metadata.labels?.['tenantkit.io/mutated']).toBeUndefined();
  });

  it('serves health, readiness and metrics', async () => {
    const { request } = await import('node:https');
    const webhooks = await startTestWebhooks(cluster, []);
    const get = (path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        request({ host: '127.0.0.1', port: webhooks.server.port, path, rejectUnauthorized: false }, (res) => {
          let body = '';
          res.on('data', (c) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        })
          .on('error', reject)
          .end();
      });
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/readyz')).status).toBe(200);
    const metrics = await get('/metrics');
    expect(metrics.body).toContain(
      'tenantkit_webhook_duration_seconds_bucket{le="0.005",webhook="test-deny",allowed="false"}',
    );
    await webhooks.stop();
  });
});
