// CPU time of this machine's processes, read from /proc, for benchmarks that ask where a request's time
// went on a busy node: who else ran meanwhile (the control plane, kubelet, containerd, each tenantkit
// component), and how busy the machine's cores were.
import { readdir, readFile } from 'node:fs/promises';
import { basename } from 'node:path';

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const ticks = 100;

/** What a process is, for a table: the control plane's component (its binary's name is cut to 15 characters in /proc), tenantkit's subcommand, or its name. */
function role(comm: string, argv: string[]): string {
  if (comm.startsWith('controlplane')) {
    const component = argv[1] && !argv[1].startsWith('-') ? argv[1] : 'kube-apiserver+etcd';
    return component;
  }
  if (comm === 'node' || comm === 'MainThread') {
    const script = argv.findIndex((a) => a.endsWith('.js') || a.endsWith('.ts'));
    if (script < 0) return 'node';
    const words = argv
      .slice(script + 1)
      .filter((a, i, all) => !a.startsWith('-') && !all[i - 1]?.startsWith('-'));
    const name = basename(argv[script]!);
    return name === 'main.js' || name === 'main.ts'
      ? `tenantkit ${words.slice(0, 2).join(' ')}`
      : `node ${name}`;
  }
  return comm;
}

/** CPU seconds (user + system) every running process has used, added up by role. */
export async function processCpu(): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const fields = stat.slice(close + 2).split(' ');
      // utime and stime are fields 14 and 15 of the line, 12 and 13 after "pid (comm) ".
      const seconds = (Number(fields[11]) + Number(fields[12])) / ticks;
      const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
      const key = role(comm, argv);
      found.set(key, (found.get(key) ?? 0) + seconds);
    } catch {
      // The process ended while being read.
    }
  }
  return found;
}

/**
 * The machine's CPU time so far, in seconds of one core (from /proc/stat): busy, waiting on I/O with
 * nothing else to run, and in all.
 */
export async function machineCpu(): Promise<{ busy: number; iowait: number; total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.split(/\s+/).slice(1).map(Number);
  const busy = user! + nice! + system! + irq! + softirq! + (steal ?? 0);
  return { busy: busy / ticks, iowait: iowait! / ticks, total: (busy + idle! + iowait!) / ticks };
}

/**
 * CPU seconds of each process tree this process started: every descendant of a direct child counted
 * under that child's label (`label` from its pid and command line; its executable's name otherwise).
 * Tells apart what `processCpu` adds up by name, say a primary PostgreSQL and its standbys.
 */
export async function childTreeCpu(
  label: (pid: number, argv: string[]) => string | undefined,
): Promise<Map<string, number>> {
  const procs = new Map<number, { ppid: number; seconds: number; argv: string[] }>();
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
      procs.set(Number(pid), {
        ppid: Number(fields[1]),
        seconds: (Number(fields[11]) + Number(fields[12])) / ticks,
        argv,
      });
    } catch {
      // The process ended while being read.
    }
  }
  const found = new Map<string, number>();
  for (const [pid, p] of procs) {
    let root = pid;
    while (root !== 0 && procs.get(root)?.ppid !== process.pid) root = procs.get(root)?.ppid ?? 0;
    if (root === 0) continue;
    const argv = procs.get(root)!.argv;
    const key = label(root, argv) ?? basename(argv[0] ?? String(root));
    found.set(key, (found.get(key) ?? 0) + p.seconds);
  }
  const own = process.cpuUsage();
  found.set('this bench process', (own.user + own.system) / 1e6);
  return found;
}
