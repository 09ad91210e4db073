// Builds a real Velero for tests and `tenantkit dev` from devenv/go/velero/ (its own Go module: Velero
// pins Kubernetes libraries that cannot share a binary with the control plane's), with tenantkit's restore
// guard plugin from plugins/restore-guard/ (product code, a module of its own), cached like the control
// plane in ~/.cache/tenantkit/velero-<hash of both modules' sources>/.
import { mkdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import {
  buildOnce,
  cacheDir,
  goBuild,
  goDir,
  type Progress,
  projectRoot,
  requiredVersion,
  sourceHash,
} from '../controlplane/build.ts';

export const veleroModuleDir = join(goDir, 'velero');
/** tenantkit's RestoreItemAction: every item of a tenant's restore checked as its requester. */
export const restoreGuardModuleDir = join(projectRoot, 'plugins', 'restore-guard');

const awsPlugin = 'github.com/vmware-tanzu/velero-plugin-for-aws/velero-plugin-for-aws';

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
  const hash = `${await sourceHash(veleroModuleDir)}-${(await sourceHash(restoreGuardModuleDir)).slice(0, 8)}`;
  const dir = join(cacheDir(), `velero-${hash}`);
  await buildOnce(dir, async (partial) => {
    const plugin = await requiredVersion(veleroModuleDir, 'github.com/vmware-tanzu/velero-plugin-for-aws');
    progress(
      `building Velero ${veleroVersion}, velero-plugin-for-aws ${plugin}, tenantkit's restore guard plugin and the S3 server into ${dir}; the first build takes minutes`,
    );
    await mkdir(join(partial, 'plugins'), { recursive: true });
    // One `go build` for Velero's three shares the compilation of their common dependencies; the guard's
    // module requires the same versions, so its build finds most packages in Go's build cache.
    await goBuild(
      {
        what: 'Velero',
        moduleDir: veleroModuleDir,
        packages: ['./cmd/velero', './cmd/s3server', awsPlugin],
        ldflags: [
          '-s -w',
          `-X github.com/vmware-tanzu/velero/pkg/buildinfo.Version=${veleroVersion}`,
          '-X github.com/vmware-tanzu/velero/pkg/buildinfo.GitTreeState=clean',
        ],
        output: partial,
      },
      progress,
    );
    await goBuild(
      {
        what: "tenantkit's restore guard",
        moduleDir: restoreGuardModuleDir,
        packages: ['.'],
        ldflags: ['-s -w'],
        output: join(partial, 'plugins', 'tenantkit-restore-guard'),
      },
      progress,
    );
    // Velero runs every executable in its plugin folder, so the plugins live apart from the others.
    await rename(join(partial, 'velero-plugin-for-aws'), join(partial, 'plugins', 'velero-plugin-for-aws'));
  });
  return {
    velero: join(dir, 'velero'),
    pluginDir: join(dir, 'plugins'),
    s3server: join(dir, 's3server'),
    veleroVersion,
  };
}
