// Builds a real Velero for tests and `tenantkit dev` from devenv/go/velero/ (its own Go module: Velero
// pins Kubernetes libraries that cannot share a binary with the control plane's), cached like the
// control plane in ~/.cache/tenantkit/velero-<source hash>/.
import { mkdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import {
  buildOnce,
  cacheDir,
  goBuild,
  goDir,
  type Progress,
  requiredVersion,
  sourceHash,
} from '../controlplane/build.ts';

export const veleroModuleDir = join(goDir, 'velero');

const awsPlugin = 'github.com/vmware-tanzu/velero-plugin-for-aws/velero-plugin-for-aws';
/** tenantkit's RestoreItemAction: every item of a tenant's restore checked as its requester. */
const restoreGuardPlugin = './cmd/tenantkit-restore-guard';

export interface VeleroBinaries {
  /** Velero's CLI and server (`velero server`, `velero install --crds-only --dry-run`, ...). */
  velero: string;
  /** The folder for `velero server --plugin-dir`; holds velero-plugin-for-aws and tenantkit's restore guard. */
  pluginDir: string;
  /** The S3-compatible object store (gofakes3 on a directory) that stands in for S3 or MinIO. */
  s3server: string;
  veleroVersion: string;
}

/** Returns the Velero binaries, building them first if this source hash has none. */
export async function ensureVeleroBinaries(progress: Progress = () => {}): Promise<VeleroBinaries> {
  const veleroVersion = await requiredVersion(veleroModuleDir, 'github.com/vmware-tanzu/velero');
  const dir = join(cacheDir(), `velero-${await sourceHash(veleroModuleDir)}`);
  await buildOnce(dir, async (partial) => {
    const plugin = await requiredVersion(veleroModuleDir, 'github.com/vmware-tanzu/velero-plugin-for-aws');
    progress(
      `building Velero ${veleroVersion}, velero-plugin-for-aws ${plugin}, tenantkit's restore guard plugin and the S3 server into ${dir}; the first build takes minutes`,
    );
    await mkdir(join(partial, 'plugins'), { recursive: true });
    // One `go build` for all four shares the compilation of their common dependencies.
    await goBuild(
      {
        what: 'Velero',
        moduleDir: veleroModuleDir,
        packages: ['./cmd/velero', './cmd/s3server', restoreGuardPlugin, awsPlugin],
        ldflags: [
          '-s -w',
          `-X github.com/vmware-tanzu/velero/pkg/buildinfo.Version=${veleroVersion}`,
          '-X github.com/vmware-tanzu/velero/pkg/buildinfo.GitTreeState=clean',
        ],
        output: partial,
      },
      progress,
    );
    // Velero runs every executable in its plugin folder, so the plugins live apart from the others.
    for (const name of ['velero-plugin-for-aws', 'tenantkit-restore-guard']) {
      await rename(join(partial, name), join(partial, 'plugins', name));
    }
  });
  return {
    velero: join(dir, 'velero'),
    pluginDir: join(dir, 'plugins'),
    s3server: join(dir, 's3server'),
    veleroVersion,
  };
}
