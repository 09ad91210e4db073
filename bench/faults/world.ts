// The world the faults are injected into, made the way a tenant makes it: her namespace created by her in
// her organization, ConfigMaps she will search for, and a ServiceAccount of hers whose token searches
// through the release's search Service (its ClusterIP, as a Pod would call it).
import { request as httpsRequest } from 'node:https';
import { text } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { type NonAdminBackup, NonAdminBackupCrd } from '../../src/crds/backup.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import type { World } from './model.ts';

export interface WorldOptions {
  admin: KubeClient;
  tenant: KubeClient;
  organization: string;
  organizationLabel: string;
  release: string;
  namespace: string;
  veleroNamespace: string;
  /** The tenant's namespace to make (a fresh name). */
  home: string;
  say(line: string): void;
}

const secretData = async (admin: KubeClient, name: string, namespace: string) =>
  (await admin.get<KubeObject & { data: Record<string, string> }>(Resources.secrets, name, namespace))
    ?.data ?? {};

export async function makeWorld(o: WorldOptions): Promise<World> {
  const { admin, tenant, home } = o;
  await tenant.create(Resources.namespaces, {
    metadata: { name: home, labels: { [o.organizationLabel]: o.organization } },
  });
  // Her rights in it come from her organization's binding, made by the controllers. The binding existing is
  // not enough: kube-apiserver's RBAC authorizer sees it through its own watch a moment later. So ask the
  // authorizer itself, as her, until it says yes.
  for (let waited = 0; ; waited += 250) {
    const review = await tenant.create<KubeObject & { status?: { allowed?: boolean } }>(
      Resources.selfSubjectAccessReviews,
      {
        metadata: {},
        spec: { resourceAttributes: { namespace: home, verb: 'create', resource: 'configmaps' } },
      } as KubeObject,
    );
    if (review.status?.allowed) break;
    if (waited > 60_000) throw new Error(`namespace ${home} not bound to ${o.organization} after 60 s`);
    await sleep(250);
  }
  const mine = ['alpha', 'beta', 'gamma'];
  for (const name of mine) {
    await tenant.create(Resources.configMaps, { metadata: { name, namespace: home }, data: { k: name } });
  }
  // Every namespace also gets kube-root-ca.crt (kube-controller-manager's): she may list it too.
  let known: string[] = [];
  for (let waited = 0; !known.includes('kube-root-ca.crt'); waited += 250) {
    if (waited > 30_000) throw new Error(`no kube-root-ca.crt in ${home} after 30 s`);
    await sleep(250);
    known = (await admin.list(Resources.configMaps, { namespace: home })).items.map((c) => c.metadata.name!);
  }
  // Her reader: a ServiceAccount of her namespace with `view` there (which includes search's use).
  await tenant.create(Resources.serviceAccounts, { metadata: { name: 'searcher', namespace: home } });
  await tenant.create(Resources.roleBindings, {
    metadata: { name: 'searcher-view', namespace: home },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
    subjects: [{ kind: 'ServiceAccount', name: 'searcher', namespace: home }],
  } as KubeObject);
  const token = (
    await tenant.request<{ status: { token: string } }>(
      'POST',
      `/api/v1/namespaces/${home}/serviceaccounts/searcher/token`,
      {
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds: 24 * 3600 },
        },
      },
    )
  ).status.token;
  const service = await admin.get<KubeObject & { spec: { clusterIP: string } }>(
    Resources.services,
    `${o.release}-search`,
    o.namespace,
  );
  const ca = Buffer.from(
    (await secretData(admin, `${o.release}-search-tls`, o.namespace))['ca.crt'] ?? '',
    'base64',
  );
  const search = (query: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(
        `https://${service?.spec.clusterIP}/searchapi/graphql`,
        {
          method: 'POST',
          ca,
          servername: `${o.release}-search.${o.namespace}.svc`,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          timeout: 10_000,
        },
        (res) => {
          text(res).then((body) => resolve({ status: res.statusCode ?? 0, body }), reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
      req.on('error', reject);
      req.end(JSON.stringify({ query }));
    });
  return {
    admin,
    tenant,
    organization: o.organization,
    organizationLabel: o.organizationLabel,
    home,
    known,
    release: o.release,
    namespace: o.namespace,
    veleroNamespace: o.veleroNamespace,
    search,
    say: o.say,
  };
}

/**
 * A backup of hers that her restores restore from, made the way she makes any (a NonAdminBackup) and
 * waited for until Velero completed it. By default her ConfigMaps alone (World.baseBackup); `volumes`
 * makes it of her store instead, its claim's files copied by Velero's node-agent (World.volumeBackup).
 */
export async function makeBaseBackup(world: World, volumes = false, timeoutMs = 180_000): Promise<string> {
  const name = `${world.home}-${volumes ? 'volume' : 'base'}`;
  const backupSpec = volumes
    ? {
        includedResources: ['deployments', 'replicasets', 'pods', 'persistentvolumeclaims'],
        defaultVolumesToFsBackup: true,
      }
    : { includedResources: ['configmaps'] };
  await world.tenant.create(NonAdminBackupCrd.type, {
    metadata: { name, namespace: world.home },
    spec: { backupSpec },
  } as KubeObject);
  for (const deadline = Date.now() + timeoutMs; ; await sleep(500)) {
    const nab = await world.tenant.get<NonAdminBackup>(NonAdminBackupCrd.type, name, world.home);
    const phase = nab?.status?.veleroBackup?.status?.phase;
    if (phase === 'Completed') return name;
    if (Date.now() > deadline || (phase && /Failed/.test(phase))) {
      throw new Error(`the base backup ${name} did not complete (Velero phase ${phase ?? 'none'})`);
    }
  }
}
