// Every bench's command line: --help lists its options and defaults; a mistake ends with what was wrong.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const benchDir = join(import.meta.dirname, '../../bench');
const benches = readdirSync(benchDir).filter(
  (f) => f.endsWith('.ts') && readFileSync(join(benchDir, f), 'utf8').includes('benchArgs('),
);

describe('bench command lines', () => {
  it('are all parsed by benchArgs', () => {
    expect(benches).toContain('faults.ts');
    expect(benches.length).toBeGreaterThanOrEqual(14);
  });

  it.each(benches)(
    '%s: --help prints the options and their defaults',
    async (file) => {
      const help = await run(process.execPath, [join(benchDir, file), '--help']);
      expect(help.stdout).toContain(`usage: npm run bench:${file.replace(/\.ts$/, '')} -- [--`);
    },
    30_000,
  );

  it('ends a run given an unknown option or a flag without its value with what was wrong, exit code 2', async () => {
    for (const args of [['--no-such-option'], ['--rounds']]) {
      const wrong = await run(process.execPath, [join(benchDir, 'faults.ts'), ...args]).catch(
        (err: { code: number; stderr: string }) => err,
      );
      expect(wrong).toMatchObject({ code: 2 });
      expect((wrong as { stderr: string }).stderr).toMatch(
        /^bench:faults: (Unknown option '--no-such-option'|Option '--rounds <value>' argument missing)/,
      );
      expect((wrong as { stderr: string }).stderr).toContain('usage: npm run bench:faults -- ');
    }
  });
});
