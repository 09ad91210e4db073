// What the local node changes on the machine, and how a run puts it back. kubelet, kube-proxy, containerd
// and the CNI plugins write sysctls, netfilter rules, network links, mounts, cgroups and a few fixed
// folders; a snapshot taken before the node starts lists all of them, and `restoreHost` undoes each
// difference after it stopped. `hostDifferences` is what the test that checks the machine compares.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Sysctls kubelet (kernel tunables) and kube-proxy (conntrack, forwarding) may set. */
export const watchedSysctls = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
  'net/ipv4/ip_forward',
  'net/ipv4/conf/all/route_localnet',
  'net/bridge/bridge-nf-call-iptables',
  'net/bridge/bridge-nf-call-ip6tables',
  'net/netfilter/nf_conntrack_max',
  'net/netfilter/nf_conntrack_tcp_timeout_established',
  'net/netfilter/nf_conntrack_tcp_timeout_close_wait',
];

/** Fixed folders that kubelet, containerd or CNI create whatever they are configured with. */
export const watchedPaths = [
  '/var/lib/kubelet',
  '/var/log/containers',
  '/var/log/pods',
  '/var/lib/cni',
  '/etc/cni',
  '/opt/cni',
  '/run/netns',
  '/var/run/netns',
  '/run/containerd',
  '/var/lib/containerd',
  '/etc/kubernetes',
];

export interface HostState {
  sysctls: Record<string, string>;
  /** `nft list ruleset`: iptables here is the nf_tables variant, so this holds its rules too. */
  ruleset: string;
  links: string[];
  mounts: string[];
  paths: string[];
  /** Cgroup folders (in every v1 hierarchy) under the node's cgroup roots. */
  cgroups: string[];
}

export async function readHost(cgroupRoots: string[]): Promise<HostState> {
  const sysctls: Record<string, string> = {};
  for (const name of watchedSysctls) {
    const value = await readFile(`/proc/sys/${name}`, 'utf8').catch(() => undefined);
    if (value !== undefined) sysctls[name] = value.trim();
  }
  return {
    sysctls,
    ruleset: await ruleset(),
    links: await links(),
    mounts: await mountPoints(),
    paths: watchedPaths.filter((p) => existsSync(p)),
    cgroups: await cgroupFolders(cgroupRoots),
  };
}

/** One line per difference between two states, empty when the machine is as it was. */
export function hostDifferences(before: HostState, after: HostState): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(after.sysctls)) {
    if (before.sysctls[name] !== value) out.push(`sysctl ${name}: ${before.sysctls[name]} → ${value}`);
  }
  if (before.ruleset !== after.ruleset) out.push('netfilter ruleset differs (nft list ruleset)');
  const added = (what: string, a: string[], b: string[]) => {
    for (const item of b) if (!a.includes(item)) out.push(`${what} added: ${item}`);
    for (const item of a) if (!b.includes(item)) out.push(`${what} removed: ${item}`);
  };
  added('network link', before.links, after.links);
  added('mount', before.mounts, after.mounts);
  added('path', before.paths, after.paths);
  added('cgroup', before.cgroups, after.cgroups);
  return out;
}

/**
 * Undoes every difference from `before` that the node can have made: unmounts what was mounted since
 * (deepest first), deletes new links, writes sysctls back, reloads the ruleset, removes the cgroup
 * folders and the fixed folders that did not exist. Processes must be gone first.
 */
export async function restoreHost(before: HostState, cgroupRoots: string[]): Promise<string[]> {
  const problems: string[] = [];
  const now = await readHost(cgroupRoots);
  const mounts = now.mounts.filter((m) => !before.mounts.includes(m)).sort((a, b) => b.length - a.length);
  for (const mount of mounts) {
    await run('umount', ['-l', mount]).catch((err: Error) =>
      problems.push(`umount ${mount}: ${err.message}`),
    );
  }
  for (const link of now.links.filter((l) => !before.links.includes(l))) {
    await run('ip', ['link', 'delete', link]).catch(() => {
      // A veth goes with its peer: deleting one end may already have removed this one.
    });
  }
  for (const [name, value] of Object.entries(before.sysctls)) {
    if (now.sysctls[name] === value) continue;
    await writeFile(`/proc/sys/${name}`, value).catch((err: Error) =>
      problems.push(`sysctl ${name}: ${err.message}`),
    );
  }
  if (now.ruleset !== before.ruleset) {
    const restore = `flush ruleset\n${before.ruleset}`;
    const file = join('/tmp', `tenantkit-ruleset-${process.pid}.nft`);
    await writeFile(file, restore);
    await run('nft', ['-f', file]).catch((err: Error) => problems.push(`nft restore: ${err.message}`));
    await rm(file, { force: true });
  }
  for (const folder of now.cgroups
    .filter((c) => !before.cgroups.includes(c))
    .sort((a, b) => b.length - a.length)) {
    await rmdir(folder).catch((err: Error) => problems.push(`cgroup ${folder}: ${err.message}`));
  }
  for (const path of now.paths.filter((p) => !before.paths.includes(p))) {
    await removeTree(path).catch((err: Error) => problems.push(`remove ${path}: ${err.message}`));
  }
  return problems;
}

/**
 * Where a running node keeps the snapshot of the machine from before it started, until it has put the
 * machine back: a run that was killed leaves it, and the next start undoes what that run changed. Under
 * /run (a tmpfs): after a reboot the machine is as it was anyway.
 */
export const hostRecordFile = '/run/tenantkit/node-host.json';

export interface HostRecord {
  /** The process that started the node. */
  pid: number;
  before: HostState;
}

export async function recordHost(before: HostState, file = hostRecordFile): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const record: HostRecord = { pid: process.pid, before };
  await writeFile(file, JSON.stringify(record), { mode: 0o600 });
}

export async function readHostRecord(file = hostRecordFile): Promise<HostRecord | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  try {
    return JSON.parse(text) as HostRecord;
  } catch {
    return undefined;
  }
}

export async function forgetHost(file = hostRecordFile): Promise<void> {
  await rm(file, { force: true });
}

/** Whether a process with this pid runs (signal 0 checks without sending anything). */
/**
 * Removes a folder and everything in it, however deep: a Pod can nest folders in its volume past PATH_MAX,
 * which Node's rm (full paths) cannot remove; coreutils' rm (relative to each folder) can.
 */
export async function removeTree(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true }).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENAMETOOLONG') throw err;
    await run('rm', ['-rf', '--one-file-system', '--', path]);
  });
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The cgroup v1 hierarchies mounted under /sys/fs/cgroup (cpu, memory, pids, ..., systemd). */
export async function cgroupHierarchies(): Promise<string[]> {
  const entries = await readdir('/sys/fs/cgroup', { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory()).map((e) => join('/sys/fs/cgroup', e.name));
}

async function cgroupFolders(roots: string[]): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    if (!existsSync(dir)) return;
    out.push(dir);
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (e.isDirectory()) await walk(join(dir, e.name));
    }
  };
  for (const hierarchy of await cgroupHierarchies()) {
    for (const root of roots) await walk(join(hierarchy, root));
  }
  return out;
}

/**
 * The processes in the node's cgroups (read from the pids hierarchy, which every process is in), or in
 * those of its folders that `only` picks.
 */
export async function cgroupProcesses(
  roots: string[],
  only?: (folder: string) => boolean,
): Promise<number[]> {
  const pids = new Set<number>();
  for (const folder of await cgroupFolders(roots)) {
    if (!folder.startsWith('/sys/fs/cgroup/pids/') || (only && !only(folder))) continue;
    const procs = await readFile(join(folder, 'cgroup.procs'), 'utf8').catch(() => '');
    for (const line of procs.split('\n')) if (line.trim()) pids.add(Number(line));
  }
  return [...pids];
}

async function ruleset(): Promise<string> {
  try {
    return (await run('nft', ['list', 'ruleset'])).stdout;
  } catch {
    return '';
  }
}

async function links(): Promise<string[]> {
  const { stdout } = await run('ip', ['-o', 'link', 'show']);
  return stdout
    .split('\n')
    .map((line) => /^\d+: ([^:@]+)/.exec(line)?.[1])
    .filter((name): name is string => Boolean(name));
}

async function mountPoints(): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  // Field 5 is the mount point, with spaces and the like written as octal escapes.
  return info
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => Boolean(p))
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8))));
}
