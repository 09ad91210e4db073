// Builds the local control plane binary (testenv/, a Go module) once and caches it outside the repo,
// keyed by a hash of the module's sources, so only the first run on a machine pays the build.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const testenvDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../testenv');

export function cacheDir(): string {
  return (
    process.env.TENANTKIT_CACHE_DIR ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'tenantkit')
  );
}

async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  const files = (await readdir(testenvDir)).filter(
    (f) => f === 'go.mod' || f === 'go.sum' || f.endsWith('.go'),
  );
  for (const file of files.sort()) {
    hash.update(file);
    hash.update(await readFile(join(testenvDir, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

/** The Kubernetes release the module pins, so the binary reports its real version. */
async function kubernetesVersion(): Promise<string> {
  const mod = await readFile(join(testenvDir, 'go.mod'), 'utf8');
  const match = /^\s*k8s\.io\/kubernetes (v\d+\.\d+\.\d+)/m.exec(mod);
  if (!match?.[1]) throw new Error('testenv/go.mod does not require k8s.io/kubernetes');
  return match[1];
}

export type Progress = (line: string) => void;

/** Returns the path of the control plane binary, building it first if this source hash has none. */
export async function ensureControlPlaneBinary(progress: Progress = () => {}): Promise<string> {
  const binary = join(cacheDir(), `controlplane-${await sourceHash()}`);
  if (existsSync(binary)) return binary;
  await mkdir(cacheDir(), { recursive: true });
  const version = await kubernetesVersion();
  const [major, minor] = version.slice(1).split('.');
  const pkg = 'k8s.io/component-base/version';
  const ldflags = [
    '-s -w',
    `-X ${pkg}.gitVersion=${version}`,
    `-X ${pkg}.gitMajor=${major}`,
    `-X ${pkg}.gitMinor=${minor}`,
    `-X ${pkg}.gitTreeState=clean`,
    `-X ${pkg}.buildDate=1970-01-01T00:00:00Z`,
  ].join(' ');
  const partial = `${binary}.${process.pid}.partial`;
  progress(
    `building the control plane (Kubernetes ${version}) into ${binary}; the first build takes minutes`,
  );
  const started = Date.now();
  await new Promise<void>((done, fail) => {
    const child = spawn('go', ['build', '-v', '-trimpath', '-ldflags', ldflags, '-o', partial, '.'], {
      cwd: testenvDir,
      env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    let compiled = 0;
    let tail = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      tail = (tail + chunk).slice(-4000);
      // `go build -v` names each package as it compiles it: report every 100th as a heartbeat.
      for (const line of chunk.split('\n')) {
        if (line.trim() === '' || line.startsWith('go: downloading')) continue;
        compiled++;
        if (compiled % 100 === 0) {
          progress(`  ${compiled} packages compiled (${Math.round((Date.now() - started) / 1000)} s)`);
        }
      }
    });
    child.on('error', fail);
    child.on('exit', (code) =>
      code === 0 ? done() : fail(new Error(`go build failed with exit code ${code}:\n${tail}`)),
    );
  }).catch(async (err: unknown) => {
    await rm(partial, { force: true });
    throw err;
  });
  await rename(partial, binary);
  progress(`control plane built in ${Math.round((Date.now() - started) / 1000)} s`);
  return binary;
}
