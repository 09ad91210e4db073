// The namespace quota across webhook replicas, against the real API server: two replicas of the ledger
// (each with its own caches, under the webhook identity's rules as the chart renders them) decide at
// once; whatever one admits, the test creates as the API server would after admission. The quota must
// hold exactly, slots handed out from grants must save writes, and a replica must wait for another's
// grant rather than refuse a namespace that fits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../src/kube/client.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { Manager } from '../../src/kube/manager.ts';
import { registry } from '../../src/kube/metrics.ts';
import { Resources } from '../../src/kube/resources.ts';
import { directory } from '../../src/tenancy/caches/directory.ts';
import { tenancy } from '../../src/tenancy/index.ts';
import { type QuotaDecision, QuotaLedger } from '../../src/tenancy/quota/ledger.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { componentKubeconfig, componentUser } from '../harness/components.ts';

const cluster = await TestCluster.connect();
const label = 'quota-test.tenantkit.io/organization';
const ledgerNamespace = 'tenantkit-system';
/** The default TenancyConfig.spec.namespaceQuotaHoldSeconds. */
const holdMs = 10_000;

interface Replica {
  ledger: QuotaLedger;
  stop: AbortController;
}
const replicas: Replica[] = [];

async function replica(kubeconfig: string): Promise<QuotaLedger> {
  const manager = new Manager({
    client: KubeClient.fromKubeconfig({ path: kubeconfig }),
    logger: silentLogger,
    component: 'quota-test',
  });
  const ledger = new QuotaLedger(manager.client, directory(manager), manager, ledgerNamespace);
  const stop = new AbortController();
  void manager.start(stop.signal);
  await eventually(() => manager.hasSynced(), { what: 'replica caches synced' });
  replicas.push({ ledger, stop });
  return ledger;
}

let a: QuotaLedger;
let b: QuotaLedger;

beforeAll(async () => {
  const kubeconfig = await componentKubeconfig(cluster, 'tenancy-webhooks', tenancy.webhookRules);
  await cluster.admin.apply(
    Resources.namespaces,
    { metadata: { name: ledgerNamespace } },
    { fieldManager: 'tenantkit-test' },
  );
  await cluster.grant(
    { kind: 'User', name: componentUser('tenancy-webhooks') },
    { rules: tenancy.webhookNamespacedRules ?? [], name: 'tenantkit-test-tenancy-webhooks' },
    ledgerNamespace,
  );
  a = await replica(kubeconfig);
  b = await replica(kubeconfig);
});

afterAll(async () => {
  for (const r of replicas) r.stop.abort();
  await cluster.cleanup();
});

/** Asks `ledger` to admit `namespace`; when it does, creates it as the API server would. */
async function admit(ledger: QuotaLedger, organization: string, namespace: string, limit: number) {
  const decision = await ledger.reserve({
    organization,
    namespace,
    label,
    limit,
    ledgerNamespace,
    dryRun: false,
    holdMs,
  });
  if (decision.ok) {
    cluster.defer(() => cluster.admin.delete(Resources.namespaces, namespace));
    await cluster.admin.create(Resources.namespaces, {
      metadata: { name: namespace, labels: { [label]: organization } },
    });
  }
  return decision;
}

async function ledgerWrites(): Promise<Record<string, number>> {
  const metric = await registry
    .getSingleMetric('tenantkit_tenancy_namespace_quota_ledger_writes_total')!
    .get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.kind), v.value]));
}

/** Decisions this process made by a ledger write or read (not from a grant in memory). */
async function ledgerDecisions(): Promise<number> {
  const metric = await registry.getSingleMetric('tenantkit_tenancy_namespace_quota_decisions_total')!.get();
  return metric.values.filter((v) => v.labels.source === 'ledger').reduce((n, v) => n + v.value, 0);
}

async function owned(organization: string): Promise<number> {
  const list = await cluster.admin.list(Resources.namespaces, { labelSelector: `${label}=${organization}` });
  return list.items.length;
}

describe('namespace quota across two webhook replicas', () => {
  it('admits from a grant held in memory: 40 namespaces for a handful of ledger writes', async () => {
    const org = cluster.unique('qa');
    const before = await ledgerWrites();
    for (let i = 0; i < 40; i++) expect((await admit(a, org, `${org}-${i}`, 100)).ok).toBe(true);
    const after = await ledgerWrites();
    const writes = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
    // 25 slots, then 18 (a quarter of what is left each time): two grant writes (a third if the first
    // grant's 2 s window ran out on a busy machine), and no write for a single namespace.
    expect(writes('grant')).toBeGreaterThanOrEqual(2);
    expect(writes('grant')).toBeLessThanOrEqual(3);
    expect(writes('reservation')).toBe(0);
    expect(await owned(org)).toBe(40);
  });

  it('renews a busy grant as it returns it: a steady stream of creates waits for no ledger write after the first', async () => {
    const org = cluster.unique('qe');
    const before = await ledgerWrites();
    const decidedBefore = await ledgerDecisions();
    // Three windows of 2 s and more after the first create, at a script's pace (one create every 100 ms).
    let started = 0;
    for (let i = 0; i === 0 || Date.now() - started < 6_000; i++) {
      expect((await admit(a, org, `${org}-${i}`, 1000)).ok).toBe(true);
      if (i === 0) started = Date.now();
      await new Promise((r) => setTimeout(r, 100));
    }
    const writes = (k: string, after: Record<string, number>) => (after[k] ?? 0) - (before[k] ?? 0);
    const during = await ledgerWrites();
    // One grant for the first create; each window's end returns it and takes the next in one write.
    // Without renewals every window's first create would wait for a grant write of its own (3 or more).
    expect(writes('renewal', during)).toBeGreaterThanOrEqual(2);
    expect(writes('grant', during)).toBe(1);
    // A create that comes as a window closes, before or during its renewal's write, takes its slot from
    // the renewed grant: no create after the first is decided by a ledger write of its own.
    expect((await ledgerDecisions()) - decidedBefore).toBe(1);
    // Once the stream stops, the renewed grant admits nothing and goes back without a successor.
    await eventually(
      async () => {
        const ledger = (
          await cluster.admin.list(Resources.configMaps, { namespace: ledgerNamespace })
        ).items.find((c) => c.metadata.annotations?.['tenancy.tenantkit.io/organization'] === org) as
          | { data?: Record<string, string> }
          | undefined;
        return ledger?.data?.grants === '{}';
      },
      { what: 'the last grant returned', timeoutMs: 10_000 },
    );
    expect(writes('return', await ledgerWrites())).toBeGreaterThanOrEqual(1);
  });

  it("takes a create that comes as a busy window closes, before the return's timer, from the renewal", async () => {
    const org = cluster.unique('qf');
    const before = await ledgerWrites();
    const decidedBefore = await ledgerDecisions();
    expect((await admit(a, org, `${org}-0`, 1000)).ok).toBe(true);
    const granted = Date.now();
    expect((await admit(a, org, `${org}-1`, 1000)).ok).toBe(true);
    // The grant's window closes within 2 s of `granted`. The event loop is held past it, so the return's
    // timer (due 5 ms after the close) has not run when the next create asks: the moment a busy machine's
    // late timer leaves open.
    await new Promise((r) => setTimeout(r, Math.max(0, granted + 1_900 - Date.now())));
    while (Date.now() < granted + 2_100) {
      /* hold the event loop */
    }
    expect((await admit(a, org, `${org}-2`, 1000)).ok).toBe(true);
    const after = await ledgerWrites();
    const writes = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
    // One grant, then one renewal that the create waited for and took its slot from; before, the create
    // wrote a grant of its own and the busy grant went back without a successor.
    expect(writes('grant')).toBe(1);
    expect(writes('renewal')).toBe(1);
    expect((await ledgerDecisions()) - decidedBefore).toBe(1);
  });

  it('never admits more than the quota, and refuses none that fits, with both replicas at once', async () => {
    const org = cluster.unique('qb');
    const limit = 30;
    const results: QuotaDecision[] = [];
    // Each replica works through 25 names, four at a time, while the other does the same.
    const run = async (ledger: QuotaLedger, side: string) => {
      const names = Array.from({ length: 25 }, (_, i) => `${org}-${side}${i}`);
      const workers = Array.from({ length: 4 }, async (_, w) => {
        for (let i = w; i < names.length; i += 4) results.push(await admit(ledger, org, names[i]!, limit));
      });
      await Promise.all(workers);
    };
    await Promise.all([run(a, 'a'), run(b, 'b')]);
    expect(results.filter((d) => d.ok)).toHaveLength(limit);
    expect(await owned(org)).toBe(limit);
    for (const d of results.filter((r) => !r.ok)) expect(d).toMatchObject({ ok: false, used: limit });
    // Once every grant is back, neither replica admits one more.
    await new Promise((r) => setTimeout(r, 3_500));
    expect(await admit(a, org, `${org}-late-a`, limit)).toEqual({ ok: false, used: limit, held: 0 });
    expect(await admit(b, org, `${org}-late-b`, limit)).toEqual({ ok: false, used: limit, held: 0 });
  });

  it("waits for another replica's grant to come back instead of refusing a namespace that fits", async () => {
    const org = cluster.unique('qc');
    const limit = 12;
    // a takes a grant of three slots (a quarter of 12) and uses one.
    expect(await admit(a, org, `${org}-a0`, limit)).toMatchObject({ ok: true });
    // b counts a's three slots in full (its one namespace twice) until a returns the grant.
    const admitted: number[] = [];
    for (let i = 0; i < 11; i++) {
      const started = Date.now();
      const decision = await admit(b, org, `${org}-b${i}`, limit);
      expect(decision.ok, `b's namespace ${i}`).toBe(true);
      admitted.push(Date.now() - started);
    }
    expect(await owned(org)).toBe(limit);
    // One of b's decisions waited for a's grant (its 2 s window and the return write), none refused.
    expect(Math.max(...admitted)).toBeGreaterThan(300);
    expect(Math.max(...admitted)).toBeLessThan(5_000);
    expect(await admit(b, org, `${org}-b-over`, limit)).toMatchObject({ ok: false, used: limit });
  });

  it("counts a stopped replica's slots until they run out, and says they are held", async () => {
    const org = cluster.unique('qd');
    const ledgers = await cluster.admin.list(Resources.configMaps, { namespace: ledgerNamespace });
    expect(ledgers.items.length).toBeGreaterThan(0);
    // One namespace, then a grant of two slots whose holder stopped before returning it (its window
    // closed 5 s ago), as a crashed replica leaves it.
    expect(await admit(a, org, `${org}-0`, 3)).toMatchObject({ ok: true });
    const name = (await cluster.admin.list(Resources.configMaps, { namespace: ledgerNamespace })).items.find(
      (c) => c.metadata.annotations?.['tenancy.tenantkit.io/organization'] === org,
    )!.metadata.name!;
    const now = Date.now();
    await cluster.admin.patch(Resources.configMaps, name, ledgerNamespace, {
      data: {
        reservations: JSON.stringify({ 'dead.1/0': now + 55_000, 'dead.1/1': now + 55_000 }),
        grants: JSON.stringify({ 'dead.1': now - 5_000 }),
      },
    });
    await eventually(async () => (await b.reserve(probe(org))).ok === false, {
      what: 'b sees the held slots',
    });
    expect(await admit(b, org, `${org}-1`, 3)).toEqual({
      ok: false,
      used: 3,
      held: 2,
      freesAt: now + 55_000,
    });
  });
});

const probe = (organization: string) => ({
  organization,
  namespace: `${organization}-probe`,
  label,
  limit: 3,
  ledgerNamespace,
  dryRun: true,
  holdMs,
});
