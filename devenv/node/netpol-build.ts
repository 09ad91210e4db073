// Builds the local node's NetworkPolicy enforcer, SIG Network's kube-network-policies (NetworkPolicy,
// AdminNetworkPolicy and BaselineAdminNetworkPolicy, enforced with nftables and NFQUEUE), from
// devenv/go/netpol/ (its own Go module), into an image the node runs as an add-on, with the
// AdminNetworkPolicy CRDs of the network-policy-api version it was built against. Cached like the node's
// other parts in ~/.cache/tenantkit/netpol-<hash>/.
//
// One file is swapped at build time: kernels built without nft_queue (this machine's: CONFIG_NFT_QUEUE is
// unset) cannot load the enforcer's `queue` rules, so google/nftables' Queue expression is compiled from
// devenv/go/netpol/_overlay/nftables-queue.go, which sends the same packets to the same queue through
// xtables' NFQUEUE target (nft_compat). Go refuses overlays of the module cache, so the build copies that
// one module into its scratch folder and points a `replace` at the copy.
import { execFile } from 'node:child_process';
import { chmod, copyFile, cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  buildOnce,
  cacheDir,
  goBuild,
  goDir,
  moduleDirs,
  type Progress,
  requiredVersion,
  sourceHash,
} from '../controlplane/build.ts';
import { ensureNodeBinaries, type NodeImage } from './build.ts';

const run = promisify(execFile);
export const netpolModuleDir = join(goDir, 'netpol');
const nftablesModule = 'github.com/google/nftables';
const policyApiModule = 'sigs.k8s.io/network-policy-api';
/** The CRDs the enforcer's AdminNetworkPolicy support reads, from network-policy-api's standard channel. */
const crdFiles = [
  'policy.networking.k8s.io_adminnetworkpolicies.yaml',
  'policy.networking.k8s.io_baselineadminnetworkpolicies.yaml',
];

export interface NetworkPolicyEnforcer {
  image: NodeImage;
  /** The AdminNetworkPolicy and BaselineAdminNetworkPolicy CRDs (YAML files). */
  crds: string[];
  version: string;
}

/** Returns the enforcer's image and CRDs, building them first if this source hash has none. */
export async function ensureNetworkPolicyEnforcer(
  progress: Progress = () => {},
): Promise<NetworkPolicyEnforcer> {
  const hash = await sourceHash(netpolModuleDir);
  const dir = join(cacheDir(), `netpol-${hash}`);
  const version = await requiredVersion(netpolModuleDir, 'sigs.k8s.io/kube-network-policies');
  const image: NodeImage = {
    archive: join(dir, 'kube-network-policies.tar'),
    ref: `tenantkit.local/kube-network-policies:${hash}`,
  };
  const node = await ensureNodeBinaries(progress);
  await buildOnce(dir, async (partial) => {
    progress(`building kube-network-policies ${version} into ${dir}; the first build takes minutes`);
    const scratch = join(partial, 'src');
    await mkdir(join(partial, 'crds'), { recursive: true });
    const dirs = await moduleDirs(netpolModuleDir, [nftablesModule, policyApiModule]);
    // The copy of google/nftables with the Queue expression swapped (module cache files are read-only).
    const nftables = join(scratch, 'nftables');
    await cp(dirs.get(nftablesModule)!, nftables, { recursive: true });
    await run('chmod', ['-R', 'u+w', nftables]);
    await copyFile(
      join(netpolModuleDir, '_overlay', 'nftables-queue.go'),
      join(nftables, 'expr', 'queue.go'),
    );
    const modfile = join(scratch, 'go.mod');
    const mod = await readFile(join(netpolModuleDir, 'go.mod'), 'utf8');
    await writeFile(modfile, `${mod}\nreplace ${nftablesModule} => ${nftables}\n`);
    await copyFile(join(netpolModuleDir, 'go.sum'), join(scratch, 'go.sum'));
    const binary = join(partial, 'kube-network-policies');
    await goBuild(
      {
        what: 'kube-network-policies',
        moduleDir: netpolModuleDir,
        packages: ['sigs.k8s.io/kube-network-policies/cmd'],
        ldflags: ['-s -w'],
        cgo: false,
        modfile,
        output: binary,
      },
      progress,
    );
    await run(join(node.toolsDir, 'tk-image'), [
      `--tag=${image.ref}`,
      `--out=${join(partial, 'kube-network-policies.tar')}`,
      '--entrypoint=/kube-network-policies',
      `--file=${binary}=/kube-network-policies`,
    ]);
    for (const file of crdFiles) {
      const from = join(dirs.get(policyApiModule)!, 'config', 'crd', 'standard', file);
      await copyFile(from, join(partial, 'crds', file));
      await chmod(join(partial, 'crds', file), 0o644);
    }
    await rm(scratch, { recursive: true, force: true });
    await rm(binary, { force: true });
  });
  return { image, crds: crdFiles.map((f) => join(dir, 'crds', f)), version };
}
