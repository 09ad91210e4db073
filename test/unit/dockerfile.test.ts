// The Dockerfile subset the image build without Docker follows: the repository's own Dockerfile parses,
// and anything outside the subset is refused with its line.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseDockerfile } from '../../devenv/images/dockerfile.ts';

describe('parseDockerfile', () => {
  it("reads the repository's Dockerfile into its steps, in order", () => {
    const steps = parseDockerfile(readFileSync('Dockerfile', 'utf8'));
    expect(steps.map((s) => s.kind)).toEqual([
      'from',
      'workdir',
      'copy',
      'copy',
      'run',
      'copy',
      'user',
      'entrypoint',
    ]);
    const run = steps.find((s) => s.kind === 'run');
    expect(run?.kind === 'run' && run.command.split(/\s*&&\s*/)).toEqual([
      'npm ci --omit=optional --ignore-scripts --no-audit --no-fund',
      'npm run build',
      'npm prune --omit=dev --omit=optional --no-audit --no-fund',
      'rm -rf src tsconfig.json tsconfig.build.json',
    ]);
  });

  it('joins continued lines, skips comments and blank lines, and reads JSON forms', () => {
    const steps = parseDockerfile(
      [
        '# a comment',
        '',
        'FROM scratch',
        'RUN a \\',
        '    b',
        'ENV PATH=/bin:/x',
        'COPY x y /dst/',
        'CMD ["serve", "--port", "1"]',
      ].join('\n'),
    );
    expect(steps).toEqual([
      { kind: 'from', image: 'scratch' },
      { kind: 'run', command: 'a  b' },
      { kind: 'env', name: 'PATH', value: '/bin:/x' },
      { kind: 'copy', sources: ['x', 'y'], target: '/dst/' },
      { kind: 'cmd', words: ['serve', '--port', '1'] },
    ]);
  });

  it('refuses what it cannot follow, naming the line', () => {
    expect(() => parseDockerfile('FROM x\nADD http://example.com/a /a')).toThrow(
      /^Dockerfile line 2: ADD is not supported here/,
    );
    expect(() => parseDockerfile('FROM x\nCOPY --chown=1 a /a')).toThrow(
      /line 2: COPY flags are not supported/,
    );
    expect(() => parseDockerfile('ENTRYPOINT node main.js')).toThrow(
      /line 1: ENTRYPOINT must be a JSON array of strings/,
    );
    expect(() => parseDockerfile('ENV A B')).toThrow(/line 1: ENV must be NAME=VALUE/);
    expect(() => parseDockerfile('RUN a \\')).toThrow(/line 1: continued past the end of the file/);
  });
});
