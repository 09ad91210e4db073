// buildOnce: one build per target, whoever asks, and a dead builder's lock taken over.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildOnce } from '../../devenv/controlplane/build.ts';

let dir = '';
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('buildOnce', () => {
  it('builds a target once when two ask at the same time; the second waits for the first', async () => {
    dir = await mkdtemp(join(tmpdir(), 'build-once-'));
    const target = join(dir, 'tool');
    let builds = 0;
    const make = async (partial: string) => {
      builds++;
      await new Promise((r) => setTimeout(r, 1_500));
      await writeFile(partial, 'built');
    };
    const [a, b] = await Promise.all([buildOnce(target, make), buildOnce(target, make)]);
    expect([a, b]).toEqual([target, target]);
    expect(builds).toBe(1);
    expect(await readFile(target, 'utf8')).toBe('built');
    expect(existsSync(`${target}.building`)).toBe(false);
  });

  it('takes over the lock of a builder that died, and leaves no partial behind after a failed build', async () => {
    dir = await mkdtemp(join(tmpdir(), 'build-once-'));
    const target = join(dir, 'tool');
    // A pid no process has (above Linux's pid_max).
    await writeFile(`${target}.building`, '99999999');
    await expect(
      buildOnce(target, async () => {
        throw new Error('compiler crashed');
      }),
    ).rejects.toThrow('compiler crashed');
    expect(existsSync(target)).toBe(false);
    expect(existsSync(`${target}.building`)).toBe(false);
    await buildOnce(target, (partial) => writeFile(partial, 'second try'));
    expect(await readFile(target, 'utf8')).toBe('second try');
  });
});
