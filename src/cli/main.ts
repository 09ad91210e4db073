// The tenantkit command. Run modes: `dev` (everything on a local control plane), `controllers`,
// `webhooks`; tools: `crds`, `controlplane build`, `images build`, `version`.
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { allCrds } from '../api/index.ts';
import { crdManifest } from '../api/schema.ts';
import { ensureControlPlaneBinary } from '../controlplane/build.ts';
import { ensurePostgresImage, ensureTenantkitImage, ensureVeleroImage } from '../controlplane/images.ts';
import { KubeClient } from '../kube/client.ts';
import { startHealthServer } from '../kube/health.ts';
import { createLogger } from '../kube/log.ts';
import { LeadershipLostError, Manager } from '../kube/manager.ts';
import { SelfManagedTls } from '../webhook/self-managed-tls.ts';
import { WebhookServer } from '../webhook/server.ts';
import { backupCommand } from './backup.ts';
import { type CapabilityContext, selectCapabilities } from './capabilities.ts';
import { checkCommand } from './check.ts';
import { runDev } from './dev.ts';
import { restoreCommand } from './restore.ts';
import { searchCommand } from './search.ts';

const usage = `tenantkit: safe self-service multi-tenancy for a shared Kubernetes cluster

Usage:
  tenantkit dev [--dir .tenantkit] [--log-to-terminal]
                                            run a local control plane with every tenantkit component
                                            (JSON logs in <dir>/tenantkit.log; warnings and errors on the terminal)
  tenantkit controllers [--namespace NS] [--metrics-port 8080] [--no-leader-elect] [--capabilities a,b]
                                            run the controllers (leader-elected) against $KUBECONFIG or in-cluster
  tenantkit webhooks --cert-dir DIR | --tls-secret NAME [--service S] [--webhook-configuration W]
                    [--service-account SA] [--port 9443] [--namespace NS] [--capabilities a,b]
                                            serve the admission webhooks: tls.crt/tls.key in DIR (reloaded on
                                            change), or a certificate made, rotated and kept in Secret NAME (owned
                                            by ServiceAccount SA), its CA injected into webhook configuration W
                                            (for Service S)
  tenantkit search QUERY [-o table|json|yaml|name]
                                            search everything you may list, e.g. 'kind:Pod name:web*'
  tenantkit search api|verify-access ...    run the search service; see tenantkit search --help
  tenantkit backup create|get|describe|logs|delete ... [-n NS]
                                            back up your namespace (NonAdminBackups); see tenantkit backup --help
  tenantkit restore create|get|describe|logs|delete ... [-n NS]
                                            restore it from those backups; see tenantkit restore --help
  tenantkit check --ca-file FILE URL...     GET each https URL trusting only that CA; exit 1 unless all answer 200
                                            (what the chart's \`helm test\` runs)
  tenantkit crds                            print tenantkit's CustomResourceDefinitions as YAML
  tenantkit controlplane build              build the local control plane binary (done by dev on first use)
  tenantkit images build                    build the tenantkit, Velero and PostgreSQL images without Docker
                                            (docker archives in ~/.cache/tenantkit/images; from a checkout)
  tenantkit version
`;

/** Resolves on SIGINT/SIGTERM, aborting the returned signal. */
function shutdownSignal(): AbortController {
  const stop = new AbortController();
  const onSignal = (sig: string) => {
    if (stop.signal.aborted) {
      process.stderr.write(`second ${sig}: exiting now\n`);
      process.exit(130);
    }
    stop.abort();
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  return stop;
}

async function controllers(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      namespace: { type: 'string' },
      'metrics-port': { type: 'string', default: '8080' },
      // Only for a single replica (debugging, tests): without the lease two replicas would both write.
      'leader-elect': { type: 'boolean', default: true },
      capabilities: { type: 'string' },
    },
    allowNegative: true,
  });
  const namespace = values.namespace ?? process.env.POD_NAMESPACE ?? 'tenantkit-system';
  const logger = createLogger('tenantkit-controllers');
  const client = KubeClient.fromDefault();
  const manager = new Manager({
    client,
    logger,
    component: 'tenantkit.io/controllers',
    ...(values['leader-elect'] ? { leaderElection: { namespace, name: 'tenantkit-controllers' } } : {}),
  });
  const ctx: CapabilityContext = { client, manager, namespace };
  for (const c of selectCapabilities(values.capabilities)) c.controllers?.(ctx);
  // Ready once the caches are filled; standbys are ready too (they take over with warm caches).
  const health = await startHealthServer(Number(values['metrics-port']), () => manager.hasSynced());
  const stop = shutdownSignal();
  try {
    await manager.start(stop.signal);
  } catch (err) {
    if (err instanceof LeadershipLostError) logger.error(err.message);
    throw err;
  } finally {
    health.close();
  }
}

async function webhooks(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      'cert-dir': { type: 'string' },
      port: { type: 'string', default: '9443' },
      namespace: { type: 'string' },
      capabilities: { type: 'string' },
      'tls-secret': { type: 'string' },
      service: { type: 'string', default: 'tenantkit-webhooks' },
      'webhook-configuration': { type: 'string', default: 'tenantkit' },
      'service-account': { type: 'string' },
    },
  });
  const selfManaged = values['tls-secret'];
  if (!values['cert-dir'] && !selfManaged) {
    throw new Error(
      '--cert-dir (a directory with tls.crt and tls.key) or --tls-secret (a Secret tenantkit keeps its own certificate in) is required',
    );
  }
  const namespace = values.namespace ?? process.env.POD_NAMESPACE ?? 'tenantkit-system';
  const logger = createLogger('tenantkit-webhooks');
  const client = KubeClient.fromDefault();
  const stop = shutdownSignal();
  // With --tls-secret the server makes, rotates and publishes its own certificate before it listens.
  const tls = selfManaged
    ? new SelfManagedTls({
        client,
        logger,
        namespace,
        secretName: selfManaged,
        dnsNames: [`${values.service}.${namespace}.svc`, `${values.service}.${namespace}.svc.cluster.local`],
        validatingWebhookConfigurations: [values['webhook-configuration']!],
        mutatingWebhookConfigurations: [values['webhook-configuration']!],
        ...(values['service-account'] ? { ownerServiceAccount: values['service-account'] } : {}),
      })
    : undefined;
  // Webhooks read caches but never reconcile, so every replica serves: no leader election here.
  const manager = new Manager({ client, logger, component: 'tenantkit.io/webhooks' });
  const ctx: CapabilityContext = { client, manager, namespace };
  const server = new WebhookServer({
    logger,
    host: '0.0.0.0',
    port: Number(values.port),
    certificate: tls
      ? await tls.reconcile()
      : { certFile: `${values['cert-dir']}/tls.crt`, keyFile: `${values['cert-dir']}/tls.key` },
    ready: () => manager.hasSynced(),
    // kube-apiserver keeps connections to each replica: let them move before this one closes.
    drainMs: 3000,
  });
  for (const c of selectCapabilities(values.capabilities)) server.register(...(c.webhooks?.(ctx) ?? []));
  await server.start();
  const upkeep = tls?.run((pair) => server.setCertificate(pair), stop.signal);
  await manager.start(stop.signal);
  await upkeep;
  await server.stop();
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'dev':
      return runDev(rest, shutdownSignal());
    case 'controllers':
      return controllers(rest);
    case 'webhooks':
      return webhooks(rest);
    case 'search':
      return searchCommand(rest, () => shutdownSignal().signal);
    case 'backup':
      return backupCommand(rest);
    case 'restore':
      return restoreCommand(rest);
    case 'check':
      return checkCommand(rest);
    case 'crds':
      for (const def of allCrds)
        process.stdout.write(`---\n${stringify(crdManifest(def), { lineWidth: 0 })}`);
      return;
    case 'controlplane':
      if (rest[0] !== 'build') break;
      console.log(await ensureControlPlaneBinary((line) => console.log(line)));
      return;
    case 'images': {
      if (rest[0] !== 'build') break;
      const progress = (line: string) => process.stderr.write(`${line}\n`);
      for (const build of [ensureTenantkitImage, ensureVeleroImage, ensurePostgresImage]) {
        const image = await build({ progress });
        console.log(`${image.ref}@${image.digest}\t${image.archive}`);
      }
      return;
    }
    case 'version':
      console.log('tenantkit 0.1.0');
      return;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(usage);
      return;
  }
  process.stderr.write(`unknown command: ${argv.join(' ')}\n\n${usage}`);
  process.exitCode = 2;
}

// `tenantkit crds | head` closes the pipe early; that is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`tenantkit: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
