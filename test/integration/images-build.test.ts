// The images tenantkit ships, built without Docker: the same inputs give the same digest, and the
// tenantkit image holds exactly what the Dockerfile's steps make. No node needed: these files run beside
// others (test/harness/lanes.ts); images.test.ts runs the images on the local node.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type BuiltImage,
  ensurePostgresImage,
  ensureTenantkitImage,
  ensureVeleroImage,
  nodeRuntime,
  repoRoot,
} from '../../devenv/images/build.ts';
import { parseDockerfile } from '../../devenv/images/dockerfile.ts';
import { nodeSkipReason } from '../harness/node.ts';

const run = promisify(execFile);

/** Unpacks a docker archive's layers, in order, into a folder; returns it and the image config. */
async function unpack(archive: string): Promise<{ root: string; config: Record<string, unknown> }> {
  const dir = await mkdtemp(join(tmpdir(), 'tk-image-'));
  await run('tar', ['-xf', archive, '-C', dir]);
  const [manifest] = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as {
    Config: string;
    Layers: string[];
  }[];
  const root = join(dir, 'rootfs');
  await mkdir(root);
  for (const layer of manifest!.Layers) await run('tar', ['-xf', join(dir, layer), '-C', root]);
  const config = JSON.parse(await readFile(join(dir, manifest!.Config), 'utf8')).config;
  return { root, config };
}

/** Every file under a folder: relative path -> sha256 (or "-> target" for a symlink) and exec bit. */
async function tree(dir: string, sub = ''): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(join(dir, sub), { withFileTypes: true })) {
    const path = sub ? `${sub}/${entry.name}` : entry.name;
    const full = join(dir, path);
    if (entry.isDirectory()) {
      for (const [k, v] of await tree(dir, path)) out.set(k, v);
    } else if (entry.isSymbolicLink()) {
      out.set(path, `-> ${await readlink(full)}`);
    } else {
      const mode = (await stat(full)).mode & 0o111 ? 'x' : '-';
      out.set(
        path,
        `${mode} ${createHash('sha256')
          .update(await readFile(full))
          .digest('hex')}`,
      );
    }
  }
  return out;
}

// The node's build (its runtime) is what the image builds use: where the node cannot run, neither can they.
describe.skipIf(nodeSkipReason)('building the images tenantkit ships', () => {
  const images: Record<'tenantkit' | 'velero' | 'postgres', BuiltImage> = {} as never;
  const progress = (line: string) => console.log(`[images] ${line}`);

  beforeAll(async () => {
    images.tenantkit = await ensureTenantkitImage({ progress });
    images.velero = await ensureVeleroImage({ progress });
    images.postgres = await ensurePostgresImage({ progress });
  }, 20 * 60_000);

  it('builds the same digest from the same inputs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tk-images-again-'));
    try {
      for (const [build, first] of [
        [ensureTenantkitImage, images.tenantkit],
        [ensurePostgresImage, images.postgres],
        [ensureVeleroImage, images.velero],
      ] as const) {
        const again = await build({ into: join(dir, first.ref.split(/[/:]/)[1]!) });
        expect(again.ref).toBe(first.ref);
        expect(again.digest).toBe(first.digest);
        expect(first.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it("holds exactly what the Dockerfile's steps make, with its user, folder and entrypoint", async () => {
    const { root, config } = await unpack(images.tenantkit.archive);
    const app = await tree(join(root, 'app'));
    // The Dockerfile's COPY and RUN steps, done apart from the image build, as `docker build` would do them.
    const staged = await mkdtemp(join(tmpdir(), 'tk-dockerfile-'));
    try {
      const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
      const steps = parseDockerfile(dockerfile);
      const runs = steps.flatMap((s) => (s.kind === 'run' ? [s.command] : []));
      expect(runs.join(' ')).toContain('npm prune --omit=dev');
      for (const step of steps) {
        if (step.kind === 'copy') {
          for (const source of step.sources) {
            const target = step.target.endsWith('/') ? join(step.target, basename(source)) : step.target;
            await cp(join(repoRoot, source), join(staged, target), { recursive: true });
          }
        }
        if (step.kind === 'run') {
          await run('sh', ['-c', step.command], {
            cwd: staged,
            env: { ...process.env, PATH: `${dirname(nodeRuntime())}:${process.env.PATH}` },
          });
        }
      }
      const expected = await tree(staged);
      expect(expected.has('node_modules/pg/package.json')).toBe(true);
      expect([...app.keys()].sort()).toEqual([...expected.keys()].sort());
      const differing = [...expected].filter(([k, v]) => app.get(k) !== v).map(([k]) => k);
      expect(differing).toEqual([]);
      expect(config).toMatchObject({
        User: /^USER (.*)$/m.exec(dockerfile)?.[1],
        WorkingDir: /^WORKDIR (.*)$/m.exec(dockerfile)?.[1],
        Entrypoint: JSON.parse(/^ENTRYPOINT (.*)$/m.exec(dockerfile)?.[1] ?? 'null'),
      });
      // Compiled JavaScript only, nothing for development: no sources, no test code, no dev packages.
      expect(app.has('dist/src/cli/main.js')).toBe(true);
      const development = [...app.keys()].filter((k) =>
        /^(src|test|devenv)\/|dist\/devenv\/|node_modules\/(vitest|typescript|@biomejs)\//.test(k),
      );
      expect(development).toEqual([]);
    } finally {
      await rm(staged, { recursive: true, force: true });
      await rm(join(root, '..'), { recursive: true, force: true });
    }
  }, 300_000);
});
