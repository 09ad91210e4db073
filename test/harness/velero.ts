// A real Velero for the test files that need one: call startTestVelero() in beforeAll (only those files
// pay its start, about 2 s once built) with veleroStartTimeoutMs, and stop() in afterAll. Velero runs as
// a local process against the shared control plane, in a namespace of its own, with the S3 server
// (gofakes3 on a directory, a stand-in for S3 or MinIO) as its object store.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startVelero, type Velero, type VeleroOptions } from '../../devenv/velero/launch.ts';
import { type Backup, finishedPhases, type Restore, VeleroResources } from '../../src/crds/velero.ts';
import { type KubeObject, Resources, type ResourceType } from '../../src/kube/resources.ts';
import { clusterInfo, eventually, type TestCluster } from './cluster.ts';

/**
 * The beforeAll timeout for startTestVelero(): on a fresh machine the first start builds Velero (about
 * 4 minutes on 2 cores), far beyond the project's default hook timeout.
 */
export const veleroStartTimeoutMs = 15 * 60_000;

export interface TestVelero extends Velero {
  /** Creates a Backup in Velero's namespace and resolves with it once Velero finished it. */
  backup(name: string, spec: Backup['spec'], timeoutMs?: number): Promise<Backup>;
  /** Creates a Restore in Velero's namespace and resolves with it once Velero finished it. */
  restore(name: string, spec: Restore['spec'], timeoutMs?: number): Promise<Restore>;
  /**
   * Runs `during` with the local `velero server` process stopped (SIGSTOP, then SIGCONT): Velero's objects
   * stay as they are meanwhile (a new Backup stays New), so a test can set up what must happen while
   * Velero has not finished something yet, however fast Velero would have been.
   */
  paused<T>(during: () => Promise<T>): Promise<T>;
  /** The last lines (at most 15) of the local `velero server` log that name `text`, for a failure message. */
  logLines(text: string): Promise<string[]>;
  /** Waits until a Backup or Restore reached one of the finished phases, and returns it. */
  finished<T extends Backup | Restore>(type: ResourceType, name: string, timeoutMs?: number): Promise<T>;
}

/** The local `velero server` of each Velero namespace this process runs, for a failure's story. */
const running = new Map<string, TestVelero>();

/** The local Velero server of `namespace`, if this process runs it (not one in a Pod). */
export const testVeleroIn = (namespace: string): TestVelero | undefined => running.get(namespace);

export async function startTestVelero(
  cluster: TestCluster,
  options: Pick<VeleroOptions, 'restoreGuard' | 'onNode' | 'concurrentBackups' | 'failpoints'> = {},
): Promise<TestVelero> {
  const dir = await mkdtemp(join(tmpdir(), 'tenantkit-velero-'));
  const admin = cluster.admin;
  let velero: Velero;
  try {
    velero = await startVelero({
      kubeconfigPath: clusterInfo().adminKubeconfigPath,
      namespace: cluster.unique('velero'),
      dir,
      ...options,
      progress: (line) => console.log(`[velero] ${line}`),
    });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const namespace = velero.namespace;

  const finished = async <T extends Backup | Restore>(type: ResourceType, name: string, timeoutMs = 60_000) =>
    eventually(
      async () => {
        const object = await admin.get<T>(type, name, namespace);
        const phase = object?.status?.phase ?? '';
        return (finishedPhases as readonly string[]).includes(phase) ? object : undefined;
      },
      {
        timeoutMs,
        intervalMs: 100,
        what: `${type.kind} ${namespace}/${name} finished (log: ${velero.logFile})`,
      },
    ) as Promise<T>;

  /**
   * Every `velero server` process of this namespace, found by its arguments: usually one, but a server
   * that is ending (a restarted one, a Pod being replaced) may still run beside its successor, and pids
   * are reused out of order on a busy machine, so the first match need not be the one that works.
   */
  const serverPids = async () => {
    const pids: number[] = [];
    for (const pid of await readdir('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
      if (argv.includes('server') && argv.includes(`--namespace=${namespace}`)) pids.push(Number(pid));
    }
    if (pids.length === 0) throw new Error(`no local velero server process for namespace ${namespace}`);
    return pids;
  };
  /** Whether a process is stopped (state T in /proc/PID/stat), or gone. */
  const stoppedOrGone = async (pid: number) => {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === '' || state === 'T' || state === 't' || state === 'Z' || state === 'X';
  };

  const test: TestVelero = {
    ...velero,
    finished,
    async paused(during) {
      const pids = await serverPids();
      const signal = (sig: NodeJS.Signals) => {
        for (const pid of pids) {
          try {
            process.kill(pid, sig);
          } catch {
            // Gone meanwhile: nothing to stop or continue.
          }
        }
      };
      signal('SIGSTOP');
      try {
        // Stopped for certain before `during` creates anything Velero would act on.
        await eventually(async () => (await Promise.all(pids.map(stoppedOrGone))).every(Boolean), {
          timeoutMs: 10_000,
          intervalMs: 10,
          what: `velero server ${pids.join(', ')} stopped`,
        });
        return await during();
      } finally {
        signal('SIGCONT');
      }
    },
    async logLines(text) {
      const log = await readFile(velero.logFile, 'utf8').catch(() => '');
      return log
        .split('\n')
        .filter((line) => line.includes(text))
        .slice(-15);
    },
    async backup(name, spec, timeoutMs) {
      await admin.create<Backup>(VeleroResources.backups, { metadata: { name, namespace }, spec });
      return finished<Backup>(VeleroResources.backups, name, timeoutMs);
    },
    async restore(name, spec, timeoutMs) {
      await admin.create<Restore>(VeleroResources.restores, { metadata: { name, namespace }, spec });
      return finished<Restore>(VeleroResources.restores, name, timeoutMs);
    },
    async stop() {
      await velero.stop();
      // With Velero gone, nothing would remove the finalizer it puts on Restores, and the namespace
      // would stay Terminating.
      const restores = await admin.list<KubeObject>(VeleroResources.restores, { namespace });
      for (const restore of restores.items) {
        if (restore.metadata.finalizers?.length) {
          await admin.patch(VeleroResources.restores, restore.metadata.name!, namespace, {
            metadata: { finalizers: null },
          });
        }
      }
      await admin.delete(Resources.namespaces, namespace);
      running.delete(namespace);
      await rm(dir, { recursive: true, force: true });
    },
  };
  running.set(namespace, test);
  return test;
}
