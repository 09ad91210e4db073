// Builds the Go binaries tenantkit runs locally (the control plane from devenv/go/controlplane/, Velero from
// devenv/go/velero/) once and caches them outside the repo, keyed by a hash of each module's sources, so
// only the first run on a machine pays the build.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * The checkout's root, or the installed package's: compiled, this file runs from dist/devenv/controlplane/,
 * while the Go sources it builds ship beside dist/.
 */
export const projectRoot = resolve(
  dirname(fileURLToPath(import.meta.url)),
  import.meta.url.endsWith('.ts') ? '../..' : '../../..',
);
/** The Go modules of the development environment (devenv/go/): one folder each. */
export const goDir = join(projectRoot, 'devenv', 'go');
/** The control plane's Go module. */
export const controlPlaneModuleDir = join(goDir, 'controlplane');

import { cacheDir } from '../../src/cache-dir.ts';

export { cacheDir };

export type Progress = (line: string) => void;

/** Paths (relative, `/`-separated) of a module's go.mod, go.sum and *.go files; nested modules are theirs. */
async function sourceFiles(moduleDir: string, sub = ''): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(join(moduleDir, sub), { withFileTypes: true })) {
    const path = sub ? `${sub}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!existsSync(join(moduleDir, path, 'go.mod'))) files.push(...(await sourceFiles(moduleDir, path)));
    } else if (entry.name === 'go.mod' || entry.name === 'go.sum' || entry.name.endsWith('.go')) {
      files.push(path);
    }
  }
  return files;
}

/** A short hash of a module's sources: the cache key of what is built from it. */
export async function sourceHash(moduleDir: string): Promise<string> {
  const hash = createHash('sha256');
  for (const file of (await sourceFiles(moduleDir)).sort()) {
    hash.update(file);
    hash.update(await readFile(join(moduleDir, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

/** The version of `modulePath` that the module in `moduleDir` requires, so binaries report it. */
export async function requiredVersion(moduleDir: string, modulePath: string): Promise<string> {
  const mod = await readFile(join(moduleDir, 'go.mod'), 'utf8');
  const escaped = modulePath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const match = new RegExp(`^\\s*(?:require\\s+)?${escaped} (v\\d+\\.\\d+\\.\\d+)`, 'm').exec(mod);
  if (!match?.[1]) throw new Error(`${join(moduleDir, 'go.mod')} does not require ${modulePath}`);
  return match[1];
}

/** Where each module of `moduleDir`'s build list lives in the module cache (downloading it if needed). */
export async function moduleDirs(moduleDir: string, modules: string[]): Promise<Map<string, string>> {
  const { stdout } = await promisify(execFile)('go', ['mod', 'download', '-json', ...modules], {
    cwd: moduleDir,
    env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
    maxBuffer: 1 << 22,
  });
  const dirs = new Map<string, string>();
  // `go mod download -json` prints one JSON object per module, one after the other.
  for (const chunk of stdout.split(/\n}\n?/).filter((c) => c.trim())) {
    const info = JSON.parse(`${chunk}\n}`) as { Path: string; Dir?: string; Error?: string };
    if (!info.Dir) throw new Error(`go mod download ${info.Path}: ${info.Error ?? 'no folder'}`);
    dirs.set(info.Path, info.Dir);
  }
  return dirs;
}

export interface GoBuild {
  /** What is built, for progress lines. */
  what: string;
  moduleDir: string;
  /** Main packages: `.`, `./cmd/x` or a package path of a required module. */
  packages: string[];
  ldflags: string[];
  /** A file for one package; a directory for several (each binary named after its package). */
  output: string;
  /** Build tags (`-tags`). */
  tags?: string[];
  /** Sets CGO_ENABLED (runc needs cgo for libseccomp); unset, Go's default applies. */
  cgo?: boolean;
  /** Another go.mod to build with (`-modfile`), e.g. one that replaces a dependency. */
  modfile?: string;
}

/** Builds in this process run at this niceness (0: as the process); see `buildInBackground`. */
let niceness = 0;
let stopping = false;
const running = new Set<ChildProcess>();

/**
 * Lowers the priority of every later build of this process, for builds made ahead of need (the test
 * run's set-up builds Velero and the node while the first test files run): tests keep the CPU they ask
 * for and the build takes what is left. `stopBuilds` ends any still running.
 */
export function buildInBackground(nice = 15): void {
  niceness = nice;
}

/** Ends this process' running builds; its waits for other processes' builds give up within a second. */
export function stopBuilds(): void {
  stopping = true;
  for (const child of running) child.kill('SIGTERM');
}

/** Runs `go build`, reporting every 100th compiled package as a heartbeat. */
export async function goBuild(build: GoBuild, progress: Progress): Promise<void> {
  const started = Date.now();
  const seconds = () => Math.round((Date.now() - started) / 1000);
  const output = build.packages.length > 1 ? `${build.output}/` : build.output;
  await new Promise<void>((done, fail) => {
    const args = ['build', '-v', '-trimpath', '-ldflags', build.ldflags.join(' '), '-o', output];
    if (build.tags?.length) args.push('-tags', build.tags.join(','));
    if (build.modfile) args.push('-modfile', build.modfile);
    const child = spawn('go', [...args, ...build.packages], {
      cwd: build.moduleDir,
      env: {
        ...process.env,
        GOTOOLCHAIN: 'local',
        GOFLAGS: '-mod=mod',
        ...(build.cgo === undefined ? {} : { CGO_ENABLED: build.cgo ? '1' : '0' }),
      },
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    // The compiler processes go forks from now on inherit its niceness.
    if (niceness && child.pid) setPriority(child.pid, niceness);
    running.add(child);
    child.on('exit', () => running.delete(child));
    let compiled = 0;
    let tail = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      tail = (tail + chunk).slice(-4000);
      // `go build -v` names each package as it compiles it.
      for (const line of chunk.split('\n')) {
        if (line.trim() === '' || line.startsWith('go: downloading')) continue;
        compiled++;
        if (compiled % 100 === 0) progress(`  ${compiled} packages compiled (${seconds()} s)`);
      }
    });
    child.on('error', (err: NodeJS.ErrnoException) =>
      fail(
        err.code === 'ENOENT'
          ? new Error(
              'Go (1.26 or newer) is needed to build the local control plane and Velero once; install it from https://go.dev/dl and put `go` on PATH',
            )
          : err,
      ),
    );
    child.on('exit', (code) =>
      code === 0
        ? done()
        : fail(new Error(`go build of ${build.what} failed with exit code ${code}:\n${tail}`)),
    );
  });
  progress(`${build.what} built in ${seconds()} s`);
}

/**
 * Returns `target` (a file or a directory), first running `make` into a partial path that is renamed
 * into place only when complete: an interrupted build never leaves a target that looks finished. While
 * another live process builds the same target (its pid in `<target>.building`), this one waits for it
 * instead of compiling the same thing a second time on the same cores.
 */
export async function buildOnce(target: string, make: (partial: string) => Promise<void>): Promise<string> {
  if (existsSync(target)) return target;
  await mkdir(dirname(target), { recursive: true });
  const lock = `${target}.building`;
  while (!(await takeLock(lock))) {
    if (existsSync(target)) return target;
    if (stopping) throw new Error(`stopped waiting for ${target}: builds in this process were stopped`);
    await sleep(1_000);
  }
  const partial = `${target}.${process.pid}.partial`;
  try {
    if (existsSync(target)) return target;
    await make(partial);
    await rename(partial, target).catch((err: unknown) => {
      // A directory cannot replace another: someone else finished first, and theirs is as good.
      if (!existsSync(target)) throw err;
    });
  } finally {
    await rm(partial, { recursive: true, force: true });
    await rm(lock, { force: true });
  }
  return target;
}

/** Takes the build lock, or says false while a live process holds it; a dead holder's lock is taken over. */
async function takeLock(lock: string): Promise<boolean> {
  try {
    await writeFile(lock, String(process.pid), { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const text = await readFile(lock, 'utf8').catch(() => undefined);
  if (text === undefined) return false; // released meanwhile: try again
  const holder = Number(text);
  // An empty lock is one being written right now, unless it is old.
  const stale =
    holder > 0
      ? !alive(holder)
      : Date.now() - ((await stat(lock).catch(() => undefined))?.mtimeMs ?? Date.now()) > 10_000;
  if (stale) await rm(lock, { force: true });
  return false;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Returns the path of the control plane binary, building it first if this source hash has none. */
export async function ensureControlPlaneBinary(progress: Progress = () => {}): Promise<string> {
  const binary = join(cacheDir(), `controlplane-${await sourceHash(controlPlaneModuleDir)}`);
  return buildOnce(binary, async (partial) => {
    const version = await requiredVersion(controlPlaneModuleDir, 'k8s.io/kubernetes');
    const [major, minor] = version.slice(1).split('.');
    const pkg = 'k8s.io/component-base/version';
    progress(
      `building the control plane (Kubernetes ${version}) into ${binary}; the first build takes minutes`,
    );
    await goBuild(
      {
        what: 'control plane',
        moduleDir: controlPlaneModuleDir,
        packages: ['.'],
        ldflags: [
          '-s -w',
          `-X ${pkg}.gitVersion=${version}`,
          `-X ${pkg}.gitMajor=${major}`,
          `-X ${pkg}.gitMinor=${minor}`,
          `-X ${pkg}.gitTreeState=clean`,
          `-X ${pkg}.buildDate=1970-01-01T00:00:00Z`,
        ],
        output: partial,
      },
      progress,
    );
  });
}
