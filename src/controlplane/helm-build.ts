// Builds the helm CLI from testenv/helm/ (its own Go module: Helm v3.22 pins Kubernetes libraries v0.37,
// which cannot share a binary with the control plane's v0.35), cached like the control plane in
// ~/.cache/tenantkit/helm-<source hash>. Tests and `tenantkit dev` install tenantkit's chart with it.
import { join } from 'node:path';
import {
  buildOnce,
  cacheDir,
  goBuild,
  type Progress,
  requiredVersion,
  sourceHash,
  testenvDir,
} from './build.ts';

export const helmModuleDir = join(testenvDir, 'helm');

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
