// Builds the helm CLI from devenv/go/helm/ (its own Go module: Helm v3.22 pins Kubernetes libraries v0.37,
// which cannot share a binary with the control plane's v0.35), cached like the control plane in
// ~/.cache/tenantkit/helm-<source hash>. Tests and `tenantkit dev` install tenantkit's chart with it.
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  buildOnce,
  cacheDir,
  goBuild,
  goDir,
  type Progress,
  requiredVersion,
  sourceHash,
} from '../controlplane/build.ts';

export const helmModuleDir = join(goDir, 'helm');

/** Returns the path of the helm binary, building it first if this source hash has none. */
export async function ensureHelm(progress: Progress = () => {}): Promise<string> {
  const binary = join(cacheDir(), `helm-${await sourceHash(helmModuleDir)}`);
  return buildOnce(binary, async (partial) => {
    const version = await requiredVersion(helmModuleDir, 'helm.sh/helm/v3');
    progress(`building helm ${version} into ${binary}; the first build takes a few minutes`);
    await goBuild(
      {
        what: 'helm',
        moduleDir: helmModuleDir,
        packages: ['helm.sh/helm/v3/cmd/helm'],
        ldflags: ['-s -w', `-X helm.sh/helm/v3/internal/version.version=${version}`],
        output: partial,
        cgo: false,
      },
      progress,
    );
  });
}

/** Runs helm; resolves with its stdout, or rejects with its stderr in the message. */
export type Helm = (args: string[], timeoutMs?: number) => Promise<string>;

/**
 * helm against one cluster (`kubeconfigPath`), with its cache, config and data in `home` so that nothing
 * of the user's helm set-up (repositories, plugins) takes part.
 */
export async function helmFor(kubeconfigPath: string, home: string, progress?: Progress): Promise<Helm> {
  const binary = await ensureHelm(progress);
  await mkdir(home, { recursive: true });
  const env = {
    ...process.env,
    KUBECONFIG: kubeconfigPath,
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
  };
  return async (args, timeoutMs = 300_000) => {
    try {
      const { stdout } = await promisify(execFile)(binary, args, {
        env,
        timeout: timeoutMs,
        maxBuffer: 16 * 1024 * 1024,
      });
      return stdout;
    } catch (err) {
      const e = err as Error & { stderr?: string };
      throw new Error(`helm ${args.join(' ')} failed: ${e.stderr || e.message}`);
    }
  };
}
