// The SQL access predicate against the access set's reference meaning (allows()), on random access sets
// and random objects in a real PostgreSQL: the database must return exactly the objects allows() admits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/kube/log.ts';
import { allows } from '../../src/search/access/index.ts';
import type { Database } from '../../src/search/db/postgres.ts';
import { Indexer } from '../../src/search/indexer/indexer.ts';
import {
  type AccessSet,
  HubCluster,
  type IndexedResource,
  type ResourceGrant,
} from '../../src/search/model.ts';
import { accessBranches, accessPredicate } from '../../src/search/query/access-sql.ts';
import { Params, resourceColumns } from '../../src/search/query/sql.ts';
import { startTestDatabase } from '../harness/postgres.ts';

const groups = ['', 'apps', 'batch', 'example.com'];
const types: [group: string, resource: string, kind: string, namespaced: boolean][] = [
  ['', 'pods', 'Pod', true],
  ['', 'secrets', 'Secret', true],
  ['', 'configmaps', 'ConfigMap', true],
  ['', 'namespaces', 'Namespace', false],
  ['', 'nodes', 'Node', false],
  ['apps', 'deployments', 'Deployment', true],
  ['batch', 'jobs', 'Job', true],
  ['example.com', 'widgets', 'Widget', true],
  ['example.com', 'gadgets', 'Gadget', false],
];
const namespaces = ['ns-a', 'ns-b', 'ns-c', 'ns-d'];
const names = ['one', 'two', 'three'];
const clusters = [HubCluster, 'edge-1', 'edge-2'];

let seed = 42;
const random = () => {
  seed = (seed * 48271) % 2147483647;
  return seed / 2147483647;
};
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
const some = <T>(list: readonly T[], max = 2): T[] => [
  ...new Set(Array.from({ length: 1 + Math.floor(random() * max) }, () => pick(list))),
];

function randomGrant(): ResourceGrant {
  const grant: ResourceGrant = {
    apiGroups: random() < 0.2 ? ['*'] : some(groups),
    resources:
      random() < 0.2
        ? ['*']
        : some(
            types.map((t) => t[1]),
            3,
          ),
  };
  if (random() < 0.3) grant.names = some(names);
  return grant;
}

function randomSet(i: number): AccessSet {
  const nsEntries = Array.from({ length: Math.floor(random() * 3) }, () => ({
    namespaces: some(namespaces, 3),
    grants: Array.from({ length: 1 + Math.floor(random() * 2) }, randomGrant),
  }));
  return {
    all: random() < 0.03,
    clusterWide: random() < 0.4 ? [randomGrant()] : [],
    namespaced: nsEntries,
    // The hub among them too (a ManagedCluster named like it): its objects stay RBAC's.
    managedClusters: random() < 0.3 ? some(clusters, 2) : [],
    canSearch: true,
    digest: `set-${i}`,
  };
}

describe('access predicate in SQL', () => {
  let db: Database;
  const objects: IndexedResource[] = [];

  beforeAll(async () => {
    db = await startTestDatabase();
    const indexer = new Indexer({ pool: db.pool, logger: silentLogger, hubCluster: HubCluster });
    let n = 0;
    for (const cluster of clusters) {
      for (const [group, resource, kind, namespaced] of types) {
        for (const ns of namespaced ? namespaces : [undefined]) {
          for (const name of names) {
            objects.push({
              uid: `${cluster}/${++n}`,
              data: {
                kind,
                kind_plural: resource,
                apiversion: 'v1',
                name,
                ...(group ? { apigroup: group } : {}),
                ...(ns ? { namespace: ns } : {}),
              },
              edges: [],
            });
          }
        }
      }
    }
    for (const cluster of clusters) {
      await indexer.write({ cluster, upserts: objects.filter((o) => o.uid.startsWith(`${cluster}/`)) });
    }
  });
  afterAll(async () => {
    await db?.close();
  });

  it('returns exactly what allows() admits, for 300 random access sets, as one predicate and as disjoint branches', async () => {
    let checked = 0;
    for (let i = 0; i < 300; i++) {
      const set = randomSet(i);
      const p = new Params();
      const where = accessPredicate(set, HubCluster, resourceColumns('r'), p);
      const rows = await db.pool.query<{ uid: string }>({
        text: `SELECT r.uid FROM search.resources r WHERE ${where}`,
        values: p.values,
      });
      const fromSql = new Set(rows.rows.map((r) => r.uid));
      // The branches, read apart as the engine reads them, give the same rows, none twice.
      const q = new Params();
      const branches = accessBranches(set, HubCluster, resourceColumns('r'), q);
      const apart =
        branches.length === 0
          ? []
          : (
              await db.pool.query<{ uid: string }>({
                text: branches
                  .map((b) => `SELECT r.uid FROM search.resources r WHERE ${b}`)
                  .join(' UNION ALL '),
                values: q.values,
              })
            ).rows.map((r) => r.uid);
      expect(apart.length).toBe(new Set(apart).size);
      expect(new Set(apart)).toEqual(fromSql);
      for (const o of objects) {
        const cluster = o.uid.slice(0, o.uid.indexOf('/'));
        const expected = allows(set, {
          cluster,
          group: o.data.apigroup ?? '',
          resource: o.data.kind_plural,
          name: o.data.name,
          ...(o.data.namespace ? { namespace: o.data.namespace } : {}),
        });
        if (fromSql.has(o.uid) !== expected) {
          throw new Error(
            `disagreement on ${JSON.stringify(o.data)} in ${cluster} for ${JSON.stringify(set)}`,
          );
        }
        checked++;
      }
    }
    expect(checked).toBe(300 * objects.length);
  });
});
