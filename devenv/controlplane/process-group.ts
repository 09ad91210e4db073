// Runs a helper program in a process group of its own, so that stopping it also stops every process it
// started (Velero runs its plugins as child processes) and nothing is left behind.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface GroupProcess {
  child: ChildProcess;
  /** Resolves once the leader exited, with its exit code (or -1 when killed by a signal). */
  exited: Promise<number>;
  /** SIGTERM to the whole group, SIGKILL after `graceMs`; resolves once no process of it is left. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts `binary` as leader of a new process group, its stdout and stderr appended to `logFile`. */
export function spawnGroup(
  binary: string,
  args: string[],
  options: { logFile: string; env?: NodeJS.ProcessEnv; cwd?: string },
): GroupProcess {
  const log = openSync(options.logFile, 'a');
  const child = spawn(binary, args, {
    detached: true,
    stdio: ['ignore', log, log],
    env: options.env ?? process.env,
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  // The child has its own copy of the descriptor by now.
  closeSync(log);
  const exited = new Promise<number>((done) => {
    child.once('exit', (code) => done(code ?? -1));
    child.once('error', () => done(-1));
  });
  const pgid = child.pid;
  return {
    child,
    exited,
    async stop(graceMs = 10_000) {
      if (pgid === undefined) return;
      signalGroup(pgid, 'SIGTERM');
      const deadline = Date.now() + graceMs;
      while (groupAlive(pgid) && Date.now() < deadline) await sleep(50);
      signalGroup(pgid, 'SIGKILL');
      const reaped = Date.now() + 10_000;
      while (groupAlive(pgid)) {
        if (Date.now() > reaped) throw new Error(`processes of group ${pgid} (${binary}) survived SIGKILL`);
        await sleep(50);
      }
      await exited;
    },
  };
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Whether any process of the group still exists (signal 0 checks without signalling). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
