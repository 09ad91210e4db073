// The Projects API behind a real aggregation layer, for tests and benchmarks: a control plane of its own
// with a front proxy (the shared test control plane serves stand-in Project CRDs of the same group),
// search's service as a user with the chart's rules and a self-managed certificate, and the APIService,
// Service and endpoints the chart would make (no kube-proxy: kube-apiserver routes to the endpoint, the
// node's bridge address, so this needs the machine the local node runs on).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ControlPlane, startControlPlane } from '../../devenv/controlplane/launch.ts';
import { nodeIP } from '../../devenv/node/network.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { type KubeObject, Resources, resourceType } from '../../src/kube/resources.ts';
import { ProjectsReaderClusterRoleName } from '../../src/search/access/search-api.ts';
import { type SearchService, startSearchService } from '../../src/search/components/service.ts';
import { searchServiceRules, searchUserClusterRoles } from '../../src/search/index.ts';
import { createCA } from '../../src/serving/certs.ts';
import { SelfManagedTls } from '../../src/serving/self-managed-tls.ts';
import { startTestDatabase } from './postgres.ts';

const endpoints = resourceType('', 'v1', 'endpoints', 'Endpoints');
const endpointSlices = resourceType('discovery.k8s.io', 'v1', 'endpointslices', 'EndpointSlice');
const apply = { fieldManager: 'projects-harness', force: true };

export interface ProjectsCluster {
  dir: string;
  cp: ControlPlane;
  admin: KubeClient;
  service: SearchService;
  /** A client of `user` in `groups` (a client certificate). */
  user(name: string, groups?: string[]): Promise<KubeClient>;
  stop(): Promise<void>;
}

export async function startProjectsCluster(
  options: { apiserverFlags?: string[]; progress?: (line: string) => void } = {},
): Promise<ProjectsCluster> {
  const stop = new AbortController();
  const dir = await mkdtemp(join(tmpdir(), 'tenantkit-projects-'));
  // The front proxy: its own CA and the client certificate kube-apiserver proxies with.
  const proxyCa = await createCA('front-proxy-ca');
  const proxyClient = await proxyCa.issue({ commonName: 'front-proxy-client', usage: 'client' });
  await writeFile(join(dir, 'front-proxy-ca.crt'), proxyCa.certPem);
  await writeFile(join(dir, 'front-proxy-client.crt'), proxyClient.certPem);
  await writeFile(join(dir, 'front-proxy-client.key'), proxyClient.keyPem, { mode: 0o600 });
  const cp = await startControlPlane({
    dir: join(dir, 'cp'),
    address: nodeIP,
    unsafeNoFsync: true,
    ...(options.progress ? { progress: options.progress } : {}),
    apiserverFlags: [
      `--requestheader-client-ca-file=${join(dir, 'front-proxy-ca.crt')}`,
      '--requestheader-allowed-names=front-proxy-client',
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${join(dir, 'front-proxy-client.crt')}`,
      `--proxy-client-key-file=${join(dir, 'front-proxy-client.key')}`,
      '--enable-aggregator-routing=true',
      ...(options.apiserverFlags ?? []),
    ],
  });
  const admin = KubeClient.fromKubeconfig({ path: cp.adminKubeconfigPath });
  const binding = (
    name: string,
    roleRef: { kind: string; name: string },
    subject: { kind: string; name: string },
  ) => ({
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...roleRef },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', ...subject }],
  });
  // search runs as its own user with the chart's rules (and the reader of the front-proxy settings).
  await admin.apply(
    Resources.clusterRoles,
    { metadata: { name: 'search' }, rules: searchServiceRules } as KubeObject,
    apply,
  );
  await admin.apply(
    Resources.clusterRoleBindings,
    binding(
      'search',
      { kind: 'ClusterRole', name: 'search' },
      { kind: 'User', name: 'tenantkit-search' },
    ) as KubeObject,
    apply,
  );
  const reader = binding(
    'search-auth-reader',
    { kind: 'Role', name: 'extension-apiserver-authentication-reader' },
    { kind: 'User', name: 'tenantkit-search' },
  );
  await admin.apply(
    Resources.roleBindings,
    { ...reader, metadata: { ...reader.metadata, namespace: 'kube-system' } } as KubeObject,
    apply,
  );
  const searchClient = KubeClient.fromKubeconfig({ yaml: await cp.userKubeconfig('tenantkit-search') });
  // The chart's default: a self-managed certificate, whose CA the server puts into the APIService.
  await admin.apply(Resources.namespaces, { metadata: { name: 'tenantkit-system' } }, apply);
  const tls = new SelfManagedTls({
    client: admin,
    logger: silentLogger,
    namespace: 'tenantkit-system',
    secretName: 'projects-tls',
    dnsNames: ['projects.tenantkit-system.svc'],
    apiServices: ['v1.project.openshift.io'],
  });
  const serving = await tls.reconcile();
  const db = await startTestDatabase();
  const service = await startSearchService(
    {
      client: searchClient,
      logger: silentLogger,
      databaseUrl: db.url,
      certificate: serving,
      host: nodeIP,
      projectsPort: 0,
    },
    stop.signal,
  );
  const port = service.projects!.port;
  const at = { name: 'projects', namespace: 'tenantkit-system' };
  await admin.apply(
    Resources.services,
    { metadata: at, spec: { ports: [{ port, targetPort: port }] } } as KubeObject,
    apply,
  );
  await admin.apply(
    endpoints,
    { metadata: at, subsets: [{ addresses: [{ ip: nodeIP }], ports: [{ port }] }] } as KubeObject,
    apply,
  );
  await admin.apply(
    endpointSlices,
    {
      metadata: { ...at, labels: { 'kubernetes.io/service-name': 'projects' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [nodeIP], conditions: { ready: true } }],
      ports: [{ port, protocol: 'TCP' }],
    } as KubeObject,
    apply,
  );
  await admin.apply(
    Resources.apiServices,
    {
      metadata: { name: 'v1.project.openshift.io' },
      spec: {
        group: 'project.openshift.io',
        version: 'v1',
        service: { ...at, port },
        groupPriorityMinimum: 1000,
        versionPriority: 15,
      },
    } as KubeObject,
    apply,
  );
  // The server's certificate renewal puts its CA into the APIService (no caBundle until then).
  await tls.reconcile();
  // Every authenticated user may ask for projects, as on OpenShift; the answer is theirs alone.
  for (const role of searchUserClusterRoles()) await admin.apply(Resources.clusterRoles, role, apply);
  await admin.apply(
    Resources.clusterRoleBindings,
    binding(
      'projects-readers',
      { kind: 'ClusterRole', name: ProjectsReaderClusterRoleName },
      { kind: 'Group', name: 'system:authenticated' },
    ) as KubeObject,
    apply,
  );
  return {
    dir,
    cp,
    admin,
    service,
    user: async (name, groups = []) =>
      KubeClient.fromKubeconfig({ yaml: await cp.userKubeconfig(name, groups) }),
    async stop() {
      stop.abort();
      await service.done;
      await cp.stop();
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
