// The images tenantkit ships run on the local node the way the Helm chart runs them (non-root, read-only
// root file system, no capabilities). How they are built is images-build.test.ts'.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BuiltImage,
  ensurePostgresImage,
  ensureTenantkitImage,
  ensureVeleroImage,
  repoRoot,
} from '../../devenv/images/build.ts';
import type { LocalNode } from '../../devenv/node/launch.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { nodeSkipReason, startTestNode, stopTestNode } from '../harness/node.ts';

const _run = promisify(execFile);

interface Pod extends KubeObject {
  status?: { phase?: string; podIP?: string; containerStatuses?: { ready?: boolean; state?: unknown }[] };
}

/** What the chart asks of every container: the restricted Pod Security profile and a read-only root. */
const restricted = {
  runAsNonRoot: true,
  readOnlyRootFilesystem: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

describe.skipIf(nodeSkipReason)('the images tenantkit ships', () => {
  let cluster: TestCluster;
  let node: LocalNode;
  let ns = '';
  const images: Record<'tenantkit' | 'velero' | 'postgres', BuiltImage> = {} as never;
  const progress = (line: string) => console.log(`[images] ${line}`);
  const pod = (name: string, image: string, spec: Record<string, unknown>) =>
    ({
      metadata: { name, namespace: ns, labels: { app: name } },
      spec: {
        securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
        terminationGracePeriodSeconds: 1,
        ...spec,
        containers: (spec.containers as Record<string, unknown>[]).map((c) => ({
          image,
          imagePullPolicy: 'IfNotPresent',
          securityContext: restricted,
          ...c,
        })),
      },
    }) as KubeObject;
  const finished = async (name: string) => {
    const done = await eventually(
      async () => {
        const p = await cluster.admin.get<Pod>(Resources.pods, name, ns);
        return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
      },
      { what: `pod ${name} finished`, timeoutMs: 60_000 },
    );
    const log = await cluster.admin.request<string>('GET', `/api/v1/namespaces/${ns}/pods/${name}/log`, {
      text: true,
    });
    return { phase: done.status?.phase, log };
  };

  beforeAll(async () => {
    cluster = await TestCluster.connect();
    images.tenantkit = await ensureTenantkitImage({ progress });
    images.velero = await ensureVeleroImage({ progress });
    images.postgres = await ensurePostgresImage({ progress });
    node = await startTestNode(cluster);
    for (const image of Object.values(images)) await node.importImage(image);
    ns = cluster.unique('images');
    await cluster.admin.create(Resources.namespaces, { metadata: { name: ns } });
    cluster.defer(() => cluster.admin.delete(Resources.namespaces, ns));
  }, 20 * 60_000);
  afterAll(() => stopTestNode(cluster, node), 120_000);

  it('runs tenantkit as non-root on a read-only root file system', async () => {
    await cluster.admin.create(
      Resources.pods,
      pod('tenantkit', images.tenantkit.ref, {
        restartPolicy: 'Never',
        containers: [{ name: 'main', args: ['version'] }],
      }),
    );
    const { phase, log } = await finished('tenantkit');
    expect(phase, log).toBe('Succeeded');
    const version = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')).version;
    expect(log).toBe(`tenantkit ${version}\n`);
    await cluster.admin.create(
      Resources.pods,
      pod('node-version', images.tenantkit.ref, {
        restartPolicy: 'Never',
        containers: [{ name: 'main', command: ['node', '--version'] }],
      }),
    );
    const runtime = await finished('node-version');
    expect(runtime.log).toMatch(/^v24\./);
  });

  it("runs Velero's server binary and its restore helper", async () => {
    await cluster.admin.create(
      Resources.pods,
      pod('velero', images.velero.ref, {
        restartPolicy: 'Never',
        containers: [{ name: 'main', args: ['version', '--client-only'] }],
      }),
    );
    const { phase, log } = await finished('velero');
    expect(phase, log).toBe('Succeeded');
    expect(log).toContain('v1.18.3');
  });

  it('runs the bundled PostgreSQL on a volume, with the password, and keeps its data across Pods', async () => {
    await cluster.admin.create(Resources.secrets, {
      metadata: { name: 'db', namespace: ns },
      stringData: { password: 'correct horse' },
    } as KubeObject);
    await cluster.admin.create(Resources.persistentVolumeClaims, {
      metadata: { name: 'db', namespace: ns },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '200Mi' } } },
    } as KubeObject);
    const database = (name: string, args: string[] = []) =>
      pod(name, images.postgres.ref, {
        securityContext: {
          runAsNonRoot: true,
          fsGroup: 65532,
          // As the chart has it: a recursive change would leave PGDATA group-writable, refused by postgres.
          fsGroupChangePolicy: 'OnRootMismatch',
          seccompProfile: { type: 'RuntimeDefault' },
        },
        volumes: [
          { name: 'data', persistentVolumeClaim: { claimName: 'db' } },
          { name: 'password', secret: { secretName: 'db' } },
          { name: 'tmp', emptyDir: {} },
        ],
        containers: [
          {
            name: 'postgres',
            args,
            env: [{ name: 'POSTGRES_PASSWORD_FILE', value: '/etc/db/password' }],
            ports: [{ containerPort: 5432 }],
            readinessProbe: { tcpSocket: { port: 5432 }, periodSeconds: 1 },
            volumeMounts: [
              { name: 'data', mountPath: '/var/lib/postgresql' },
              { name: 'password', mountPath: '/etc/db', readOnly: true },
              { name: 'tmp', mountPath: '/tmp' },
            ],
          },
        ],
      });
    const ready = (name: string) =>
      eventually(
        async () => {
          const p = await cluster.admin.get<Pod>(Resources.pods, name, ns);
          const status = p?.status?.containerStatuses?.[0];
          if (status?.ready) return p?.status?.podIP;
          // Not ready yet: say why (the container's state and its last lines), for the timeout's message.
          const log = await cluster.admin
            .request<string>('GET', `/api/v1/namespaces/${ns}/pods/${name}/log?tailLines=20`, { text: true })
            .catch((err: Error) => err.message);
          throw new Error(`${JSON.stringify(status?.state ?? p?.status)}\n${log}`);
        },
        { what: `database Pod ${name} ready`, timeoutMs: 90_000 },
      );
    const connect = async (host: string, password: string) => {
      const client = new pg.Client({ host, port: 5432, user: 'postgres', password, database: 'postgres' });
      await client.connect();
      return client;
    };

    await cluster.admin.create(Resources.pods, database('db-1'));
    const first = await ready('db-1');
    const client = await connect(first, 'correct horse');
    try {
      const { rows } = await client.query('SHOW server_version');
      expect(rows[0].server_version).toMatch(/^18\./);
      await client.query("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('across Pods')");
    } finally {
      await client.end();
    }
    await expect(connect(first, 'wrong')).rejects.toThrow(/password authentication failed/);

    await cluster.admin.delete(Resources.pods, 'db-1', ns);
    await eventually(async () => (await cluster.admin.get(Resources.pods, 'db-1', ns)) === undefined, {
      what: 'db-1 gone',
      timeoutMs: 30_000,
    });
    // Server settings as the chart passes them (search.database.bundled.settings): `-c name=value`.
    await cluster.admin.create(Resources.pods, database('db-2', ['-c', 'shared_buffers=48MB']));
    const again = await connect(await ready('db-2'), 'correct horse');
    try {
      expect((await again.query('SELECT v FROM kept')).rows).toEqual([{ v: 'across Pods' }]);
      expect((await again.query('SHOW shared_buffers')).rows[0].shared_buffers).toBe('48MB');
    } finally {
      await again.end();
    }
  }, 180_000);
});
