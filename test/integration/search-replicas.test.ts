// Search reads from read replicas: real PostgreSQL processes, a primary and two streaming standbys of it.
// Reads go to a replica only while its staleness is within the bound; a replica that falls behind (its
// replay paused) or goes away (its server killed) is left out and the primary answers, with no error and
// never a result older than the bound; once caught up it serves again, with the primary's results.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Standby, startStandby } from '../../devenv/postgres/standby.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { migrate } from '../../src/search/db/migrations.ts';
import { type Database, startEmbedded } from '../../src/search/db/postgres.ts';
import { ReadRouter } from '../../src/search/db/replicas.ts';
import { Indexer } from '../../src/search/indexer/indexer.ts';
import { searchMetrics } from '../../src/search/metrics.ts';
import type { IndexedResource } from '../../src/search/model.ts';
import { PostgresSearch } from '../../src/search/query/engine.ts';
import { allAccess } from '../harness/access-sets.ts';
import { eventually } from '../harness/cluster.ts';
import { webDeployment } from '../harness/search-objects.ts';

const all = allAccess;
const cluster = 'edge-r';
const pod = (name: string, owner?: string): IndexedResource => ({
  uid: `${cluster}/${name}`,
  data: { kind: 'Pod', kind_plural: 'pods', apiversion: 'v1', name, namespace: 'shop' },
  edges: owner ? [{ type: 'ownedBy', uid: `${cluster}/${owner}` }] : [],
});
const deployment = webDeployment(cluster, 'web');

describe('search on read replicas', () => {
  let dir = '';
  let primary: Database;
  let replicas: Standby[] = [];
  let router: ReadRouter;
  let onReplicas: PostgresSearch;
  let onPrimary: PostgresSearch;
  let indexer: Indexer;
  const stop = new AbortController();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tenantkit-replicas-'));
    await chmod(dir, 0o755);
    primary = await startEmbedded({
      dir: join(dir, 'primary'),
      unsafeNoFsync: true,
      statementTimeoutMs: 20_000,
    });
    await migrate(primary.pool);
    indexer = new Indexer({ pool: primary.pool, logger: silentLogger, hubCluster: 'local-cluster' });
    await indexer.write({
      cluster,
      upserts: [deployment, ...Array.from({ length: 20 }, (_, i) => pod(`web-${i}`, 'web'))],
    });
    replicas = [
      await startStandby(primary, join(dir, 'primary'), join(dir, 'replica-1'), 'replica-1'),
      await startStandby(primary, join(dir, 'primary'), join(dir, 'replica-2'), 'replica-2'),
    ];
    router = new ReadRouter({
      primary: primary.pool,
      replicas: replicas.map((r, i) => ({ name: `replica-${i + 1}`, pool: r.pool })),
      maxLagMs: 1_000,
      pollMs: 50,
      logger: silentLogger,
    });
    void router.run(stop.signal);
    const engine = (reads?: ReadRouter) =>
      new PostgresSearch({
        pool: primary.pool,
        hubCluster: 'local-cluster',
        logger: silentLogger,
        ...(reads ? { reads } : {}),
      });
    onReplicas = engine(router);
    onPrimary = engine();
  }, 120_000);

  afterAll(async () => {
    stop.abort();
    for (const r of replicas) await r.close();
    await primary?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const readsOf = async (target: string) =>
    (await searchMetrics.reads.get()).values
      .filter((v) => v.labels.target === target)
      .reduce((n, v) => n + v.value, 0);
  const lagMetric = async (replica: string) =>
    (await searchMetrics.replicaLag.get()).values.find((v) => v.labels.replica === replica)?.value;
  /** The answers of the query mix, as plain data to compare. */
  const answers = async (engine: PostgresSearch) => {
    const pods = { filters: [{ property: 'kind', values: ['Pod'] }] };
    const found = await engine.search(all, pods, {
      items: true,
      count: true,
      related: { items: false, count: true },
    });
    return {
      names: (found.items ?? []).map((i) => i.name).sort(),
      count: found.count,
      related: found.related,
      complete: await engine.complete(all, 'name', undefined),
    };
  };

  it('answers from the replicas exactly as the primary does once they have caught up', async () => {
    await eventually(() => Object.values(router.lags()).every((lag) => lag === 0), {
      what: 'both replicas caught up',
      timeoutMs: 30_000,
    });
    const before = {
      r1: await readsOf('replica-1'),
      r2: await readsOf('replica-2'),
      primary: await readsOf('primary'),
    };
    const expected = await answers(onPrimary);
    expect(expected.count).toBe(20);
    for (let i = 0; i < 4; i++) expect(await answers(onReplicas)).toEqual(expected);
    // The reads went to the replicas (in turn), none to the primary.
    expect(await readsOf('replica-1')).toBeGreaterThan(before.r1);
    expect(await readsOf('replica-2')).toBeGreaterThan(before.r2);
    expect(await readsOf('primary')).toBe(before.primary);
    // The gauge follows each poll: any write on the primary (a checkpoint's, autovacuum's) between two
    // polls shows as a moment of lag, so it is read as it settles, not once.
    await eventually(async () => (await lagMetric('replica-1')) === 0, {
      what: 'the lag gauge of replica-1 at 0',
      timeoutMs: 10_000,
    });
  });

  it('leaves out a replica that falls behind, and never serves what is older than the bound', async () => {
    await replicas[0]!.pauseReplay();
    await indexer.write({ cluster, upserts: [pod('web-new', 'web')] });
    await eventually(() => router.lags()['replica-1']! > 1_000, {
      what: 'replica-1 past the bound',
      timeoutMs: 10_000,
    });
    expect(await lagMetric('replica-1')).toBeGreaterThan(1);
    // Past the bound every read has the new pod: replica-2 (caught up) or the primary answered.
    for (let i = 0; i < 10; i++) {
      const { names } = await answers(onReplicas);
      expect(names).toContain('web-new');
    }
  });

  it('reads the primary, without an error, when a replica goes away', async () => {
    const before = await readsOf('primary');
    await replicas[1]!.kill();
    // replica-1 is paused behind, replica-2 is gone: the primary answers every read.
    for (let i = 0; i < 10; i++) {
      const { names, count } = await answers(onReplicas);
      expect(names).toContain('web-new');
      expect(count).toBe(21);
    }
    expect(await readsOf('primary')).toBeGreaterThan(before);
    await eventually(() => router.lags()['replica-2'] === Number.POSITIVE_INFINITY, {
      what: 'replica-2 out',
    });
    expect(await lagMetric('replica-2')).toBe(-1);
  });

  it('serves from a replica again once it has caught up', async () => {
    await replicas[0]!.resumeReplay();
    await eventually(() => router.lags()['replica-1'] === 0, {
      what: 'replica-1 caught up',
      timeoutMs: 20_000,
    });
    const before = await readsOf('replica-1');
    expect(await answers(onReplicas)).toEqual(await answers(onPrimary));
    expect(await readsOf('replica-1')).toBeGreaterThan(before);
  });
});
