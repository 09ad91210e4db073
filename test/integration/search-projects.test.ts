// The Projects API (project.openshift.io/v1) through kube-apiserver's aggregation layer, as tenants use it
// with their own credentials: a control plane of its own (the shared one serves stand-in Project CRDs of
// the same group) with a front proxy, an APIService pointing at the search service's Projects listener,
// and tenants who list, get and watch exactly the namespaces RBAC lets them use. The port itself refuses
// anyone but kube-apiserver's front proxy, whatever user headers they send.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../devenv/controlplane/launch.ts';
import { nodeIP } from '../../devenv/node/network.ts';
import { type ApiError, KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources, resourceType } from '../../src/kube/resources.ts';
import type { SearchService } from '../../src/search/components/service.ts';
import { eventually } from '../harness/cluster.ts';
import { nodeSkipReason } from '../harness/node.ts';
import { type ProjectsCluster, startProjectsCluster } from '../harness/projects.ts';

const projectsPath = '/apis/project.openshift.io/v1/projects';
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** Node 24 runs the .ts sources: the one running the tests, or the project's own. */
const node24 =
  Number(process.versions.node.split('.')[0]) >= 24
    ? process.execPath
    : join(repo, 'node_modules/node/bin/node');
const apply = { fieldManager: 'projects-test', force: true };

// The aggregation layer reaches the listener by an endpoint address, which may not be loopback: the
// node's bridge address, there only where the local node can run.
describe.skipIf(nodeSkipReason)('projects through the aggregation layer', () => {
  let pc: ProjectsCluster;
  let dir = '';
  let cp: ControlPlane;
  let admin: KubeClient;
  let service: SearchService;
  let alice: KubeClient;
  let bob: KubeClient;

  const names = (list: { items?: KubeObject[] }) => (list.items ?? []).map((p) => p.metadata.name).sort();
  const bind = (namespace: string, user: string, role: string) =>
    admin.apply(
      Resources.roleBindings,
      {
        metadata: { name: `${user}-${role}`, namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      } as KubeObject,
      apply,
    );

  beforeAll(async () => {
    pc = await startProjectsCluster();
    ({ dir, cp, admin, service } = pc);
    for (const ns of ['alpha', 'beta', 'gamma'])
      await admin.apply(Resources.namespaces, { metadata: { name: ns } }, apply);
    await bind('alpha', 'alice', 'admin');
    await bind('beta', 'alice', 'view');
    await bind('gamma', 'bob', 'edit');
    alice = KubeClient.fromKubeconfig({ yaml: await cp.userKubeconfig('alice', ['tenants']) });
    bob = KubeClient.fromKubeconfig({ yaml: await cp.userKubeconfig('bob', ['tenants']) });
    await eventually(
      async () => {
        const list = await alice.request<{ items: KubeObject[] }>('GET', projectsPath);
        if (names(list).join() !== 'alpha,beta') throw new Error(JSON.stringify(names(list)));
        return true;
      },
      { timeoutMs: 60_000, what: 'the Projects API available through kube-apiserver' },
    );
  }, 180_000);

  afterAll(async () => {
    await pc?.stop();
  });

  it('lists, gets and prints as a table exactly the namespaces each tenant may use', async () => {
    const list = await alice.request<{ kind: string; items: KubeObject[] }>('GET', projectsPath);
    expect(list.kind).toBe('ProjectList');
    expect(names(list)).toEqual(['alpha', 'beta']);
    expect(names(await bob.request('GET', projectsPath))).toEqual(['gamma']);
    const one = await alice.request<KubeObject & { status: { phase: string } }>(
      'GET',
      `${projectsPath}/alpha`,
    );
    expect(one.status.phase).toBe('Active');
    // Another tenant's namespace, and one that does not exist, are the same: not found.
    for (const name of ['gamma', 'nothing-here']) {
      const err = await alice.request('GET', `${projectsPath}/${name}`).catch((e: ApiError) => e);
      expect((err as ApiError).status).toBe(404);
    }
    // A label selector narrows the list; one whose key is __proto__ is refused as kube-apiserver refuses
    // it (it was once dropped as it was read, and the whole list came back).
    const selected = (selector: string) =>
      alice.request<{ items: KubeObject[] }>(
        'GET',
        `${projectsPath}?labelSelector=${encodeURIComponent(selector)}`,
      );
    expect(names(await selected('kubernetes.io/metadata.name=beta'))).toEqual(['beta']);
    const refused = await selected('__proto__=x').catch((e: ApiError) => e);
    expect((refused as ApiError).status).toBe(400);
    expect((refused as ApiError).message).toMatch(/key "__proto__" is not a label key/);
    expect(names(await selected('constructor=x'))).toEqual([]);
    // kubectl get projects asks for a Table.
    const table = await alice
      .withHeaders({ Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' })
      .request<{ kind: string; columnDefinitions: { name: string }[]; rows: { cells: string[] }[] }>(
        'GET',
        projectsPath,
      );
    expect(table.kind).toBe('Table');
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(['Name', 'Display Name', 'Status', 'Age']);
    expect(table.rows.map((r) => r.cells[0])).toEqual(['alpha', 'beta']);
    // Discovery lists the resource, so kubectl knows `projects`.
    const discovery = await alice.request<{ resources: { name: string; verbs: string[] }[] }>(
      'GET',
      '/apis/project.openshift.io/v1',
    );
    expect(discovery.resources[0]).toMatchObject({ name: 'projects', verbs: ['get', 'list', 'watch'] });
  });

  it('lists them with `tenantkit namespaces`, as the kubeconfig user', async () => {
    const kubeconfig = join(dir, 'alice.kubeconfig');
    await writeFile(kubeconfig, await cp.userKubeconfig('alice', ['tenants']), { mode: 0o600 });
    const run = (...args: string[]) =>
      promisify(execFile)(node24, [join(repo, 'src/cli/main.ts'), 'namespaces', ...args], {
        cwd: repo,
        env: { ...process.env, KUBECONFIG: kubeconfig },
      });
    const table = (await run()).stdout.split('\n');
    expect(table[0]).toMatch(/^NAME\s+STATUS\s+AGE$/);
    expect(table.slice(1, 3).map((l) => l.split(/\s+/)[0])).toEqual(['alpha', 'beta']);
    expect((await run('-o', 'name')).stdout).toBe('namespace/alpha\nnamespace/beta\n');
  });

  it('tells a watching tenant of a namespace they are given and of one taken away, within a second', async () => {
    const events: { type: string; name: string; at: number }[] = [];
    const aborted = new AbortController();
    const watching = alice
      .watch<KubeObject>(
        resourceType('project.openshift.io', 'v1', 'projects', 'Project', false),
        { signal: aborted.signal },
        (event) => events.push({ type: event.type, name: event.object.metadata.name!, at: Date.now() }),
      )
      .catch(() => {});
    await eventually(() => events.some((e) => e.name === 'alpha'), { what: 'the watch started' });
    await admin.apply(Resources.namespaces, { metadata: { name: 'delta' } }, apply);
    const given = Date.now();
    await bind('delta', 'alice', 'edit');
    const added = await eventually(() => events.find((e) => e.type === 'ADDED' && e.name === 'delta'), {
      what: 'delta ADDED',
    });
    const taken = Date.now();
    await admin.delete(Resources.roleBindings, 'alice-edit', 'delta');
    const removed = await eventually(() => events.find((e) => e.type === 'DELETED' && e.name === 'delta'), {
      what: 'delta DELETED',
    });
    console.log(
      `[figures] projects watch: a namespace given reached the watch in ${added.at - given} ms, taken away in ${removed.at - taken} ms`,
    );
    expect(events.some((e) => e.name === 'gamma')).toBe(false);
    aborted.abort();
    await watching;
  });

  it("refuses anyone but kube-apiserver's front proxy at the port, whatever headers they send", async () => {
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: nodeIP,
          port: service.projects!.port,
          path: projectsPath,
          rejectUnauthorized: false,
          headers: { 'X-Remote-User': 'system:admin', 'X-Remote-Group': 'system:masters' },
        },
        (res) => {
          let body = '';
          res.on('data', (c) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(401);
    expect(answer.body).toContain("only kube-apiserver's front proxy may call this API");
  });
});
