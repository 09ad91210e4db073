// Builds a real Velero for tests and `tenantkit dev` from devenv/go/velero/ (its own Go module: Velero
// pins Kubernetes libraries that cannot share a binary with the control plane's), with tenantkit's restore
// guard plugin from plugins/restore-guard/ (product code, a module of its own), cached like the control
// plane in ~/.cache/tenantkit/velero-<hash of both modules' sources>/.
import { execFile } from 'node:child_process';
import { copyFile, cp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import {
  buildOnce,
  cacheDir,
  goBuild,
  goDir,
  moduleDirs,
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
        modfile: await veleroWithFailpoint(join(partial, 'src')),
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
    await rm(join(partial, 'src'), { recursive: true, force: true });
  });
  return {
    velero: join(dir, 'velero'),
    pluginDir: join(dir, 'plugins'),
    s3server: join(dir, 's3server'),
    veleroVersion,
  };
}

/** The failpoint of devenv/go/velero/_overlay/ (what it does is said there), in Velero's backup controller. */
const failpoint = {
  file: join('pkg', 'controller', 'backup_controller.go'),
  before: 'b.backupTracker.AddPostProcessing(request.Namespace, request.Name)',
  call: 'tenantkitFailpointBeforePostProcessing()',
};
const veleroModule = 'github.com/vmware-tanzu/velero';

/**
 * A copy of Velero's module under `dir` with the failpoint in it (module cache files are read-only, and
 * Go refuses overlays of them), and a go.mod that builds with it: the returned `-modfile`. Velero's own
 * file is changed in that one line; a Velero whose line moved fails the build here, by name.
 */
async function veleroWithFailpoint(dir: string): Promise<string> {
  const source = (await moduleDirs(veleroModuleDir, [veleroModule])).get(veleroModule)!;
  const copy = join(dir, 'velero');
  // Velero's module holds its web site and design notes too: only what is compiled is copied.
  const skipped = new Set(['site', 'design', 'changelogs', 'examples', 'assets', 'hack']);
  await cp(source, copy, { recursive: true, filter: (from) => !skipped.has(relative(source, from)) });
  await promisify(execFile)('chmod', ['-R', 'u+w', copy]);
  const controller = join(copy, failpoint.file);
  const text = await readFile(controller, 'utf8');
  if (text.split(failpoint.before).length !== 2) {
    throw new Error(
      `${join(source, failpoint.file)} does not hold "${failpoint.before}" exactly once: update devenv/velero/build.ts`,
    );
  }
  await writeFile(controller, text.replace(failpoint.before, `${failpoint.call}\n\t\t\t${failpoint.before}`));
  await copyFile(
    join(veleroModuleDir, '_overlay', 'tracker_race.go'),
    join(copy, 'pkg', 'controller', 'tenantkit_failpoints.go'),
  );
  const modfile = join(dir, 'go.mod');
  const mod = await readFile(join(veleroModuleDir, 'go.mod'), 'utf8');
  await writeFile(modfile, `${mod}\nreplace ${veleroModule} => ${copy}\n`);
  await copyFile(join(veleroModuleDir, 'go.sum'), join(dir, 'go.sum'));
  return modfile;
}
