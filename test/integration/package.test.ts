// The npm package as a user gets it: `npm pack` (whose prepack compiles src/ to dist/), the tarball
// installed into a fresh project outside this checkout, and the installed `tenantkit` and
// `kubectl-tenantkit` commands run on Node 24, and refused with a clear message on an older Node.
// Needs the npm registry (the tarball's dependencies); the local npm cache is preferred.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheDir, controlPlaneModuleDir, sourceHash } from '../../devenv/controlplane/build.ts';
import { restoreGuardModuleDir, veleroModuleDir } from '../../devenv/velero/build.ts';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const major = (node: string) =>
  Number(spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout?.split('.')[0]);

/** Node 24: the one running the tests (npm scripts and npx put the project's own first on PATH), or the project's. */
const node24 = major(process.execPath) >= 24 ? process.execPath : join(repo, 'node_modules/node/bin/node');
const pathDirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
/** A Node older than 24 on this machine (the machine's default), if there is one. */
const oldNode = pathDirs.map((dir) => join(dir, 'node')).find((node) => existsSync(node) && major(node) < 24);
const kubectl = pathDirs.map((dir) => join(dir, 'kubectl')).find((file) => existsSync(file));

// npm hands its scripts the checkout's prefix and package fields; the fresh project must not inherit them.
const npmEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !/^npm_(package_|lifecycle_|config_(local_|global_)?prefix$)/i.test(k),
  ),
);

function run(command: string, args: string[], options: { cwd: string; path?: string[] }) {
  const env = options.path ? { ...npmEnv, PATH: [...options.path, ...pathDirs].join(delimiter) } : npmEnv;
  const result = spawnSync(command, args, { cwd: options.cwd, env, encoding: 'utf8', timeout: 150_000 });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function ok(result: ReturnType<typeof run>): string {
  if (result.status !== 0) throw new Error(`exit code ${result.status}:\n${result.stderr}`);
  return result.stdout;
}

describe('the npm package', () => {
  let dir = '';
  let project = '';
  let installed = '';
  let bin = '';
  let files: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tenantkit-package-'));
    const packed = JSON.parse(
      ok(run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: repo })),
    ) as Array<{ filename: string; files: Array<{ path: string }> }>;
    files = packed[0]!.files.map((f) => f.path);
    project = join(dir, 'project');
    await mkdir(project);
    await writeFile(join(project, 'package.json'), '{ "name": "uses-tenantkit", "private": true }\n');
    ok(
      run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(dir, packed[0]!.filename)], {
        cwd: project,
      }),
    );
    installed = join(project, 'node_modules/tenantkit');
    bin = join(project, 'node_modules/.bin');
  }, 180_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('holds the compiled JavaScript, the bin and the Go sources of devenv/go/, and no TypeScript', () => {
    expect(files).toContain('dist/src/cli/main.js');
    expect(files).toContain('dist/devenv/dev/command.js');
    expect(files).toContain('bin/tenantkit.mjs');
    expect(files).toContain('package.json');
    for (const f of [
      'controlplane/go.mod',
      'controlplane/go.sum',
      'controlplane/main.go',
      'velero/go.mod',
      'velero/go.sum',
      'velero/cmd/velero/main.go',
    ])
      expect(files).toContain(`devenv/go/${f}`);
    for (const f of ['go.mod', 'go.sum', 'main.go']) expect(files).toContain(`plugins/restore-guard/${f}`);
    expect(
      files.filter((f) => f.endsWith('.ts') || /^(src|test|bench|docs|deploy|config)\//.test(f)),
    ).toEqual([]);
  });

  it('installs without the devDependencies', () => {
    for (const dev of ['typescript', 'vitest', 'node', '@biomejs/biome'])
      expect(existsSync(join(project, 'node_modules', dev)), dev).toBe(false);
  });

  it('runs `tenantkit version` and `tenantkit crds` on Node 24', () => {
    const path = [dirname(node24), bin];
    expect(ok(run('tenantkit', ['version'], { cwd: project, path }))).toBe('tenantkit 0.1.0\n');
    const crds = ok(run('tenantkit', ['crds'], { cwd: project, path }));
    expect(crds).toMatch(/^---\napiVersion: apiextensions\.k8s\.io\/v1\nkind: CustomResourceDefinition\n/);
    expect(crds).toContain('name: scopetemplates.operators.coreos.com');
  });

  it('is a kubectl plugin: kubectl-tenantkit', () => {
    const path = [dirname(node24), bin];
    expect(ok(run('kubectl-tenantkit', ['version'], { cwd: project, path }))).toBe('tenantkit 0.1.0\n');
    if (kubectl)
      expect(ok(run(kubectl, ['tenantkit', 'version'], { cwd: project, path }))).toBe('tenantkit 0.1.0\n');
  });

  it('ships devenv/go/ so that `tenantkit dev` builds the same control plane and Velero', async () => {
    expect(await sourceHash(join(installed, 'devenv/go/controlplane'))).toBe(
      await sourceHash(controlPlaneModuleDir),
    );
    expect(await sourceHash(join(installed, 'devenv/go/velero'))).toBe(await sourceHash(veleroModuleDir));
    expect(await sourceHash(join(installed, 'plugins/restore-guard'))).toBe(
      await sourceHash(restoreGuardModuleDir),
    );
    // The global setup has built (or found) this control plane: the installed package finds it too.
    const path = [dirname(node24), bin];
    expect(ok(run('tenantkit', ['controlplane', 'build'], { cwd: project, path })).trim()).toBe(
      join(cacheDir(), `controlplane-${await sourceHash(controlPlaneModuleDir)}`),
    );
  });

  it.skipIf(!oldNode)('refuses an older Node with a message naming Node.js 24', () => {
    const path = [dirname(oldNode!), bin];
    for (const command of ['tenantkit', 'kubectl-tenantkit']) {
      const result = run(command, ['version'], { cwd: project, path });
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/tenantkit needs Node\.js 24 or newer, and this is Node\.js v\d+/);
    }
  });
});
