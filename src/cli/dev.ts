// `tenantkit dev`: a local control plane with every tenantkit component, ready to try as admin and as
// two example tenants. Data lives in ./.tenantkit/ and is reused by the next run.
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { NonAdminBackupConfigCrd } from '../api/backup.ts';
import { allCrds } from '../api/index.ts';
import { crdManifest } from '../api/schema.ts';
import { OrganizationCrd, TenantUserCrd } from '../api/tenancy.ts';
import { backupUserClusterRoles } from '../backup/index.ts';
import { ConsoleServer } from '../console/server/server.ts';
import { consoleAssets } from '../console/web/build.ts';
import { ensureVeleroImage } from '../controlplane/images.ts';
import { startControlPlane } from '../controlplane/launch.ts';
import { type LocalNode, nodeUnavailable, startNode } from '../controlplane/node-launch.ts';
import { ensureNodeNetwork, nodeIP } from '../controlplane/node-network.ts';
import { startVelero, type VeleroOptions } from '../controlplane/velero-launch.ts';
import { KubeClient } from '../kube/client.ts';
import { installCrds } from '../kube/crds.ts';
import { Manager } from '../kube/manager.ts';
import { type KubeObject, Resources } from '../kube/resources.ts';
import { type CertificateAuthority, createCA, loadCA } from '../pki/certs.ts';
import { portIsFree } from '../ports.ts';
import { publishEndpoint } from '../search/client/publish.ts';
import { searchUserClusterRoles } from '../search/index.ts';
import { startSearchService } from '../search/service.ts';
import { namespaceCreatorRole, tenancyUserClusterRoles } from '../tenancy/policy/tenant-roles.ts';
import { registerWebhooks } from '../webhook/registration.ts';
import { WebhookServer } from '../webhook/server.ts';
import { type CapabilityContext, capabilities } from './capabilities.ts';
import { devLogger } from './dev-log.ts';

/** Two example tenants: each owns one namespace through their group. */
export const exampleTenants = [
  { name: 'alice', groups: ['team-a'], namespace: 'team-a' },
  { name: 'bob', groups: ['team-b'], namespace: 'team-b' },
];

const systemNamespace = 'tenantkit-system';
const devSearchPort = 4010;
const devConsolePort = 4020;
const webhookConfigName = 'tenantkit-dev';
const fieldManager = 'tenantkit-dev';

async function devCA(dir: string): Promise<CertificateAuthority> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const cert = join(dir, 'ca.crt');
  const key = join(dir, 'ca.key');
  if (existsSync(cert) && existsSync(key)) {
    return loadCA({ certPem: await readFile(cert, 'utf8'), keyPem: await readFile(key, 'utf8') });
  }
  const ca = await createCA('tenantkit-dev-webhook-ca');
  await writeFile(cert, ca.certPem);
  await writeFile(key, ca.keyPem, { mode: 0o600 });
  return ca;
}

/**
 * Two organizations with one member each, their namespaces, and the right to create more namespaces
 * (which the tenancy policies then assign to the creator's organization).
 */
async function seedTenants(client: KubeClient): Promise<void> {
  const apply = { fieldManager, force: true };
  const orgLabel = 'appuio.io/organization';
  await client.apply(Resources.namespaces, { metadata: { name: systemNamespace } }, apply);
  // The chart's tenant roles: create namespaces, and edit (only) those of one's organizations.
  for (const role of tenancyUserClusterRoles()) await client.apply(Resources.clusterRoles, role, apply);
  // Earlier dev clusters gave tenants update/patch on every namespace through this role.
  await client.delete(Resources.clusterRoles, 'tenantkit:namespace-creator');
  for (const tenant of exampleTenants) {
    const org = tenant.groups[0]!;
    await client.apply(
      OrganizationCrd.type,
      {
        metadata: { name: org },
        spec: { displayName: `Team ${org}`, members: { groups: [org] } },
      } as KubeObject,
      apply,
    );
    await client.apply(
      TenantUserCrd.type,
      {
        metadata: { name: tenant.name },
        spec: { username: tenant.name, defaultOrganization: org },
      } as KubeObject,
      apply,
    );
    await client.apply(
      Resources.namespaces,
      { metadata: { name: tenant.namespace, labels: { [orgLabel]: org } } },
      apply,
    );
    await client.delete(Resources.clusterRoleBindings, `tenantkit:namespace-creator:${org}`);
    await client.apply(
      Resources.clusterRoleBindings,
      {
        metadata: { name: `${namespaceCreatorRole}:${org}` },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: namespaceCreatorRole,
        },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: org }],
      } as KubeObject,
      apply,
    );
  }
}

/**
 * Velero (built from testenv/velero on first use) writing to a local S3 store, non-admin backups enabled
 * for its namespace, and the tenant roles that let namespace admins use them. With the local node, Velero
 * runs there as `velero install` runs it, with its node-agent (file-system backups of tenants' volumes);
 * otherwise as a process here (resources only).
 */
async function startDevVelero(
  client: KubeClient,
  kubeconfigPath: string,
  dir: string,
  node: LocalNode | undefined,
  say: (l: string) => void,
) {
  let onNode: VeleroOptions['onNode'];
  if (node) {
    const image = await ensureVeleroImage({ progress: say });
    await node.importImage(image);
    onNode = { image: image.ref, address: node.ip, kubeletDir: node.kubeletDir };
  }
  const velero = await startVelero({
    kubeconfigPath,
    namespace: 'velero',
    dir: join(dir, 'velero'),
    progress: say,
    ...(onNode ? { onNode } : {}),
  });
  for (const role of backupUserClusterRoles()) {
    await client.apply(Resources.clusterRoles, role, { fieldManager, force: true });
  }
  await client.apply(
    NonAdminBackupConfigCrd.type,
    {
      metadata: { name: 'cluster' },
      spec: { nonAdmin: { enable: true, veleroNamespace: velero.namespace } },
    } as KubeObject,
    { fieldManager, force: true },
  );
  return velero;
}

/** The search service on an embedded PostgreSQL in `dir`, collecting this cluster, published for clients. */
async function startDevSearch(
  client: KubeClient,
  ca: CertificateAuthority,
  dir: string,
  signal: AbortSignal,
  logger: Logger,
): Promise<{ url: string; done: Promise<void> }> {
  for (const role of searchUserClusterRoles()) {
    await client.apply(Resources.clusterRoles, role, { fieldManager, force: true });
  }
  const serving = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
  const port = (await portIsFree(devSearchPort)) ? devSearchPort : 0;
  const service = await startSearchService(
    {
      client,
      logger: logger.child({ subsystem: 'search' }),
      embeddedDir: join(dir, 'search-db'),
      certificate: serving,
      port,
      hubCollector: { client },
    },
    signal,
  );
  const url = `https://127.0.0.1:${service.port}`;
  await publishEndpoint(client, url, ca.certPem, fieldManager);
  return { url, done: service.done };
}

export async function runDev(args: string[], stop: AbortController): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      dir: { type: 'string', default: '.tenantkit' },
      'log-to-terminal': { type: 'boolean', default: false },
      'no-node': { type: 'boolean', default: false },
    },
  });
  const dir = resolve(values.dir!);
  await mkdir(dir, { recursive: true });
  const logFile = join(dir, 'tenantkit.log');
  const logger = devLogger(logFile, values['log-to-terminal']!);
  const say = (line: string) => process.stderr.write(`${line}\n`);

  // The local node (real Pods) needs root; without it everything else still runs and Pods stay Pending.
  const noNode = values['no-node'] ? 'tenantkit dev --no-node' : nodeUnavailable();
  if (noNode) say(`no local node (${noNode}): Pods will stay Pending`);
  const network = noNode ? undefined : await ensureNodeNetwork();
  const crds = allCrds.map((d) => crdManifest(d) as unknown as KubeObject);
  const controlPlane = await startControlPlane({
    dir,
    ...(network ? { address: nodeIP } : {}),
    tokenUsers: exampleTenants,
    progress: say,
    beforeControllers: (kubeconfig) => installCrds(KubeClient.fromKubeconfig({ yaml: kubeconfig }), crds),
  });
  const stopControlPlane = async () => {
    await controlPlane.stop();
    await network?.release();
  };
  let node: LocalNode | undefined;
  try {
    const client = KubeClient.fromKubeconfig({ path: controlPlane.adminKubeconfigPath });
    if (!noNode) {
      node = await startNode(
        { server: controlPlane.server, caPem: controlPlane.caPem, issue: controlPlane.issue, admin: client },
        // Organizations apart on the network, as TenancyConfig's networkIsolation promises by default.
        { dir: join(dir, 'node'), progress: say, networkPolicies: true },
      );
    }
    await installCrds(
      client,
      allCrds.map((d) => crdManifest(d) as unknown as KubeObject),
    );
    // A previous run that was killed could not remove its fail-closed webhooks, which would now refuse
    // every namespace write with nobody serving them: they are re-registered below.
    await client.delete(Resources.validatingWebhookConfigurations, webhookConfigName).catch(() => {});
    await client.delete(Resources.mutatingWebhookConfigurations, webhookConfigName).catch(() => {});
    await seedTenants(client);

    // A real Velero with an S3 store in dir/velero, before the controllers (they watch Velero's kinds).
    const velero = await startDevVelero(client, controlPlane.adminKubeconfigPath, dir, node, say);
    const stopVelero = () => velero.stop();

    // One process runs everything here, so there is nobody to elect: controllers start at once.
    const manager = new Manager({ client, logger, component: 'tenantkit.io/dev' });
    const ctx: CapabilityContext = { client, manager, namespace: systemNamespace };
    const ca = await devCA(join(dir, 'webhook-pki'));
    const serving = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
    const server = new WebhookServer({ logger, certificate: serving, ready: () => manager.hasSynced() });
    for (const c of capabilities) {
      c.controllers?.(ctx);
      server.register(...(c.webhooks?.(ctx) ?? []));
    }
    const port = await server.start();
    await registerWebhooks(
      client,
      webhookConfigName,
      server.definitions(),
      { url: `https://127.0.0.1:${port}` },
      ca.certPem,
    );

    const running = manager.start(stop.signal);
    const search = await startDevSearch(client, ca, dir, stop.signal, logger);
    const tenantConsole = await ConsoleServer.start({
      logger: logger.child({ subsystem: 'console' }),
      certificate: serving,
      port: (await portIsFree(devConsolePort)) ? devConsolePort : 0,
      kube: { url: new URL(controlPlane.server), caPem: controlPlane.caPem },
      search: { url: new URL(search.url), caPem: ca.certPem },
      assetsDir: await consoleAssets(),
    });
    const tenants = exampleTenants
      .map(
        (t) =>
          `  ${t.name} (namespace ${t.namespace}): export KUBECONFIG=${controlPlane.tokenKubeconfigPath(t.name)}`,
      )
      .join('\n');
    const volumesHint = node
      ? `\n  (with "defaultVolumesToFsBackup": true in backupSpec, Velero's node-agent on ${node.name} also backs up the Pods' volumes file by file)`
      : '';
    say(`
tenantkit dev is running (${capabilities.length} capabilities, webhooks on https://127.0.0.1:${port},
search on ${search.url}/searchapi/graphql).

Console: ${tenantConsole.url} (its certificate is from ${join(dir, 'webhook-pki', 'ca.crt')}: trust that CA, or accept
         the browser's warning). Sign in as alice with the token this prints:
         kubectl --kubeconfig ${controlPlane.tokenKubeconfigPath('alice')} config view --raw -o jsonpath='{.users[0].user.token}'

Admin:   export KUBECONFIG=${controlPlane.adminKubeconfigPath}
Tenants:
${tenants}

Try first:
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl get pods            # allowed in team-a${
    node
      ? `
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl run hello --image=${node.workloadImage} --restart=Never -- sleep 30   # a real Pod on node ${node.name}; run-once, so it gets the namespace's deadline`
      : ''
  }
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl get pods -n team-b  # forbidden
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl create namespace alice-dev   # joins organization team-a
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl create namespace kube-mine   # denied: reserved name
  KUBECONFIG=${controlPlane.adminKubeconfigPath} kubectl get crds -l app.kubernetes.io/part-of=tenantkit
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} npx tenantkit search 'kind:ConfigMap'   # alice's objects only
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl apply -f - <<<'{"apiVersion":"oadp.openshift.io/v1alpha1","kind":"NonAdminBackup","metadata":{"name":"first"},"spec":{"backupSpec":{}}}'
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl get nab first    # Velero-Phase Completed: a real backup in ${dir}/velero${volumesHint}
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('bob')} npx tenantkit search 'namespace:team-a'   # nothing: bob may not list there

Logs: ${values['log-to-terminal'] ? 'JSON on this terminal' : `JSON in ${logFile}; warnings and errors show here (--log-to-terminal for all of it)`}.
Ctrl-C stops everything; the next run reuses ${dir}.
`);
    await running;
    await search.done;
    await tenantConsole.stop();
    // Fail-closed webhooks must not outlive their server, or the next start could be blocked by them.
    await client.delete(Resources.validatingWebhookConfigurations, webhookConfigName).catch(() => {});
    await client.delete(Resources.mutatingWebhookConfigurations, webhookConfigName).catch(() => {});
    await server.stop();
    await stopVelero();
    say('tenantkit dev: components stopped');
  } finally {
    if (node) {
      const left = await node.stop();
      say(
        left.length
          ? `tenantkit dev: node stopped; could not undo: ${left.join('; ')}`
          : 'tenantkit dev: node stopped, machine as before',
      );
    }
    await stopControlPlane();
    say('tenantkit dev: control plane stopped');
  }
}
