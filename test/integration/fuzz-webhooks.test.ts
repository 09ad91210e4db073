// Fuzzing every admission webhook tenantkit serves, as a hostile client posting to the webhook server
// directly (any Pod can reach its Service): reviews of every path, mutated (types, nesting, sizes, unicode,
// prototype keys, NUL, huge numbers), must get 200/400/413 with a well-formed answer and no error text,
// and a mutation of fields no handler reads must not change the verdict. Seeded and reproducible: a
// failure prints its seed (FUZZ_SEED replays it); FUZZ_RUNS raises the inputs (npm run fuzz).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import { OrganizationCrd } from '../../src/crds/tenancy.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { Manager } from '../../src/kube/manager.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { createCA } from '../../src/serving/certs.ts';
import type { WebhookDefinition } from '../../src/webhook/registration.ts';
import { WebhookServer } from '../../src/webhook/server.ts';
import { answerProblems, baseReview, postReview, verdictOf } from '../fuzz/admission.ts';
import {
  applyMutation,
  fuzzOptions,
  fuzzRuns,
  hostileValue,
  type Json,
  mutationsOf,
  serialize,
} from '../fuzz/json.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';

const cluster = await TestCluster.connect();
let server: WebhookServer;
let port: number;
let definitions: WebhookDefinition[];
const stop = new AbortController();
let run: Promise<void>;

beforeAll(async () => {
  // The reviews' namespace belongs to an organization with every guardrail set, so that the guardrail
  // webhooks judge what the fuzzer makes of a Pod, a claim or an Ingress instead of passing it by.
  const apply = { fieldManager: 'fuzz-test', force: true };
  await cluster.admin.apply(
    OrganizationCrd.type,
    {
      metadata: { name: 'fuzz-org' },
      spec: {
        members: { users: ['fuzz-tenant'] },
        guardrails: {
          registries: ['ghcr.io/fuzz', '*.example'],
          storageClasses: { allowed: ['fast'], default: 'fast' },
          ingressClasses: { allowed: ['internal'], default: 'internal' },
          ingressHostnames: ['*.fuzz.example'],
          priorityClasses: { allowed: ['low'] },
          runtimeClasses: { allowed: [] },
          namespaceLabels: { 'pod-security.kubernetes.io/enforce': 'baseline' },
        },
      },
    } as KubeObject,
    apply,
  );
  cluster.defer(() => cluster.admin.delete(OrganizationCrd.type, 'fuzz-org'));
  await cluster.admin.apply(
    Resources.namespaces,
    { metadata: { name: 'fuzz', labels: { 'appuio.io/organization': 'fuzz-org' } } },
    apply,
  );
  cluster.defer(() => cluster.admin.delete(Resources.namespaces, 'fuzz'));
  const manager = new Manager({ client: cluster.admin, logger: silentLogger, component: 'fuzz-webhooks' });
  const ctx = { client: cluster.admin, manager, namespace: 'tenantkit-system' };
  definitions = (await Promise.all(capabilities.map((c) => c.webhooks?.(ctx) ?? []))).flat();
  run = manager.start(stop.signal);
  await eventually(() => manager.hasSynced(), { what: 'webhook caches synced' });
  const ca = await createCA('fuzz-ca');
  server = new WebhookServer({
    logger: silentLogger,
    certificate: await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] }),
  });
  server.register(...definitions);
  port = await server.start();
}, 60_000);

afterAll(async () => {
  await server?.stop();
  stop.abort();
  await run;
  await cluster.cleanup();
});

const timeout = fuzzRuns ? 24 * 3600_000 : 60_000;

describe('fuzzing the admission webhooks', () => {
  it('answers every mutated review of every path with 200, 400 or 413, a well-formed answer and no error text', {
    timeout,
  }, async () => {
    let n = 0;
    const rssBefore = process.memoryUsage().rss;
    const started = performance.now();
    const input = fc.constantFrom(...definitions).chain((def) => {
      const base = baseReview(def, `fuzz-${def.name}`);
      return fc.tuple(fc.constant(def), fc.constant(base), mutationsOf(base));
    });
    await fc.assert(
      fc.asyncProperty(input, async ([def, base, mutations]) => {
        const review = mutations.reduce((doc, m) => applyMutation(doc, m), base);
        const uid = (review as { request?: { uid?: unknown } } | null)?.request?.uid;
        const answer = await postReview(port, `/${def.name}`, serialize(review));
        n++;
        expect(answerProblems(answer, uid), `${def.name} ${JSON.stringify(mutations).slice(0, 500)}`).toEqual(
          [],
        );
      }),
      fuzzOptions(20_000, 8_000),
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `[figures] webhook fuzz: ${n} reviews over ${definitions.length} paths, ${Math.round(n / seconds)}/s, RSS ${Math.round(rssBefore / 2 ** 20)} -> ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB`,
    );
    expect(n).toBeGreaterThan(100);
  });

  it("answers a review whose resource, kind or operation is named like one of JavaScript's own object keys", async () => {
    // A handler that looks a name from the request up in a plain object finds `__proto__`, `constructor`
    // or `toString` on every object: such a lookup once made the pod-hooks webhook throw (500).
    const problems: string[] = [];
    for (const def of definitions) {
      for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
        for (const field of ['resource', 'kind', 'operation'] as const) {
          const review = baseReview(def, `own-${def.name}`) as { request: { [key: string]: Json } };
          const request = review.request;
          if (field === 'operation') request.operation = name;
          else {
            const at = request[field] as { [key: string]: Json };
            at[field === 'resource' ? 'resource' : 'kind'] = name;
          }
          const answer = await postReview(port, `/${def.name}`, serialize(review));
          for (const problem of answerProblems(answer, `own-${def.name}`)) {
            problems.push(`${def.name} ${field}=${name}: ${problem}`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('gives the same verdict when only fields no handler reads change', { timeout }, async () => {
    const input = fc.tuple(
      fc.constantFrom(...definitions),
      hostileValue,
      fc.constantFrom('review', 'options'),
    );
    await fc.assert(
      fc.asyncProperty(input, async ([def, value, where]) => {
        const base = baseReview(def, `same-${def.name}`) as { [key: string]: Json };
        const plain = await postReview(port, `/${def.name}`, serialize(base));
        const changed = structuredClone(base);
        if (where === 'review') changed.fuzzIgnored = value;
        else (changed.request as { [key: string]: Json }).options = value;
        const answer = await postReview(port, `/${def.name}`, serialize(changed));
        // A value nested past the depth limit is refused as a whole: that is not a verdict change.
        if (answer.status === 400) return;
        expect(verdictOf(answer), def.name).toBe(verdictOf(plain));
      }),
      fuzzOptions(2_000, 4_000),
    );
  });
});
