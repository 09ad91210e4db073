// Builds what the local node runs besides the Kubernetes components (those come from the control plane
// binary): containerd with its runc shim and ctr, runc, the CNI plugins, and the images the node runs (the workload, CoreDNS, local-path-provisioner), all from
// devenv/go/node/ (its own Go module), cached like the control plane in ~/.cache/tenantkit/node-<hash>/.
import { execFile } from 'node:child_process';
import { mkdir, rename } from 'node:fs/promises';
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

export const nodeModuleDir = join(goDir, 'node');

const cniPlugins = ['bridge', 'host-local', 'loopback', 'portmap'];

export interface NodeImage {
  archive: string;
  ref: string;
}

export interface NodeBinaries {
  /** containerd, containerd-shim-runc-v2, ctr and runc (containerd finds the shim on PATH). */
  binDir: string;
  /** The CNI plugins, for containerd's `bin_dirs`. */
  cniDir: string;
  /** tk-image (builds images without Docker) and tk-postgres (the bundled database image's entrypoint). */
  toolsDir: string;
  /** The workload image as a docker archive, and its reference (the tag is the source hash). */
  workloadImage: NodeImage;
  /** CoreDNS (only the plugins cluster DNS needs), for the cluster's DNS Deployment. */
  corednsImage: NodeImage;
  /** local-path-provisioner, the default StorageClass's dynamic provisioner. */
  localPathImage: NodeImage;
  containerdVersion: string;
  runcVersion: string;
}

/** Returns the node's binaries and images, building them first if this source hash has none. */
export async function ensureNodeBinaries(progress: Progress = () => {}): Promise<NodeBinaries> {
  const hash = await sourceHash(nodeModuleDir);
  const dir = join(cacheDir(), `node-${hash}`);
  const containerdVersion = await requiredVersion(nodeModuleDir, 'github.com/containerd/containerd/v2');
  const runcVersion = await requiredVersion(nodeModuleDir, 'github.com/opencontainers/runc');
  const image = (name: string): NodeImage => ({
    archive: join(dir, 'images', `${name}.tar`),
    ref: `tenantkit.local/${name}:${hash}`,
  });
  await buildOnce(dir, async (partial) => {
    progress(
      `building the node's runtime (containerd ${containerdVersion}, runc ${runcVersion}, CNI plugins) into ${dir}; the first build takes minutes`,
    );
    for (const sub of ['bin', 'cni', 'images', 'tools']) await mkdir(join(partial, sub), { recursive: true });
    const containerd = 'github.com/containerd/containerd/v2/cmd';
    const version = (pkg: string, v: string) => `-X ${pkg}.Version=${v}`;
    // runc needs cgo for libseccomp (Pods with the RuntimeDefault seccomp profile); containerd is built
    // without the snapshotters that need C libraries this node does not use.
    await goBuild(
      {
        what: 'containerd, runc and the CNI plugins',
        moduleDir: nodeModuleDir,
        packages: [
          `${containerd}/containerd`,
          `${containerd}/containerd-shim-runc-v2`,
          `${containerd}/ctr`,
          'github.com/opencontainers/runc',
          ...cniPlugins.map((p) => `github.com/containernetworking/plugins/plugins/${pluginFolder(p)}/${p}`),
        ],
        ldflags: [
          '-s -w',
          version('github.com/containerd/containerd/v2/version', containerdVersion),
          `-X main.version=${runcVersion.slice(1)}`,
        ],
        tags: ['seccomp', 'no_btrfs', 'no_devmapper', 'no_zfs'],
        cgo: true,
        output: join(partial, 'bin'),
      },
      progress,
    );
    for (const plugin of cniPlugins) await rename(join(partial, 'bin', plugin), join(partial, 'cni', plugin));
    // The images' programs and the image tools are static: the programs run inside otherwise empty images.
    await goBuild(
      {
        what: 'the workload, CoreDNS and local-path-provisioner images',
        moduleDir: nodeModuleDir,
        packages: [
          './cmd/tk-workload',
          './cmd/coredns',
          'github.com/rancher/local-path-provisioner',
          './cmd/tk-image',
          './cmd/tk-postgres',
        ],
        ldflags: ['-s -w'],
        cgo: false,
        output: join(partial, 'tools'),
      },
      progress,
    );
    for (const program of ['tk-workload', 'coredns', 'local-path-provisioner']) {
      const name = program === 'tk-workload' ? 'workload' : program;
      await promisify(execFile)(join(partial, 'tools', 'tk-image'), [
        `--tag=${image(name).ref}`,
        `--out=${join(partial, 'images', `${name}.tar`)}`,
        `--entrypoint=/${program}`,
        `--file=${join(partial, 'tools', program)}=/${program}`,
      ]);
    }
  });
  return {
    binDir: join(dir, 'bin'),
    cniDir: join(dir, 'cni'),
    toolsDir: join(dir, 'tools'),
    workloadImage: image('workload'),
    corednsImage: image('coredns'),
    localPathImage: image('local-path-provisioner'),
    containerdVersion,
    runcVersion,
  };
}

function pluginFolder(plugin: string): string {
  if (plugin === 'host-local') return 'ipam';
  if (plugin === 'portmap') return 'meta';
  return 'main';
}
