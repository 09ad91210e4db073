// The tenantkit command. Run modes: `dev` (everything on a local control plane), `controllers`,
// `webhooks`, `search api`, `console`; tools: `crds`, `check`, `controlplane build`, `images build`, `version`.
// Each command loads only its own modules (a Pod's memory holds what it runs, not the whole CLI). The
// capabilities' own commands (backup, restore, search, namespaces) are looked up in the registry, whose
// Capability objects are declarations only.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { capabilities, capabilityCommand } from '../capabilities.ts';
import { shutdownSignal } from './signals.ts';

/**
 * Loads a module of the development environment (devenv/: the local control plane, node, Velero and the
 * image builds), which `dev`, `controlplane build` and `images build` compose. The image has no devenv/ (its
 * Dockerfile copies src/ alone), so it is loaded by path, not imported: the image's compile does not look
 * for it, and a Pod asked to run `dev` says what is missing.
 */
async function devenv<T>(module: string): Promise<T> {
  const url = new URL(
    `../../devenv/${module}${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`,
    import.meta.url,
  );
  if (!existsSync(fileURLToPath(url)))
    throw new Error(
      `this command needs tenantkit's development environment (devenv/${module}), which this installation ` +
        'does not have (the image carries only the product): run it from a checkout or the npm package',
    );
  return (await import(url.href)) as T;
}

type Progress = (line: string) => void;
interface ImageBuilds {
  ensureTenantkitImage(o: { progress: Progress }): Promise<{ ref: string; digest: string; archive: string }>;
  ensureVeleroImage(o: { progress: Progress }): Promise<{ ref: string; digest: string; archive: string }>;
  ensurePostgresImage(o: { progress: Progress }): Promise<{ ref: string; digest: string; archive: string }>;
}

const capabilityUsage = capabilities
  .flatMap((c) => Object.values(c.commands ?? {}).map((command) => command.usage))
  .join('\n');

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
${capabilityUsage}
  tenantkit console --cert-dir DIR | --tls-secret NAME [--service S] [--service-account SA] [--port 8443]
                    [--kube-server URL --kube-ca FILE] [--search-url URL --search-ca FILE]
                                            serve the tenant console (the page, and the API calls it makes as the
                                            signed-in user); in a Pod the API server is the in-cluster one
  tenantkit check --ca-file FILE URL...     GET each https URL trusting only that CA; exit 1 unless all answer 200
                                            (what the chart's \`helm test\` runs)
  tenantkit crds                            print tenantkit's CustomResourceDefinitions as YAML
  tenantkit controlplane build              build the local control plane binary (done by dev on first use)
  tenantkit images build                    build the tenantkit, Velero and PostgreSQL images without Docker
                                            (docker archives in ~/.cache/tenantkit/images; from a checkout)
  tenantkit version
`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const ofCapability = command === undefined ? undefined : capabilityCommand(command);
  if (ofCapability) return ofCapability.run(rest, () => shutdownSignal().signal);
  switch (command) {
    case 'dev':
      return (
        await devenv<{ runDev(args: string[], stop: AbortController): Promise<void> }>('dev/command')
      ).runDev(rest, shutdownSignal());
    case 'controllers':
      return (await import('./controllers.ts')).controllers(rest);
    case 'webhooks':
      return (await import('./webhooks.ts')).webhooks(rest);
    case 'console':
      return (await import('./console.ts')).consoleCommand(rest);
    case 'check':
      return (await import('./check.ts')).checkCommand(rest);
    case 'crds': {
      const [{ stringify }, { allCrds }, { crdManifest }] = await Promise.all([
        import('yaml'),
        import('../crds/index.ts'),
        import('../crds/schema.ts'),
      ]);
      for (const def of allCrds)
        process.stdout.write(`---\n${stringify(crdManifest(def), { lineWidth: 0 })}`);
      return;
    }
    case 'controlplane': {
      if (rest[0] !== 'build') break;
      const { ensureControlPlaneBinary } = await devenv<{
        ensureControlPlaneBinary(progress: Progress): Promise<string>;
      }>('controlplane/build');
      console.log(await ensureControlPlaneBinary((line) => console.log(line)));
      return;
    }
    case 'images': {
      if (rest[0] !== 'build') break;
      const { ensurePostgresImage, ensureTenantkitImage, ensureVeleroImage } =
        await devenv<ImageBuilds>('images/build');
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
