// The webhook server's own certificate (`tenantkit webhooks --tls-secret`, the chart's default): made and
// kept in a Secret, its CA injected into the webhook configurations, and the real API server then calling
// the server over TLS it verifies with that CA, through renewals and a CA rotation.
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/kube/client.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { createCA, type KeyPair } from '../../src/serving/certs.ts';
import { SelfManagedTls } from '../../src/serving/self-managed-tls.ts';
import { allow, deny, mutate } from '../../src/webhook/admission.ts';
import { registerWebhooks, type WebhookDefinition } from '../../src/webhook/registration.ts';
import { WebhookServer } from '../../src/webhook/server.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';

const cluster = await TestCluster.connect();
afterAll(() => cluster.cleanup());

type ConfigMap = KubeObject & { data?: Record<string, string> };
type Secret = KubeObject & { type?: string; data?: Record<string, string> };
type WebhookConfiguration = KubeObject & { webhooks: { clientConfig: { caBundle?: string } }[] };

const scope = { matchLabels: { 'webhook-tls-test': 'on' } };
const rules = [
  { operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] },
];
const definitions: WebhookDefinition[] = [
  {
    name: 'tls-deny',
    type: 'validating',
    failurePolicy: 'Fail',
    rules,
    namespaceSelector: scope,
    handler: (req) =>
      'forbidden' in ((req.object as ConfigMap).data ?? {})
        ? deny('data.forbidden: remove the key')
        : allow(),
  },
  {
    name: 'tls-mark',
    type: 'mutating',
    failurePolicy: 'Fail',
    rules,
    namespaceSelector: scope,
    handler: (req) => {
      const object = req.object as ConfigMap;
      const marked = structuredClone(object);
      marked.metadata.labels = { ...marked.metadata.labels, 'tenantkit.io/marked': 'yes' };
      return mutate(object, marked);
    },
  },
];

const secretName = 'webhook-tls';
let namespace = '';
let home = '';
let configName = '';
let server: WebhookServer;

function upkeep(
  dnsNames = ['localhost'],
  extra: Partial<ConstructorParameters<typeof SelfManagedTls>[0]> = {},
) {
  return new SelfManagedTls({
    client: cluster.admin,
    logger: silentLogger,
    namespace: home,
    secretName,
    dnsNames,
    validatingWebhookConfigurations: [configName],
    mutatingWebhookConfigurations: [configName],
    ...extra,
  });
}

const readSecret = async () => (await cluster.admin.get<Secret>(Resources.secrets, secretName, home))!;
const decoded = (secret: Secret, key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
const certificates = (bundle: string) =>
  bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];

/** A CA and a localhost serving certificate it signed, written into the Secret as someone else would. */
async function storeCertificates(name: string, caDays: number, servingDays = caDays) {
  const ca = await createCA(name, caDays);
  const serving = await ca.issue({
    commonName: 'localhost',
    dnsNames: ['localhost'],
    usage: 'server',
    validDays: servingDays,
  });
  const pem = {
    'ca.crt': ca.certPem,
    'ca.key': ca.keyPem,
    'tls.crt': serving.certPem,
    'tls.key': serving.keyPem,
  };
  const data = Object.fromEntries(
    Object.entries(pem).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  );
  await cluster.admin.replace(Resources.secrets, { ...(await readSecret()), data } as Secret);
  return { ca, serving };
}

/** The API server called both webhooks over TLS it verified: one ConfigMap marked, one refused. */
async function apiServerCallsTheWebhooks(what: string): Promise<void> {
  await eventually(
    async () => {
      const made = await cluster.admin.create<ConfigMap>(Resources.configMaps, {
        metadata: { generateName: 'probe-', namespace },
      });
      return made.metadata.labels?.['tenantkit.io/marked'] === 'yes';
    },
    { what, timeoutMs: 30_000 },
  );
  const refused = await cluster.admin
    .create(Resources.configMaps, { metadata: { generateName: 'bad-', namespace }, data: { forbidden: 'x' } })
    .catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(ApiError);
  expect((refused as ApiError).message).toContain('data.forbidden: remove the key');
}

beforeAll(async () => {
  namespace = await cluster.namespace('whtls', { 'webhook-tls-test': 'on' });
  home = await cluster.namespace('whtls-home');
  configName = cluster.unique('tk-tls');
  // The order of a fresh install: the server makes its certificate before it listens (the configurations
  // may not exist yet), then finds and fills the configurations on its next round.
  const serving = await upkeep().reconcile();
  server = new WebhookServer({ logger: silentLogger, certificate: serving });
  server.register(...definitions);
  const port = await server.start();
  await registerWebhooks(cluster.admin, configName, definitions, { url: `https://localhost:${port}` }, '');
  cluster.defer(async () => {
    await cluster.admin.delete(Resources.validatingWebhookConfigurations, configName);
    await cluster.admin.delete(Resources.mutatingWebhookConfigurations, configName);
    await server.stop();
  });
  await upkeep().reconcile();
});

describe('self-managed webhook TLS', () => {
  it('keeps a CA and a serving certificate in a TLS Secret and injects the CA the API server then trusts', async () => {
    const secret = await readSecret();
    expect(secret.type).toBe('kubernetes.io/tls');
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    const ca = new X509Certificate(decoded(secret, 'ca.crt'));
    const serving = new X509Certificate(decoded(secret, 'tls.crt'));
    expect(serving.checkIssued(ca)).toBe(true);
    expect(serving.subjectAltName).toBe('DNS:localhost');
    expect(serving.ca).toBe(false);
    for (const type of [Resources.validatingWebhookConfigurations, Resources.mutatingWebhookConfigurations]) {
      const config = (await cluster.admin.get<WebhookConfiguration>(type, configName))!;
      for (const w of config.webhooks) expect(w.clientConfig.caBundle).toBe(secret.data?.['ca.crt']);
    }
    await apiServerCallsTheWebhooks('the API server trusts the injected CA');
  });

  it('leaves a good Secret and the configurations untouched', async () => {
    const before = await readSecret();
    const config = await cluster.admin.get<KubeObject>(Resources.validatingWebhookConfigurations, configName);
    const serving = await upkeep().reconcile();
    expect(serving.certPem).toBe(decoded(before, 'tls.crt'));
    expect((await readSecret()).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    const after = await cluster.admin.get<KubeObject>(Resources.validatingWebhookConfigurations, configName);
    expect(after?.metadata.resourceVersion).toBe(config?.metadata.resourceVersion);
  });

  it('gives replicas that start together one certificate', async () => {
    await cluster.admin.delete(Resources.secrets, secretName, home);
    const results = await Promise.all([upkeep(), upkeep(), upkeep()].map((u) => u.reconcile()));
    const stored = decoded(await readSecret(), 'tls.crt');
    for (const r of results) expect(r.certPem).toBe(stored);
    server.setCertificate(results[0]!);
    await apiServerCallsTheWebhooks('the API server trusts the CA the replicas agreed on');
  });

  it('reissues the serving certificate from the same CA when the names it must cover change', async () => {
    const before = await readSecret();
    const names = [
      'localhost',
      `tenantkit-webhooks.${home}.svc`,
      `tenantkit-webhooks.${home}.svc.cluster.local`,
    ];
    const serving = await upkeep(names).reconcile();
    const after = await readSecret();
    expect(serving.certPem).not.toBe(decoded(before, 'tls.crt'));
    expect(new X509Certificate(serving.certPem).subjectAltName).toBe(names.map((n) => `DNS:${n}`).join(', '));
    expect(after.data?.['ca.crt']).toBe(before.data?.['ca.crt']);
    server.setCertificate(serving);
    await apiServerCallsTheWebhooks('the API server trusts the reissued certificate');
  });

  it('rotates a CA near its end and keeps trusting the old one until it expires', async () => {
    // A CA with a day left, and a serving certificate it signed, as a long-running install would hold.
    const { ca: old, serving: oldServing } = await storeCertificates('tenantkit-webhooks-old', 1);
    server.setCertificate(oldServing);
    const rotated = await upkeep().reconcile();
    const bundle = certificates(decoded(await readSecret(), 'ca.crt'));
    expect(bundle).toHaveLength(2);
    const [fresh, kept] = bundle.map((pem) => new X509Certificate(pem));
    expect(kept!.fingerprint256).toBe(new X509Certificate(old.certPem).fingerprint256);
    expect(new X509Certificate(rotated.certPem).checkIssued(fresh!)).toBe(true);
    // Replicas still serving the old certificate are trusted while the others move on.
    await apiServerCallsTheWebhooks('the API server trusts the old CA during the rotation');
    server.setCertificate(rotated);
    await apiServerCallsTheWebhooks('the API server trusts the new CA');
  });

  it('starts over from a Secret it cannot read', async () => {
    const secret = await readSecret();
    await cluster.admin.replace(Resources.secrets, {
      ...secret,
      data: { ...secret.data, 'tls.crt': Buffer.from('not a certificate').toString('base64') },
    } as Secret);
    const serving = await upkeep().reconcile();
    expect(new X509Certificate(serving.certPem).subjectAltName).toBe('DNS:localhost');
    server.setCertificate(serving);
    await apiServerCallsTheWebhooks('the API server trusts the certificate made afresh');
  });

  it('hands each new certificate to the server while it runs, on watch events (no polling), and stops when told', async () => {
    const used: KeyPair[] = [];
    const stop = new AbortController();
    // The default period (a day): what happens within the test is driven by the watches alone.
    const running = upkeep().run((pair) => used.push(pair), stop.signal);
    await eventually(() => used.length === 1, { what: 'the first certificate handed over' });
    await cluster.admin.delete(Resources.secrets, secretName, home);
    await eventually(() => used.length === 2, { what: 'the remade certificate handed over' });
    // Someone empties a configuration's CA bundle: it is filled again.
    const type = Resources.validatingWebhookConfigurations;
    const config = (await cluster.admin.get<WebhookConfiguration>(type, configName))!;
    for (const w of config.webhooks) w.clientConfig.caBundle = '';
    await cluster.admin.replace(type, config);
    const bundle = (await readSecret()).data?.['ca.crt'];
    await eventually(
      async () =>
        (await cluster.admin.get<WebhookConfiguration>(type, configName))!.webhooks.every(
          (w) => w.clientConfig.caBundle === bundle,
        ),
      { what: 'the CA bundle injected again' },
    );
    stop.abort();
    await running;
    expect(used[1]!.certPem).toBe(decoded(await readSecret(), 'tls.crt'));
    server.setCertificate(used[1]!);
    await apiServerCallsTheWebhooks('the API server trusts the remade certificate');
  });

  it('stops at once when told while it hands over a certificate', async () => {
    // Only the Secret watched, and a good certificate put there by someone else: the round that hands it
    // over writes nothing, so no watch event follows the stop that comes during it.
    const stop = new AbortController();
    const used: KeyPair[] = [];
    const running = upkeep(['localhost'], {
      validatingWebhookConfigurations: [],
      mutatingWebhookConfigurations: [],
    }).run((pair) => {
      used.push(pair);
      if (used.length === 2) stop.abort();
    }, stop.signal);
    await eventually(() => used.length === 1, { what: 'the first certificate handed over' });
    const { serving } = await storeCertificates('tenantkit-webhooks-elsewhere', 3650, 365);
    const outcome = await Promise.race([
      running.then(() => 'stopped'),
      new Promise((r) => setTimeout(r, 15_000, 'still running 15 s after the stop')),
    ]);
    expect(outcome).toBe('stopped');
    expect(used[1]?.certPem).toBe(serving.certPem);
  });

  it("makes the Secret owned by the webhooks' ServiceAccount, so it goes with the release", async () => {
    await cluster.admin.create(Resources.serviceAccounts, {
      metadata: { name: 'webhooks', namespace: home },
    });
    const owned = new SelfManagedTls({
      client: cluster.admin,
      logger: silentLogger,
      namespace: home,
      secretName: 'owned-tls',
      dnsNames: ['localhost'],
      ownerServiceAccount: 'webhooks',
    });
    await owned.reconcile();
    const secret = await cluster.admin.get<Secret>(Resources.secrets, 'owned-tls', home);
    expect(secret?.metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`)).toEqual([
      'ServiceAccount/webhooks',
    ]);
    await cluster.admin.delete(Resources.serviceAccounts, 'webhooks', home);
    await eventually(
      async () => (await cluster.admin.get(Resources.secrets, 'owned-tls', home)) === undefined,
      {
        what: 'the Secret collected with its owner',
        timeoutMs: 30_000,
      },
    );
  });
});
