// The tenant console against real parts: the API server (RBAC, admission), the search service on a real
// PostgreSQL collecting this cluster, Velero with the backup capability, and the console's own server.
// First its backend as an HTTP client sees it (what it forwards, as whom, what it refuses), then the page
// in Chromium as two tenants, alice and bob, each with a ServiceAccount token as kubectl would hold.
import { request } from 'node:https';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { fetchPresigned } from '../../src/backup/cli/download.ts';
import { DefaultSocketsPerUser, TokenProtocolPrefix } from '../../src/console/model.ts';
import type { ConsoleServer } from '../../src/console/server/server.ts';
import { type NonAdminBackup, NonAdminBackupCrd } from '../../src/crds/backup.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { type SearchService, startSearchService } from '../../src/search/components/service.ts';
import { createCA } from '../../src/serving/certs.ts';
import { ProjectStandInCrd } from '../fixtures/openshift.ts';
import { type BackupEnvironment, startBackupEnvironment } from '../harness/backup.ts';
import { browserSkipReason, launchBrowser } from '../harness/browser.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { problemsOf, screenshot, signedIn as signedInTab, startTestConsole } from '../harness/console.ts';
import { startTestDatabase } from '../harness/postgres.ts';
import { searchServiceIdentity } from '../harness/search-service.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
const ca = await createCA('console-test-ca');
const db = await startTestDatabase();
const stop = new AbortController();
let env: BackupEnvironment;
let search: SearchService;
let server: ConsoleServer;
let nsA: string;
let nsB: string;
let alice: string;
let bob: string;

beforeAll(async () => {
  // The admin enforces a retention: the create dialog shows it before alice submits.
  env = await startBackupEnvironment(cluster, { policy: { enforceBackupSpec: { ttl: '240h0m0s' } } });
  nsA = await env.namespace('console-a');
  nsB = await env.namespace('console-b');
  alice = await tenantToken(nsA, 'alice');
  bob = await tenantToken(nsB, 'bob');
  // What the chart grants every signed-in user: reading the enforced values (backup-policy-reader.yaml).
  for (const [ns, name] of [
    [nsA, 'alice'],
    [nsB, 'bob'],
  ] as const) {
    await cluster.grant(
      { kind: 'ServiceAccount', name, namespace: ns },
      {
        rules: [
          {
            apiGroups: ['backup.tenantkit.io'],
            resources: ['nonadminbackupconfigs'],
            resourceNames: ['cluster'],
            verbs: ['get'],
          },
        ],
      },
    );
  }
  // The search service under exactly the chart's rules, collecting this cluster.
  const client = await searchServiceIdentity(cluster, { alsoCollects: true });
  await cluster.aggregated('admin', 'searches');
  const searchCert = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
  search = await startSearchService(
    { client, logger: silentLogger, databaseUrl: db.url, certificate: searchCert, hubCollector: { client } },
    stop.signal,
  );
  ({ server } = await startTestConsole(cluster, {
    ca,
    searchUrl: new URL(`https://127.0.0.1:${search.port}`),
  }));
  // A Pod of alice's that mounts her ConfigMap: the index relates the two.
  await cluster.admin.create(Resources.pods, {
    metadata: { name: 'web-alice', namespace: nsA },
    spec: {
      containers: [{ name: 'web', image: 'tenantkit.local/none:1' }],
      volumes: [{ name: 'settings', configMap: { name: 'settings-alice' } }],
    },
  });
  await cluster.admin.create(Resources.secrets, {
    metadata: { name: 'token-alice', namespace: nsA },
    stringData: { password: 'never-shown' },
  });
  for (const [ns, name] of [
    [nsA, 'settings-alice'],
    [nsB, 'settings-bob'],
  ] as const) {
    await cluster.admin.create(Resources.configMaps, { metadata: { name, namespace: ns }, data: { a: '1' } });
  }
}, veleroStartTimeoutMs);

afterAll(async () => {
  await server?.stop();
  stop.abort();
  await search?.done;
  await env?.stop();
  await db.close();
});

/** A ServiceAccount token for a tenant holding `admin` in `namespace` (what `kubectl create token` gives). */
async function tenantToken(namespace: string, name: string): Promise<string> {
  const { token } = await cluster.serviceAccount(namespace, name);
  await cluster.grant({ kind: 'ServiceAccount', name, namespace }, { clusterRole: 'admin' }, namespace);
  return token;
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: { reason?: string; message?: string; items?: unknown[]; [k: string]: unknown };
}

/** One call to the console as an HTTP client, trusting the test CA. */
function call(
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const text = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, server.url),
      {
        method,
        ca: ca.certPem,
        headers: {
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...(text !== undefined ? { 'content-type': 'application/json' } : {}),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let body: Reply['body'] = {};
          try {
            body = raw ? JSON.parse(raw) : {};
          } catch {
            body = { message: raw };
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** A GET that may stream (a watch): what arrived within 3 s, then the connection is dropped. */
function probe(path: string, token: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, server.url),
      { method: 'GET', ca: ca.certPem, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        const chunks: Buffer[] = [];
        const done = () => {
          clearTimeout(timer);
          req.destroy();
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        };
        const timer = setTimeout(done, 3000);
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', done);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const oadp = '/api/kube/apis/oadp.openshift.io/v1alpha1';

describe('the console backend', () => {
  it('forwards an allowed call as the caller: alice reads her namespace, not bob’s', async () => {
    const mine = await call('GET', `${oadp}/namespaces/${nsA}/nonadminbackups`, { token: alice });
    expect(mine.status).toBe(200);
    expect(mine.body.items).toEqual([]);
    const theirs = await call('GET', `${oadp}/namespaces/${nsB}/nonadminbackups`, { token: alice });
    expect(theirs.status).toBe(403);
    expect(theirs.body.message).toContain(`system:serviceaccount:${nsA}:alice`);
  });

  it('says who the caller is from their own token', async () => {
    const review = await call('POST', '/api/kube/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      token: bob,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(review.status).toBe(201);
    expect((review.body.status as { userInfo: { username: string } }).userInfo.username).toBe(
      `system:serviceaccount:${nsB}:bob`,
    );
  });

  it('refuses what its pages never call, with the reason and what to do instead', async () => {
    const exec = await call('GET', `/api/kube/api/v1/namespaces/${nsA}/pods/web-alice/exec`, {
      token: alice,
    });
    expect(exec.status).toBe(403);
    expect(exec.body).toMatchObject({ reason: 'PathNotAllowed' });
    expect(exec.body.message).toMatch(/use kubectl/);
    // Secrets are never read, even where RBAC would let alice: no Secret data reaches a browser.
    for (const path of [`/namespaces/${nsA}/secrets`, `/namespaces/${nsA}/secrets/token-alice`]) {
      const secret = await call('GET', `/api/kube/api/v1${path}`, { token: alice });
      expect(secret.status, path).toBe(403);
      expect(secret.body).toMatchObject({ reason: 'SecretsNotShown' });
    }
    // Dot segments and encoded slashes do not reach another path.
    for (const path of [
      `/api/kube/api/v1/namespaces/${nsA}/../../namespaces/${nsA}/secrets`,
      `/api/kube/apis/oadp.openshift.io/v1alpha1/namespaces/${nsA}/nonadminbackups%2F..%2F..%2Fsecrets`,
    ]) {
      const reply = await call('GET', path, { token: alice });
      expect(reply.status, path).toBe(403);
    }
    const put = await call('PUT', `${oadp}/namespaces/${nsA}/nonadminbackups/x`, { token: alice, body: {} });
    expect(put.status).toBe(405);
    expect(put.body.message).toMatch(/only for GET, DELETE/);
    const watch = await call('GET', `${oadp}/namespaces/${nsA}/nonadminbackups?watch=true`, { token: alice });
    expect(watch.status).toBe(400);
    expect(watch.body).toMatchObject({ reason: 'QueryNotAllowed' });
  });

  it('forwards no Secret in any path shape the API server accepts, legacy watch paths included', async () => {
    // alice may read her Secrets through the API server (admin in nsA), and an auditor every Secret of
    // the cluster: through the console, neither ever gets one.
    const { token: auditor } = await cluster.serviceAccount(nsA, 'auditor');
    await cluster.grant(
      { kind: 'ServiceAccount', name: 'auditor', namespace: nsA },
      { rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }] },
    );
    const data = Buffer.from('never-shown').toString('base64');
    const v1 = '/api/kube/api/v1';
    const shapes = [
      `${v1}/secrets`,
      `${v1}/watch/secrets`,
      `${v1}/watch/secrets?fieldSelector=metadata.namespace%3D${nsA}`,
      `${v1}/watch/namespaces/${nsA}/secrets`,
      `${v1}/watch/namespaces/${nsA}/secrets/token-alice`,
      `${v1}/namespaces/${nsA}/watch/secrets`,
      `${v1}/namespaces/${nsA}/secrets?watch=true`,
      `${v1}/namespaces/${nsA}/secrets?watch=1&fieldSelector=metadata.name%3Dtoken-alice`,
      `${v1}/namespaces/${nsA}/secrets/token-alice`,
      `${v1}/namespaces/${nsA}/secrets/token-alice/`,
      `${v1}/namespaces/${nsA}//secrets/token-alice`,
      `${v1}/namespaces/${nsA}/%73ecrets/token-alice`,
      `${v1}/namespaces/${nsA}/secret%73`,
      `${v1}/namespaces/${nsA}/Secrets/token-alice`,
      `${v1}/namespaces/${nsA}/configmaps/..%2Fsecrets`,
      `${v1}/namespaces/${nsA}/configmaps/x/..%2F..%2Fsecrets%2Ftoken-alice`,
      `${v1}/namespaces/${nsA}/x/../secrets/token-alice`,
      `${v1}/proxy/namespaces/${nsA}/secrets/token-alice`,
      `${v1}/namespaces/${nsA}/services/kubernetes/proxy/api/v1/namespaces/${nsA}/secrets`,
      `${v1}/namespaces/${nsA}/services/https:kubernetes:443/proxy/`,
      `${v1}/namespaces/${nsA}/pods/web-alice/proxy/`,
      `${v1}/namespaces/${nsA}/pods/web-alice/exec?command=cat`,
      `${v1}/namespaces/${nsA}/serviceaccounts/alice/token`,
      `${v1}/namespaces/${nsA}/secrets/token-alice?fieldSelector=x`,
      `${v1}/secrets?fieldSelector=metadata.namespace%3D${nsA}`,
      `/api/kube/apis/v1/namespaces/${nsA}/secrets/token-alice`,
      `/api/kube/apis/core/v1/namespaces/${nsA}/secrets/token-alice`,
      `/api/kube/api/v1/namespaces/${nsA}/secrets/token-alice?pretty=true`,
    ];
    for (const token of [alice, auditor]) {
      for (const path of shapes) {
        const reply = await probe(path, token);
        expect(reply.text, path).not.toContain(data);
        expect([403, 404], `${path}: ${reply.text}`).toContain(reply.status);
        expect(JSON.parse(reply.text).message, path).toMatch(/console/);
      }
    }
  });

  it('needs a bearer token and never lends an identity of its own', async () => {
    const none = await call('GET', `${oadp}/namespaces/${nsA}/nonadminbackups`);
    expect(none.status).toBe(401);
    expect(none.body.message).toMatch(/Authorization: Bearer/);
    const cookie = await call('GET', `${oadp}/namespaces/${nsA}/nonadminbackups`, {
      headers: { cookie: `acm-access-token-cookie=${alice}` },
    });
    expect(cookie.status).toBe(401);
    // Impersonation headers are dropped: bob stays bob.
    const impersonating = await call('GET', `${oadp}/namespaces/${nsA}/nonadminbackups`, {
      token: bob,
      headers: { 'impersonate-user': `system:serviceaccount:${nsA}:alice` },
    });
    expect(impersonating.status).toBe(403);
  });

  it('refuses requests from other sites (CSRF) and bodies that are not JSON', async () => {
    const path = `${oadp}/namespaces/${nsA}/nonadminbackups`;
    const body = {
      apiVersion: 'oadp.openshift.io/v1alpha1',
      kind: 'NonAdminBackup',
      metadata: { name: 'x' },
    };
    const cross = await call('POST', path, {
      token: alice,
      body,
      headers: { origin: 'https://evil.example' },
    });
    expect(cross.status).toBe(403);
    expect(cross.body).toMatchObject({ reason: 'CrossSiteRequest' });
    const site = await call('POST', path, {
      token: alice,
      body,
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect(site.status).toBe(403);
    const form = await call('POST', path, { token: alice, headers: { 'content-type': 'text/plain' } });
    expect(form.status).toBe(415);
    const broken = await new Promise<number>((resolve, reject) => {
      const req = request(
        new URL(path, server.url),
        {
          method: 'POST',
          ca: ca.certPem,
          headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end('{"not json');
    });
    expect(broken).toBe(400);
  });

  it('reads one object as the caller (its YAML): alice hers, bob not hers', async () => {
    const path = `/api/kube/api/v1/namespaces/${nsA}/configmaps/settings-alice`;
    const mine = await call('GET', path, { token: alice });
    expect(mine.status).toBe(200);
    expect(mine.body.data).toEqual({ a: '1' });
    const theirs = await call('GET', path, { token: bob });
    expect(theirs.status).toBe(403);
    expect(theirs.body.message).toContain(`system:serviceaccount:${nsB}:bob`);
  });

  it('passes a live-results WebSocket to search only from its own page, on its one path', async () => {
    const refused = (path: string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const socket = new WebSocket(
          new URL(path, server.url.replace('https:', 'wss:')),
          'graphql-transport-ws',
          {
            ca: ca.certPem,
            headers,
          },
        );
        socket.on('unexpected-response', (_req, res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        socket.on('open', () => reject(new Error(`${path} was upgraded`)));
        socket.on('error', () => {});
      });
    expect(await refused('/api/search/graphql', { origin: 'https://evil.example' })).toBe(403);
    expect(await refused('/api/kube/api/v1/namespaces', {})).toBe(404);
    // Its own origin without a token, or with one the API server refuses: nothing opens.
    expect(await refused('/api/search/graphql', { origin: server.url })).toBe(401);
    expect(
      await refused('/api/search/graphql', { origin: server.url, authorization: 'Bearer not-a-token' }),
    ).toBe(401);
  });

  it('limits live-result sockets per user: alice over the limit is refused, bob still gets live results', async () => {
    /** A live-results socket of the page's kind (token as subprotocol), or the refusal's status and body. */
    const live = (token: string) =>
      new Promise<{ socket?: WebSocket; status: number; body: string }>((resolve) => {
        const socket = new WebSocket(
          new URL('/api/search/graphql', server.url.replace('https:', 'wss:')),
          ['graphql-transport-ws', `${TokenProtocolPrefix}${Buffer.from(token).toString('base64url')}`],
          { ca: ca.certPem, headers: { origin: server.url } },
        );
        socket.on('unexpected-response', (_req, res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
          );
        });
        socket.on('open', () => resolve({ socket, status: 101, body: '' }));
        socket.on('error', () => {});
      });
    const held: WebSocket[] = [];
    try {
      for (let i = 0; i < DefaultSocketsPerUser; i++) {
        const opened = await live(alice);
        expect(opened.status, opened.body).toBe(101);
        held.push(opened.socket!);
      }
      const over = await live(alice);
      over.socket?.close();
      expect(over.status).toBe(429);
      expect(over.body).toContain(`system:serviceaccount:${nsA}:alice`);
      expect(over.body).toMatch(/close another tab/);
      // bob's live results still arrive: a ConfigMap of his shows up on his watch.
      const mine = await live(bob);
      expect(mine.status, mine.body).toBe(101);
      const socket = mine.socket!;
      held.push(socket);
      const messages: { type: string; payload?: unknown }[] = [];
      socket.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString('utf8'))));
      socket.send(JSON.stringify({ type: 'connection_init', payload: {} }));
      await eventually(() => messages.some((m) => m.type === 'connection_ack'), { what: 'connection_ack' });
      socket.send(
        JSON.stringify({
          id: '1',
          type: 'subscribe',
          payload: {
            query:
              'subscription { watch(input: { filters: [{ property: "kind", values: ["ConfigMap"] }] }) { operation newData } }',
          },
        }),
      );
      await new Promise((r) => setTimeout(r, 500)); // the subscription registers
      await cluster.admin.create(Resources.configMaps, {
        metadata: { name: 'socket-limit-bob', namespace: nsB },
        data: { a: '1' },
      });
      await eventually(() => JSON.stringify(messages).includes('socket-limit-bob'), {
        what: "bob's live result",
      });
    } finally {
      for (const socket of held) socket.close();
    }
  });

  it('creates no ConfigMap but the saved searches one', async () => {
    const other = await call('POST', `/api/kube/api/v1/namespaces/${nsA}/configmaps`, {
      token: alice,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'mine' }, data: {} },
    });
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({ reason: 'ObjectNotAllowed' });
    expect(await cluster.admin.get(Resources.configMaps, 'mine', nsA)).toBeUndefined();
  });

  it('serves the page with a strict Content-Security-Policy and no inline script', async () => {
    const page = await call('GET', '/');
    expect(page.status).toBe(200);
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(String(page.body.message)).not.toMatch(/<script>|<script [^>]*>[^<]/);
    expect(server.assets.firstVisitBytes).toBeLessThan(500 * 1024);
  });

  it('forwards search as the caller: each tenant finds only their own objects', async () => {
    const query = {
      query: 'query($i:[SearchInput]){search(input:$i){items}}',
      variables: {
        i: [
          {
            filters: [
              { property: 'kind', values: ['ConfigMap'] },
              { property: 'name', values: ['settings-*'] },
            ],
          },
        ],
      },
    };
    const names = async (token: string) => {
      const reply = await call('POST', '/api/search/graphql', { token, body: query });
      expect(reply.status).toBe(200);
      const data = reply.body.data as { search: { items: { name: string }[] }[] };
      return data.search[0]!.items.map((i) => i.name).sort();
    };
    await eventually(async () => (await names(alice)).includes('settings-alice'), {
      what: 'alice’s ConfigMap indexed',
    });
    expect(await names(alice)).toEqual(['settings-alice']);
    expect(await names(bob)).toEqual(['settings-bob']);
  });
});

/** With CONSOLE_SCREENSHOTS=docs/images, the pages docs/console.md shows are saved there. */
describe.skipIf(browserSkipReason !== undefined)('the console page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  const signedIn = (token: string) => signedInTab(browser, server.url, token);

  it('signs in with a token, keeps it in memory only, and forgets it on sign-out', async () => {
    const page = await signedIn(alice);
    expect(await page.textContent('#signed-in-user')).toBe(`system:serviceaccount:${nsA}:alice`);
    // Page code, written as text: this file is checked without the browser's types.
    const stored = await page.evaluate(
      '({ local: localStorage.length, session: sessionStorage.length, cookies: document.cookie })',
    );
    expect(stored).toEqual({ local: 0, session: 0, cookies: '' });
    await page.click('text=Sign out');
    await page.waitForSelector('#token');
    expect(await page.inputValue('#token')).toBe('');
    // No CSP violation or script error on the way.
    expect(problemsOf(page)).toEqual([]);
    await page.context().close();
  });

  it('signs in through an authenticating proxy that adds the user’s token, live results included', async () => {
    // What oauth2-proxy in front does (docs/console.md): every request, the WebSocket's too, carries it.
    const context = await browser.newContext({
      ignoreHTTPSErrors: true,
      extraHTTPHeaders: { authorization: `Bearer ${alice}` },
    });
    const page = await context.newPage();
    await page.goto(server.url);
    expect(await (await page.waitForSelector('#signed-in-user')).textContent()).toBe(
      `system:serviceaccount:${nsA}:alice`,
    );
    expect(await page.getAttribute('a:has-text("Sign out")', 'href')).toBe('/oauth2/sign_out');
    await page.fill('#search-query', `kind:ConfigMap namespace:${nsA}`);
    await page.click('#search-submit');
    await page.waitForSelector('#live-indicator >> text=Live');
    await cluster.admin.create(Resources.configMaps, { metadata: { name: 'proxied-alice', namespace: nsA } });
    await page.waitForSelector('#search-results tr[data-name=proxied-alice]', { timeout: 30_000 });
    await cluster.admin.delete(Resources.configMaps, 'proxied-alice', nsA);
    await context.close();
  });

  it('can be used from the keyboard alone: sign in, search, open a result', async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    await page.goto(server.url);
    const tabTo = async (id: string) => {
      for (let i = 0; i < 30; i++) {
        if ((await page.evaluate('document.activeElement && document.activeElement.id')) === id) return;
        await page.keyboard.press('Tab');
      }
      throw new Error(`Tab never reached #${id}`);
    };
    await page.waitForSelector('#token');
    await tabTo('token');
    await page.keyboard.type(alice);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#signed-in-user');
    await tabTo('search-query');
    await page.keyboard.type('kind:ConfigMap name:settings-alice');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#search-results tr[data-name=settings-alice]');
    // The result's name is a button: Tab reaches it, Enter opens it.
    await page.focus('#search-results tr[data-name=settings-alice] button');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#details h2 >> text=/ConfigMap .*settings-alice/');
    await context.close();
  });

  it('refuses a bad token with the API server’s answer', async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    await page.goto(server.url);
    await page.fill('#token', 'not-a-token');
    await page.click('button[type=submit]');
    await page.waitForSelector('text=/Sign-in failed/');
    await context.close();
  });

  it('searches with suggestions, groups by kind, and never shows the other tenant’s objects', async () => {
    const page = await signedIn(alice);
    await page.fill('#search-query', 'kind:Config');
    await page.waitForSelector('#search-suggestions >> text=ConfigMap');
    await page.click('#search-suggestions >> text=ConfigMap');
    await page.fill('#search-query', `${await page.inputValue('#search-query')}name:settings-*`);
    await page.click('#search-submit');
    await page.waitForSelector('#search-results [data-kind=ConfigMap] tr[data-name=settings-alice]');
    expect(await page.locator('tr[data-name=settings-bob]').count()).toBe(0);
    // ConfigMaps have no status: the column is their age, as kubectl prints it, not a timestamp.
    const row = page.locator('#search-results [data-kind=ConfigMap] tr[data-name=settings-alice]');
    expect(await page.locator('#search-results [data-kind=ConfigMap] th').allTextContents()).toContain('Age');
    expect((await row.locator('td[data-label=Age]').textContent())?.trim()).toMatch(/^\d+[smhdy]$/);
    await screenshot(page, 'search');
    // Readable on a phone: nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await screenshot(page, 'search-phone');
    await page.setViewportSize({ width: 1280, height: 720 });
    // The search is in the address: opened by bob, the same link shows bob's objects only.
    const link = page.url();
    expect(link).toContain('#search?q=');
    const bobs = await signedIn(bob);
    await bobs.goto(link);
    await bobs.fill('#search-query', 'kind:ConfigMap name:settings-*');
    await bobs.click('#search-submit');
    await bobs.waitForSelector('tr[data-name=settings-bob]');
    expect(await bobs.locator('tr[data-name=settings-alice]').count()).toBe(0);
    await page.context().close();
    await bobs.context().close();
  });

  it('saves a search in a namespace of the user’s, reopens it after signing in again; bob may not read it', async () => {
    const page = await signedIn(alice);
    await page.fill('#search-query', 'kind:ConfigMap name:settings-*');
    await page.fill('#saved-namespace', nsA);
    await page.click('#saved-open');
    await page.waitForSelector('text=/No saved searches in/');
    await page.fill('#save-name', 'my settings');
    await page.click('#save-search');
    await page.waitForSelector('#saved-list button[data-name="my settings"]');
    await page.context().close();
    const again = await signedIn(alice);
    await again.fill('#saved-namespace', nsA);
    await again.click('#saved-open');
    await again.click('#saved-list button[data-name="my settings"]');
    await again.waitForSelector('#search-results tr[data-name=settings-alice]');
    expect(await again.inputValue('#search-query')).toBe('kind:ConfigMap name:settings-*');
    await again.context().close();
    const bobs = await signedIn(bob);
    await bobs.fill('#saved-namespace', nsA);
    await bobs.click('#saved-open');
    await bobs.waitForSelector(`text=You may not read saved searches in ${nsA}`);
    await bobs.context().close();
  });

  it('opens a result and, from its related resources, another object', async () => {
    const page = await signedIn(alice);
    await page.fill('#search-query', 'kind:Pod name:web-alice');
    await page.click('#search-submit');
    await page.click('#search-results tr[data-name=web-alice] button');
    await page.waitForSelector('#details >> text=Pod');
    await page.click('#related [data-kind=ConfigMap] button[data-name=settings-alice]');
    await page.waitForSelector('#details h2 >> text=/ConfigMap .*settings-alice/');
    await screenshot(page, 'related');
    await page.context().close();
  });

  it('shows an object’s YAML as the user, never a Secret’s data', async () => {
    const page = await signedIn(alice);
    await page.fill('#search-query', 'kind:ConfigMap name:settings-alice');
    await page.click('#search-submit');
    await page.click('#search-results tr[data-name=settings-alice] button');
    await page.click('#show-yaml');
    const yaml = await (await page.waitForSelector('#yaml')).textContent();
    expect(yaml).toContain('name: settings-alice');
    expect(yaml).toContain('a: "1"');
    expect(yaml).not.toContain('managedFields');
    await screenshot(page, 'yaml');
    // A Secret of hers is found (the index holds no data), but the page offers no YAML for it.
    await page.fill('#search-query', 'kind:Secret name:token-alice');
    await page.click('#search-submit');
    await page.click('#search-results tr[data-name=token-alice] button', { timeout: 30_000 });
    await page.waitForSelector("text=A Secret's data is never shown here");
    expect(await page.locator('#show-yaml').count()).toBe(0);
    const html = await page.content();
    expect(html).not.toContain('never-shown');
    expect(html).not.toContain(Buffer.from('never-shown').toString('base64'));
    await page.context().close();
  });

  it('keeps open results current through the watch subscription; each tenant sees only their changes', async () => {
    const page = await signedIn(alice);
    await page.fill('#search-query', `kind:ConfigMap namespace:${nsA} name:live-*`);
    await page.click('#search-submit');
    await page.waitForSelector('text=No resources found');
    const bobs = await signedIn(bob);
    await bobs.fill('#search-query', 'kind:ConfigMap name:live-*');
    await bobs.click('#search-submit');
    await bobs.waitForSelector('text=No resources found');
    // Once results are open, a new object of alice's appears without searching again...
    await page.fill('#search-query', `kind:ConfigMap namespace:${nsA}`);
    await page.click('#search-submit');
    await page.waitForSelector('#live-indicator >> text=Live');
    await bobs.fill('#search-query', 'kind:ConfigMap');
    await bobs.click('#search-submit');
    await bobs.waitForSelector('#live-indicator >> text=Live');
    await cluster.admin.create(Resources.configMaps, { metadata: { name: 'live-alice', namespace: nsA } });
    await page.waitForSelector('#search-results tr[data-name=live-alice]', { timeout: 30_000 });
    // Bob's open results follow his own namespace, and never showed alice's object.
    await cluster.admin.create(Resources.configMaps, { metadata: { name: 'live-bob', namespace: nsB } });
    await bobs.waitForSelector('#search-results tr[data-name=live-bob]', { timeout: 30_000 });
    expect(await bobs.locator('tr[data-name=live-alice]').count()).toBe(0);
    // Alice's object goes when it is deleted.
    await cluster.admin.delete(Resources.configMaps, 'live-alice', nsA);
    await page.waitForSelector('#search-results tr[data-name=live-alice]', {
      state: 'detached',
      timeout: 30_000,
    });
    expect(await bobs.locator('tr[data-name=live-alice]').count()).toBe(0);
    expect(problemsOf(page)).toEqual([]);
    await page.context().close();
    await bobs.context().close();
  });

  it('backs up a namespace from the page and shows the backup complete; bob may not look', async () => {
    // The Projects API answers with alice's namespaces (here the shared control plane's stand-in for
    // project.openshift.io, holding alice's one project; search-projects.test.ts runs the real one): the
    // page offers them, one click each.
    await cluster.admin.apply(ProjectStandInCrd.type, { metadata: { name: nsA }, spec: {} } as KubeObject, {
      fieldManager: 'console-test',
      force: true,
    });
    cluster.defer(() => cluster.admin.delete(ProjectStandInCrd.type, nsA));
    await cluster.grant(
      { kind: 'ServiceAccount', name: 'alice', namespace: nsA },
      { rules: [{ apiGroups: ['project.openshift.io'], resources: ['projects'], verbs: ['list'] }] },
    );
    const page = await signedIn(alice);
    await page.click('text=Backups');
    await page.click(`#your-namespaces button[data-namespace=${nsA}]`);
    await page.waitForSelector(`text=/No NonAdminBackups found/`);
    // The dialog shows what the admin enforces; a different value of alice's is refused, in the dialog.
    await page.click('#create-backup');
    await page.waitForSelector('#enforced >> text=ttl: 240h0m0s');
    await page.fill('#backup-ttl', '1h0m0s');
    await page.click('#backup-submit');
    const refusal = await (await page.waitForSelector('#backup-refusal')).textContent();
    expect(refusal).toContain('ttl field value is enforced by admin user');
    await screenshot(page, 'backup-dialog');
    await page.fill('#backup-ttl', '');
    await page.click('#backup-submit');
    await page.waitForSelector('#backup-notice >> text=/NonAdminBackup console-.* created/');
    const nab = await eventually(
      async () =>
        (await cluster.admin.list<NonAdminBackup>(NonAdminBackupCrd.type, { namespace: nsA })).items[0],
      { what: 'the NonAdminBackup made by the page' },
    );
    await page.waitForSelector(`tr[data-name=${nab.metadata.name}] >> text=/Created · Completed/`, {
      timeout: 120_000,
    });
    await screenshot(page, 'backups');
    // Its log, through a NonAdminDownloadRequest made as alice: a link to object storage, which the
    // browser (here: the test) fetches itself.
    await page.click(`tr[data-name=${nab.metadata.name}] >> text=Logs`);
    const href = await (await page.waitForSelector('#download-link', { timeout: 60_000 })).getAttribute(
      'href',
    );
    const log = await fetchPresigned(href!, 'backup log');
    expect(log).toMatch(/level=info/);
    const done = await cluster.admin.get<NonAdminBackup>(NonAdminBackupCrd.type, nab.metadata.name!, nsA);
    expect(done?.status?.veleroBackup?.name).toBeTruthy();
    expect(log).toContain(done!.status!.veleroBackup!.name!);
    // Restore it (into the same namespace: what exists is left as it is) and read the restore's log.
    await page.click(`tr[data-name=${nab.metadata.name}] >> text=Restore`);
    await page.waitForSelector('#enforced >> text=Nothing: your values are used as they are.');
    await page.fill('#backup-name', `${nab.metadata.name}-back`);
    await page.click('#backup-submit');
    await page.waitForSelector(`#backup-notice >> text=NonAdminRestore ${nab.metadata.name}-back created`);
    const restoreRow = page.locator(`#restores tr[data-name="${nab.metadata.name}-back"]`);
    await restoreRow.locator('text=/Created · (Completed|PartiallyFailed)/').waitFor({ timeout: 120_000 });
    await restoreRow.locator('text=Logs').click();
    await page.waitForSelector('#download >> text=/RestoreLog of .* is ready/', { timeout: 60_000 });
    const restoreHref = await page.getAttribute('#download-link', 'href');
    expect(await fetchPresigned(restoreHref!, 'restore log')).toMatch(/level=info/);
    // And its results (errors and warnings, as Velero writes them), the same way.
    await restoreRow.locator('text=Results').click();
    await page.waitForSelector('#download >> text=/RestoreResults of .* is ready/', { timeout: 60_000 });
    const results = JSON.parse(
      await fetchPresigned((await page.getAttribute('#download-link', 'href'))!, 'results'),
    );
    expect(Object.keys(results).sort()).toEqual(['errors', 'warnings']);
    await page.context().close();
    const bobs = await signedIn(bob);
    await bobs.click('text=Backups');
    await bobs.fill('#backup-namespace', nsA);
    await bobs.click('text=Show');
    await bobs.waitForSelector(`text=You may not list NonAdminBackups in ${nsA}`);
    expect(await bobs.locator(`tr[data-name=${nab.metadata.name}]`).count()).toBe(0);
    await bobs.context().close();
  }, 180_000);
});
