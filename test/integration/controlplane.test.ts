// The control plane is real: RBAC, authentication (certificates, tokens, service-account tokens) and the
// controller-manager loops behave as in a production cluster.
import { afterAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';

const cluster = await TestCluster.connect();
afterAll(() => cluster.cleanup());

async function status(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (err) {
    if (err instanceof ApiError) return err.status;
    throw err;
  }
}

const grantView = (namespace: string, kind: 'User' | 'Group', name: string) =>
  cluster.grant({ kind, name }, { clusterRole: 'view' }, namespace);

describe('control plane', () => {
  it('reports the Kubernetes release it was built from', async () => {
    const version = await cluster.admin.request<{ gitVersion: string; major: string }>('GET', '/version');
    expect(version.gitVersion).toMatch(/^v1\.35\.\d+$/);
    expect(version.major).toBe('1');
  });

  it('forbids a non-admin user without bindings and allows them after a RoleBinding to view', async () => {
    const ns = await cluster.namespace();
    const alice = await cluster.user('alice', ['tenants']);
    const list = () => alice.list(Resources.pods, { namespace: ns });
    expect(await status(list())).toBe(403);
    await grantView(ns, 'User', 'alice');
    await eventually(async () => (await status(list())) === 200, { what: 'alice can list pods' });
    // The binding is namespaced: another namespace stays closed.
    const other = await cluster.namespace();
    expect(await status(alice.list(Resources.pods, { namespace: other }))).toBe(403);
  });

  it('authenticates static-token users with their groups', async () => {
    const ns = await cluster.namespace();
    const tenant = cluster.tokenUser('token-tenant');
    expect(await status(tenant.list(Resources.configMaps, { namespace: ns }))).toBe(403);
    await grantView(ns, 'Group', 'tenantkit:tenants');
    await eventually(
      async () => (await status(tenant.list(Resources.configMaps, { namespace: ns }))) === 200,
      {
        what: 'group binding takes effect',
      },
    );
  });

  it('issues service-account tokens (TokenRequest) that TokenReview maps back to the account', async () => {
    const ns = await cluster.namespace();
    // The serviceaccount controller (kube-controller-manager) creates "default" in every namespace.
    await eventually(() => cluster.admin.get(Resources.serviceAccounts, 'default', ns), {
      what: 'default service account',
    });
    // The harness asks for a token with TokenRequest, as a workload would get one.
    const { client: sa, token } = await cluster.serviceAccount(ns, 'default');
    const review = await cluster.admin.create<
      KubeObject & { status?: { authenticated?: boolean; user?: { username: string; groups: string[] } } }
    >(Resources.tokenReviews, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      metadata: {},
      spec: { token },
    } as KubeObject);
    expect(review.status?.authenticated).toBe(true);
    expect(review.status?.user?.username).toBe(`system:serviceaccount:${ns}:default`);
    expect(review.status?.user?.groups).toContain(`system:serviceaccounts:${ns}`);

    // The token works as a credential, and RBAC applies to it like to any user.
    expect(await status(sa.list(Resources.secrets, { namespace: ns }))).toBe(403);
  });

  it('finishes deleting a namespace and its contents (namespace controller)', async () => {
    const ns = cluster.unique('gone');
    await cluster.admin.create(Resources.namespaces, { metadata: { name: ns } });
    await cluster.admin.create(Resources.configMaps, { metadata: { name: 'x', namespace: ns } });
    await cluster.admin.delete(Resources.namespaces, ns);
    await eventually(async () => (await cluster.admin.get(Resources.namespaces, ns)) === undefined, {
      what: 'namespace removed',
      timeoutMs: 30_000,
    });
  });
});
