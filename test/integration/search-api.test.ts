// The search API as tenants use it: their own tokens, through HTTPS, against the real API server's
// TokenReview and RBAC. The service runs as a service account holding exactly searchServiceRules.
// Index rows are written through the indexer (the collector has its own tests), so each case can place
// objects exactly where it needs them.

import { request } from 'node:https';
import fc from 'fast-check';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { silentLogger } from '../../src/kube/log.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { freePort } from '../../src/ports.ts';
import { type SearchService, startSearchService } from '../../src/search/components/service.ts';
import { SearchUserClusterRoleName } from '../../src/search/index.ts';
import { HubCluster, type IndexedResource, type ResourceData } from '../../src/search/model.ts';
import { createCA } from '../../src/serving/certs.ts';
import {
  applyMutation,
  fuzzOptions,
  fuzzRuns,
  hostileString,
  type Json,
  leakedError,
  mutationsOf,
  serialize,
} from '../fuzz/json.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { proxyOn, startTestDatabase } from '../harness/postgres.ts';
import { type GraphQLReply, postGraphQL, postGraphQLText } from '../harness/search-client.ts';
import { searchServiceIdentity } from '../harness/search-service.ts';

const cluster = await TestCluster.connect();
const db = await startTestDatabase();
const stop = new AbortController();
const ca = await createCA('search-api-test-ca');
let service: SearchService;
let url: string;
let nsA: string;
let nsB: string;
let tokenA: string;
let tokenB: string;

type Reply = GraphQLReply;

function post(
  token: string | undefined,
  query: string,
  variables = {},
  headers: Record<string, string> = {},
): Promise<Reply> {
  return postGraphQL(url, ca.certPem, token, query, variables, headers);
}

type Items = {
  search: {
    count?: number;
    items?: Record<string, string>[];
    related?: { kind: string; count?: number; items?: Record<string, string>[] }[];
  }[];
};

async function search(token: string, input: Record<string, unknown>): Promise<Items['search'][0]> {
  const reply = await post(token, 'query ($input: [SearchInput]) { search(input: $input) { count items } }', {
    input: [input],
  });
  expect(reply.body.errors).toBeUndefined();
  return (reply.body.data as Items).search[0]!;
}

/** A graphql-ws client that sends `token` on the websocket upgrade, trusting the test CA. */
function wsClient(token: string) {
  class AuthenticatedSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { ca: ca.certPem, headers: { authorization: `Bearer ${token}` } });
    }
  }
  return createClient({
    url: `${url.replace('https', 'wss')}/searchapi/graphql`,
    webSocketImpl: AuthenticatedSocket,
    retryAttempts: 0,
  });
}

const names = (items: Record<string, string>[] | undefined) => (items ?? []).map((i) => i.name).sort();

let n = 0;
function row(
  kind: string,
  name: string,
  namespace: string | undefined,
  extra: Partial<ResourceData> = {},
  edges: IndexedResource['edges'] = [],
): IndexedResource {
  const plural = `${kind.toLowerCase()}s`;
  return {
    uid: `${HubCluster}/api-test-${++n}`,
    data: {
      kind,
      kind_plural: plural,
      apiversion: 'v1',
      name,
      ...(namespace ? { namespace } : {}),
      created: new Date().toISOString(),
      _hubClusterResource: true,
      ...extra,
    },
    edges,
  };
}

beforeAll(async () => {
  nsA = await cluster.namespace('search-a');
  nsB = await cluster.namespace('search-b');
  // The service's own identity: exactly the rules the chart grants it.
  const client = await searchServiceIdentity(cluster);
  // Tenants: a service account per namespace, admin there (which aggregates the search user role).
  tokenA = (await cluster.serviceAccount(nsA, 'tenant')).token;
  tokenB = (await cluster.serviceAccount(nsB, 'tenant')).token;
  await cluster.grant(
    { kind: 'ServiceAccount', name: 'tenant', namespace: nsA },
    { clusterRole: 'admin' },
    nsA,
  );
  await cluster.grant(
    { kind: 'ServiceAccount', name: 'tenant', namespace: nsB },
    { clusterRole: 'admin' },
    nsB,
  );
  await cluster.aggregated('admin', 'searches');

  const serving = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
  service = await startSearchService(
    { client, logger: silentLogger, databaseUrl: db.url, certificate: serving, tokenTtlMs: 60_000 },
    stop.signal,
  );
  url = `https://127.0.0.1:${service.port}`;
  const podA = row('Pod', 'web-a', nsA, { status: 'Running' }, [
    { type: 'uses', kind: 'ConfigMap', namespace: nsB, name: 'shared-b' },
  ]);
  await service.store.indexer.write({
    cluster: HubCluster,
    upserts: [
      podA,
      row('ConfigMap', 'settings-a', nsA),
      row('ConfigMap', 'other-a', nsA),
      row('Secret', 'creds-a', nsA),
      row('Pod', 'web-b', nsB, { status: 'Running', hostIP: '10.0.0.7' }),
      row('ConfigMap', 'shared-b', nsB),
      row('Node', 'node-1', undefined),
    ],
  });
}, 120_000);

afterAll(async () => {
  stop.abort();
  await service?.done;
  await db.close();
  await cluster.cleanup();
});

describe('authentication and the right to search', () => {
  it('answers 401 without a token or with a bad one, and says what to send', async () => {
    const none = await post(undefined, '{ messages { id } }');
    expect(none.status).toBe(401);
    expect(none.body.message).toMatch(/bearer token/i);
    const bad = await post('not-a-real-token', '{ messages { id } }');
    expect(bad.status).toBe(401);
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('answers 403 naming the role to ask for when the user may not search', async () => {
    const { token } = await cluster.serviceAccount(nsA, cluster.unique('nobody'));
    const reply = await post(token, '{ messages { id } }');
    expect(reply.status).toBe(403);
    expect(reply.body.message).toContain(SearchUserClusterRoleName);
  });

  it("accepts ACM's console cookie and caches token reviews by token hash", async () => {
    const before = service.authenticator.reviews;
    const first = await post(
      undefined,
      '{ messages { id } }',
      {},
      { cookie: `other=1; acm-access-token-cookie=${tokenA}` },
    );
    expect(first.status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await post(tokenA, '{ messages { id } }')).status).toBe(200);
    expect(service.authenticator.reviews - before).toBeLessThanOrEqual(1);
    // A cookie whose percent-encoding is malformed carries no token: 401, not a server error.
    const malformed = await post(
      undefined,
      '{ messages { id } }',
      {},
      { cookie: 'acm-access-token-cookie=%E0%A4%A' },
    );
    expect(malformed.status).toBe(401);
  });

  it("refuses a deleted ServiceAccount's token within a second, though its review is cached for 60 s", async () => {
    const name = cluster.unique('leaving');
    const { token } = await cluster.serviceAccount(nsA, name);
    await cluster.grant({ kind: 'ServiceAccount', name, namespace: nsA }, { clusterRole: 'admin' }, nsA);
    await eventually(async () => (await post(token, '{ messages { id } }')).status === 200, {
      what: 'the new ServiceAccount may search',
    });
    await cluster.admin.delete(Resources.serviceAccounts, name, nsA);
    const deleted = Date.now();
    await eventually(async () => (await post(token, '{ messages { id } }')).status === 401, {
      what: "the deleted ServiceAccount's token refused",
      timeoutMs: 5_000,
      intervalMs: 50,
    });
    expect(Date.now() - deleted).toBeLessThan(1_000);
  });
});

describe('tenants see exactly what they may list', () => {
  it('shows a namespace admin their objects and nothing of other namespaces', async () => {
    const a = await search(tokenA, {
      filters: [{ property: 'kind', values: ['ConfigMap', 'Pod', 'Secret'] }],
    });
    expect(names(a.items)).toEqual(['creds-a', 'other-a', 'settings-a', 'web-a']);
    expect(a.count).toBe(4);
    const b = await search(tokenB, { keywords: ['web'] });
    expect(names(b.items)).toEqual(['web-b']);
    // Cluster-scoped kinds need a cluster-wide grant.
    expect((await search(tokenA, { filters: [{ property: 'kind', values: ['Node'] }] })).count).toBe(0);
  });

  it('shows nothing to a user who may only get, and only the named object under resourceNames', async () => {
    const name = cluster.unique('narrow');
    const { token } = await cluster.serviceAccount(nsA, name);
    const subject = { kind: 'ServiceAccount' as const, name, namespace: nsA };
    await cluster.grant(subject, { clusterRole: SearchUserClusterRoleName }, nsA);
    await cluster.grant(
      subject,
      { rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] },
      nsA,
    );
    await eventually(async () => (await post(token, '{ messages { id } }')).status === 200, {
      what: 'search allowed',
    });
    expect((await search(token, { filters: [{ property: 'kind', values: ['ConfigMap'] }] })).count).toBe(0);
    await cluster.grant(
      subject,
      {
        rules: [
          { apiGroups: [''], resources: ['configmaps'], verbs: ['list'], resourceNames: ['settings-a'] },
        ],
      },
      nsA,
    );
    const named = await eventually(async () => {
      const r = await search(token, { filters: [{ property: 'kind', values: ['ConfigMap'] }] });
      return r.count === 1 ? r : undefined;
    });
    expect(names(named.items)).toEqual(['settings-a']);
  });

  it('never shows related objects of other namespaces', async () => {
    const reply = await post(
      tokenA,
      'query ($input: [SearchInput]) { search(input: $input) { items related { kind count items } } }',
      { input: [{ filters: [{ property: 'name', values: ['web-a'] }] }] },
    );
    const result = (reply.body.data as Items).search[0]!;
    expect(names(result.items)).toEqual(['web-a']);
    expect(result.related ?? []).toEqual([]);
    // bob sees the config map, but not the pod that uses it.
    const fromB = await post(
      tokenB,
      'query ($input: [SearchInput]) { search(input: $input) { related { kind count } } }',
      { input: [{ filters: [{ property: 'name', values: ['shared-b'] }] }] },
    );
    expect((fromB.body.data as Items).search[0]!.related ?? []).toEqual([]);
  });

  it('filters searchComplete and searchSchema the same way', async () => {
    const reply = await post(tokenA, '{ searchComplete(property: "namespace") searchSchema }');
    expect(reply.body.data?.searchComplete).toEqual([nsA]);
    const props = (reply.body.data?.searchSchema as { allProperties?: string[] } | undefined)?.allProperties;
    expect(props).toContain('name');
    const names = await post(
      tokenB,
      '{ searchComplete(property: "name", query: { filters: [{ property: "kind", values: ["Pod"] }] }) }',
    );
    expect(names.body.data?.searchComplete).toEqual(['web-b']);
    // Names of JavaScript's built-in members are plain property names: nothing found, no error, for a
    // tenant and for a user who may list everything (whose completion walks the index by column).
    const wideName = cluster.unique('wide');
    const { token: wide } = await cluster.serviceAccount(nsA, wideName);
    for (const role of ['view', SearchUserClusterRoleName]) {
      await cluster.grant({ kind: 'ServiceAccount', name: wideName, namespace: nsA }, { clusterRole: role });
    }
    await eventually(async () => (await post(wide, '{ messages { id } }')).status === 200, {
      what: 'the wide user may search',
    });
    for (const token of [tokenA, wide]) {
      for (const property of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
        const odd = await post(token, `{ searchComplete(property: "${property}") }`);
        expect(odd.body.errors, property).toBeUndefined();
        expect(odd.body.data?.searchComplete, property).toEqual([]);
      }
    }
    // A property only another tenant's pod has is not in this tenant's schema; it is in the other's.
    expect(props).toContain('status');
    expect(props).not.toContain('hostIP');
    const schemaB = await post(tokenB, '{ searchSchema }');
    expect(
      (schemaB.body.data?.searchSchema as { allProperties?: string[] } | undefined)?.allProperties,
    ).toContain('hostIP');
  });

  it('makes a revoked permission disappear from results within a second', async () => {
    const name = cluster.unique('revoked');
    const { token } = await cluster.serviceAccount(nsB, name);
    await cluster.grant({ kind: 'ServiceAccount', name, namespace: nsB }, { clusterRole: 'view' }, nsB);
    await eventually(async () => (await post(token, '{ messages { id } }')).status === 200);
    const bindings = await cluster.admin.list<KubeObject & { subjects?: { name: string }[] }>(
      Resources.roleBindings,
      { namespace: nsB },
    );
    const binding = bindings.items.find((b) => b.subjects?.some((s) => s.name === name))!;
    expect((await search(token, { filters: [{ property: 'kind', values: ['Pod'] }] })).count).toBe(1);
    await cluster.admin.delete(Resources.roleBindings, binding.metadata.name!, nsB);
    const deleted = Date.now();
    // Without any role left the user may not search at all: 403, with nothing shown.
    const status = await eventually(
      async () => {
        const reply = await post(
          token,
          '{ search(input: [{ filters: [{ property: "kind", values: ["Pod"] }] }]) { count } }',
        );
        return reply.status === 403 ? reply.status : undefined;
      },
      { intervalMs: 20, timeoutMs: 5000 },
    );
    expect(status).toBe(403);
    expect(Date.now() - deleted).toBeLessThan(1000);
  });
});

describe('hostile and oversized queries', () => {
  it('treats injection attempts in values, property names and orderBy as plain data', async () => {
    const attempts = [
      { filters: [{ property: 'name', values: ["x' OR '1'='1"] }] },
      { filters: [{ property: "name' OR 1=1 --", values: ['*'] }] },
      { filters: [{ property: 'namespace', values: [`${nsB}') OR ('a'='a`] }] },
      { keywords: ["'); DROP TABLE search.resources; --"] },
      { filters: [{ property: 'kind', values: ['Pod'] }], orderBy: 'name; DROP TABLE search.resources' },
      { filters: [{ property: 'kind', values: ['Pod'] }], orderBy: '(SELECT 1) desc' },
    ];
    for (const input of attempts) {
      const reply = await post(tokenA, 'query ($input: [SearchInput]) { search(input: $input) { items } }', {
        input: [input],
      });
      expect(reply.status).toBe(200);
      const items = (reply.body.data as Items | undefined)?.search?.[0]?.items ?? [];
      for (const item of items) expect(item.namespace).toBe(nsA);
    }
    expect((await search(tokenB, { filters: [{ property: 'kind', values: ['ConfigMap'] }] })).count).toBe(1);
  });

  it('refuses over-limit queries with a clear GraphQL error', async () => {
    const big = await post(tokenA, '{ search(input: [{ limit: 100000 }]) { items } }');
    expect(big.body.errors?.[0]?.extensions?.code).toBe('LIMIT_TOO_HIGH');
    expect(big.body.errors?.[0]?.message).toMatch(/offset/);
    const aliases = Array.from({ length: 250 }, (_, i) => `a${i}: messages { id }`).join(' ');
    const wide = await post(tokenA, `{ ${aliases} }`);
    expect(wide.body.errors?.[0]?.message).toMatch(/more than 200 fields/);
    const inputs = Array.from({ length: 30 }, () => '{ keywords: ["x"] }').join(',');
    const many = await post(tokenA, `{ search(input: [${inputs}]) { count } }`);
    expect(many.body.errors?.[0]?.extensions?.code).toBe('TOO_MANY_INPUTS');
  });
});

describe('hostile documents and values', () => {
  // A chain of nested fragments: fragment f0 { ...f1 } fragment f1 { ...f2 } … overflowed graphql-js's
  // validation (an empty 500) before the depth bound.
  const chain = (n: number) =>
    `query { messages { ...f0 } } ${Array.from({ length: n }, (_, i) =>
      i === n - 1 ? `fragment f${i} on Message { id }` : `fragment f${i} on Message { id ...f${i + 1} }`,
    ).join(' ')}`;
  const deep = (n: number) => `query { messages { ${'... on Message { '.repeat(n)}id${' }'.repeat(n)} } }`;

  it('refuses fragment chains and deep nesting with 400, a code and the limit', async () => {
    // GraphQL over HTTP: 400 for clients that accept application/graphql-response+json, 200 with the
    // errors for application/json clients (ACM's console), the same answer either way.
    const long = await post(tokenA, chain(4000), {}, { accept: 'application/graphql-response+json' });
    expect(long.status).toBe(400);
    expect((await post(tokenA, chain(4000))).body).toEqual(long.body);
    expect(long.body.errors?.[0]).toMatchObject({
      message: expect.stringContaining('more than 10000 tokens'),
      extensions: { code: 'QUERY_TOO_LARGE' },
    });
    // Within the token budget, the fragment bound (graphql-js aborts validating a chain of 1,100).
    const many = await post(tokenA, chain(1100), {}, { accept: 'application/graphql-response+json' });
    expect(many.status).toBe(400);
    expect(many.body.errors?.[0]).toMatchObject({
      message: expect.stringContaining('at most 100 are allowed'),
      extensions: { code: 'QUERY_TOO_COMPLEX' },
    });
    const longest = await post(tokenA, chain(100));
    expect(longest.status).toBe(200);
    expect(longest.body.errors).toBeUndefined();
    const fine = await post(tokenA, chain(3));
    expect(fine.body.errors).toBeUndefined();
    // Variables nested deeper than any SearchInput: refused before JSON.parse or GraphQL see them.
    const nestedBody = `{"query":"{ messages { id } }","variables":{"x":${'['.repeat(5000)}${']'.repeat(5000)}}}`;
    const tooDeep = await postGraphQLText(url, ca.certPem, tokenA, nestedBody);
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.errors?.[0]?.message).toContain('nested deeper than 128 levels');
    const inline = await post(tokenA, deep(40), {}, { accept: 'application/graphql-response+json' });
    expect(inline.status).toBe(400);
    expect(inline.body.errors?.[0]).toMatchObject({
      message: expect.stringContaining('deeper than 32 levels'),
      extensions: { code: 'QUERY_TOO_DEEP' },
    });
  });

  it('answers a fragment chain over the websocket with an error, not a closed socket', async () => {
    const client = wsClient(tokenA);
    const outcome = await new Promise<unknown>((resolve) => {
      client.subscribe(
        { query: chain(4000) },
        { next: () => {}, error: resolve, complete: () => resolve('complete') },
      );
    });
    expect(JSON.stringify(outcome)).toContain('QUERY_TOO_LARGE');
    // The socket is still usable.
    const next = await new Promise<unknown>((resolve, reject) => {
      client.subscribe(
        { query: '{ messages { id } }' },
        { next: resolve, error: reject, complete: () => {} },
      );
    });
    expect(next).toMatchObject({ data: { messages: expect.any(Array) } });
    await client.dispose();
  });

  it("answers a NUL in a property, value or keyword with tenantkit's message, never PostgreSQL's", async () => {
    const inputs = [
      { filters: [{ property: 'name', values: ['a\u0000b'] }] },
      { filters: [{ property: 'na\u0000me', values: ['x'] }] },
      { keywords: ['\u0000'] },
    ];
    for (const input of inputs) {
      const reply = await post(tokenA, 'query ($input: [SearchInput]) { search(input: $input) { count } }', {
        input: [input],
      });
      expect(reply.status).toBe(200);
      expect(reply.body.errors?.[0]).toMatchObject({
        message: expect.stringContaining('contains a NUL character'),
        extensions: { code: 'BAD_VALUE' },
      });
      expect(JSON.stringify(reply.body)).not.toMatch(/byte sequence|UTF8|postgres/i);
    }
    // Values named like built-in members are values: "created:constructor" once found a function where
    // a period ("hour", "day", …) was looked up.
    for (const value of ['constructor', '__proto__', 'toString', '>constructor']) {
      const reply = await post(tokenA, 'query ($input: [SearchInput]) { search(input: $input) { count } }', {
        input: [{ filters: [{ property: 'created', values: [value] }] }],
      });
      expect(reply.body.errors, value).toBeUndefined();
    }
    const complete = await post(tokenA, 'query ($p: String!) { searchComplete(property: $p) }', {
      p: 'a\u0000',
    });
    expect(complete.body.errors?.[0]?.extensions?.code).toBe('BAD_VALUE');
  });
});

describe('fuzzing search as a tenant', () => {
  const operations: { query: string; variables: Json }[] = [
    {
      query:
        'query ($input: [SearchInput]) { search(input: $input) { count items related { kind count items } } }',
      variables: {
        input: [
          {
            keywords: ['web'],
            filters: [
              { property: 'kind', values: ['Pod', 'ConfigMap'] },
              { property: 'created', values: ['>2020-01-01'] },
            ],
            limit: 10,
            offset: 0,
            orderBy: 'name asc',
            relatedKinds: ['ConfigMap'],
          },
        ],
      },
    },
    {
      query:
        'query ($p: String!, $q: SearchInput, $l: Int) { searchComplete(property: $p, query: $q, limit: $l) }',
      variables: { p: 'name', q: { filters: [{ property: 'kind', values: ['Pod'] }] }, l: 10 },
    },
    {
      query: 'query ($q: SearchInput) { searchSchema(query: $q) }',
      variables: { q: { keywords: ['a'] } },
    },
  ];
  const fuzzTimeout = fuzzRuns ? 24 * 3600_000 : 60_000;

  /** Problems with a reply to a hostile request: no 5xx, JSON, no internals, nothing of namespace B. */
  const replyProblems = (reply: GraphQLReply): string[] => {
    const problems: string[] = [];
    const text = JSON.stringify(reply.body);
    if (reply.status >= 500) problems.push(`HTTP ${reply.status}`);
    if (leakedError.test(text)) problems.push(`error text reached the client: ${text.slice(0, 300)}`);
    if (reply.body.errors?.some((e) => e.extensions?.code === 'INTERNAL')) {
      problems.push(`INTERNAL: ${text.slice(0, 300)}`);
    }
    if (text.includes(nsB) || text.includes('node-1') || text.includes('10.0.0.7')) {
      problems.push(`another tenant's object or a cluster-scoped one: ${text.slice(0, 300)}`);
    }
    return problems;
  };

  it('answers mutated variables of every operation without a 5xx, internals or a foreign object', {
    timeout: fuzzTimeout,
  }, async () => {
    let n = 0;
    const started = performance.now();
    const input = fc
      .constantFrom(...operations)
      .chain((op) => fc.tuple(fc.constant(op), mutationsOf(op.variables)));
    await fc.assert(
      fc.asyncProperty(input, async ([op, mutations]) => {
        const variables = mutations.reduce((doc, m) => applyMutation(doc, m), op.variables);
        const reply = await postGraphQLText(
          url,
          ca.certPem,
          tokenA,
          serialize({ query: op.query, variables }),
        );
        n++;
        expect(replyProblems(reply), JSON.stringify(mutations).slice(0, 500)).toEqual([]);
      }),
      fuzzOptions(5_000, 6_000),
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(`[figures] search fuzz (variables): ${n} requests, ${Math.round(n / seconds)}/s`);
  });

  it('answers mutated documents without a 5xx or internals', { timeout: fuzzTimeout }, async () => {
    const fragments = fc.constantFrom(
      '{',
      '}',
      '...',
      'fragment f on X { a }',
      '$',
      '@skip',
      '"'.repeat(3),
      '#',
    );
    const input = fc.tuple(
      fc.constantFrom(...operations),
      fc.nat(),
      fc.nat(),
      fc.oneof(hostileString, fragments),
    );
    await fc.assert(
      fc.asyncProperty(input, async ([op, at, cut, insert]) => {
        const i = at % (op.query.length + 1);
        const query = op.query.slice(0, i) + insert + op.query.slice(i + (cut % 5));
        const body = serialize({ query, variables: op.variables });
        const reply = await postGraphQLText(url, ca.certPem, tokenA, body);
        expect(replyProblems(reply), query.slice(0, 300)).toEqual([]);
      }),
      fuzzOptions(3_000, 4_000),
    );
  });
});

describe('the watch subscription', () => {
  it('streams only the changes the subscriber may list', async () => {
    const events: Record<string, unknown>[] = [];
    const client = wsClient(tokenA);
    const done = new Promise<void>((resolve, reject) => {
      client.subscribe(
        {
          query:
            'subscription { watch(input: { filters: [{ property: "kind", values: ["ConfigMap"] }] }) { uid operation newData } }',
        },
        {
          next: (value) => {
            events.push((value.data as { watch: Record<string, unknown> }).watch);
          },
          error: reject,
          complete: resolve,
        },
      );
    });
    await new Promise((r) => setTimeout(r, 500)); // the subscription registers
    await service.store.indexer.write({
      cluster: HubCluster,
      upserts: [row('ConfigMap', 'hidden-b', nsB), row('ConfigMap', 'visible-a', nsA)],
    });
    await eventually(() => events.length > 0, { what: 'a watch event' });
    await new Promise((r) => setTimeout(r, 1500)); // time for a wrongly delivered event to show up
    expect(events.map((e) => (e.newData as { name: string }).name)).toEqual(['visible-a']);
    await client.dispose();
    await done.catch(() => {});
  });

  it('refuses a websocket without a valid token', async () => {
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${url.replace('https', 'wss')}/searchapi/graphql`, 'graphql-transport-ws', {
        ca: ca.certPem,
        headers: { authorization: 'Bearer nope' },
      });
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
      ws.on('error', () => {});
    });
    expect(status).toBe(401);
  });
});

describe("ACM's cookie only from search's own origin, and /metrics only for those allowed", () => {
  /** The status of a WebSocket upgrade with these headers (101 when it opened), and the socket's first answer. */
  const upgrade = (headers: Record<string, string>) =>
    new Promise<{ status: number; body: string; socket?: WebSocket }>((resolve) => {
      const ws = new WebSocket(`${url.replace('https', 'wss')}/searchapi/graphql`, 'graphql-transport-ws', {
        ca: ca.certPem,
        headers,
      });
      ws.on('unexpected-response', (_req, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
      });
      ws.on('open', () => resolve({ status: 101, body: '', socket: ws }));
      ws.on('error', () => {});
    });
  const cookie = () => `acm-access-token-cookie=${tokenA}`;

  it('refuses a cross-origin upgrade and request that carry the cookie; its own origin still works', async () => {
    // A page of another origin opens a socket; the browser adds the user's cookie.
    const cross = await upgrade({ cookie: cookie(), origin: 'https://evil.example' });
    expect(cross.status).toBe(403);
    expect(cross.body).toMatch(/own origin, not from https:\/\/evil\.example/);
    const crossPost = await post(
      undefined,
      '{ searchSchema }',
      {},
      {
        cookie: cookie(),
        origin: 'https://evil.example',
      },
    );
    expect(crossPost.status).toBe(403);
    expect(JSON.stringify(crossPost.body)).toMatch(/Authorization: Bearer/);
    // The service's own origin (the Host the request came to), and a non-browser client without Origin.
    const host = new URL(url).host;
    const sameOrigin: Record<string, string>[] = [
      { cookie: cookie(), origin: `https://${host}` },
      { cookie: cookie() },
    ];
    for (const headers of sameOrigin) {
      const same = await upgrade(headers);
      expect(same.status).toBe(101);
      same.socket?.close();
    }
    // A bearer token is not sent by a browser on its own: accepted from any origin.
    const bearer = await upgrade({ authorization: `Bearer ${tokenA}`, origin: 'https://other.example' });
    expect(bearer.status).toBe(101);
    bearer.socket?.close();
  });

  it('answers 503 with the reason while its database is gone, and the exact answer once it is back', async () => {
    // A second API whose database is reached through a proxy that can go, as a killed database Pod does.
    const port = await freePort();
    let proxy = await proxyOn(db.url, port);
    const ended = new AbortController();
    const serving = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
    const second = await startSearchService(
      {
        client: await searchServiceIdentity(cluster),
        logger: silentLogger,
        databaseUrl: proxy.url,
        certificate: serving,
        tokenTtlMs: 60_000,
      },
      ended.signal,
    );
    const query = '{ search(input: [{ filters: [{ property: "kind", values: ["ConfigMap"] }] }]) { items } }';
    const ask = () => postGraphQL(`https://127.0.0.1:${second.port}`, ca.certPem, tokenA, query);
    try {
      // What the first API answers her (other tests of this file add rows too).
      const want = names(((await post(tokenA, query)).body.data as Items).search[0]!.items);
      expect(want).toContain('settings-a');
      const before = await ask();
      expect(before.status).toBe(200);
      expect(names((before.body.data as Items).search[0]!.items)).toEqual(want);
      await proxy.cut();
      const gone = await ask();
      expect(gone.status).toBe(503);
      expect(gone.body.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
      expect(gone.body.errors?.[0]?.message).toMatch(
        /the search index is unavailable: its database cannot be reached \(.+\); retry/,
      );
      expect(JSON.stringify(gone.body)).not.toContain('settings-a');
      proxy = await proxyOn(db.url, port);
      const back = await eventually(
        async () => {
          const reply = await ask();
          if (reply.status !== 200) throw new Error(`still ${reply.status}`);
          return reply;
        },
        { what: 'answers again', timeoutMs: 15_000 },
      );
      expect(names((back.body.data as Items).search[0]!.items)).toEqual(want);
    } finally {
      ended.abort();
      await second.done;
      await proxy.cut();
    }
  });

  it('answers /metrics only to a caller the API server lets get /metrics', async () => {
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(`${url}/metrics`, { ca: ca.certPem, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
        });
        req.on('error', reject);
        req.end();
      });
    const anonymous = await get({});
    expect(anonymous.status).toBe(401);
    expect(anonymous.text).not.toMatch(/tenantkit_/);
    const tenant = await get({ authorization: `Bearer ${tokenA}` });
    expect(tenant.status).toBe(403);
    expect(tenant.text).toMatch(/non-resource URL \/metrics/);
    const { token: scraper } = await cluster.serviceAccount(nsA, 'scraper');
    await cluster.grant(
      { kind: 'ServiceAccount', name: 'scraper', namespace: nsA },
      { rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] },
    );
    const allowed = await get({ authorization: `Bearer ${scraper}` });
    expect(allowed.status).toBe(200);
    expect(allowed.text).toMatch(/tenantkit_search_api_request_seconds/);
  });
});
