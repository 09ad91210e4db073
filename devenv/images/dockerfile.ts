// Reads the small subset of Dockerfile syntax tenantkit's own Dockerfile uses, so that the image built
// here without Docker follows the very steps a user's `docker build` runs (one recipe, no drift).
// Anything outside the subset is refused with the line that holds it.

export type DockerStep =
  | { kind: 'from'; image: string }
  | { kind: 'workdir'; path: string }
  | { kind: 'copy'; sources: string[]; target: string }
  | { kind: 'run'; command: string }
  | { kind: 'env'; name: string; value: string }
  | { kind: 'user'; user: string }
  | { kind: 'entrypoint'; words: string[] }
  | { kind: 'cmd'; words: string[] };

/** The Dockerfile's instructions in order (continuation lines joined, comments dropped). */
export function parseDockerfile(text: string): DockerStep[] {
  const steps: DockerStep[] = [];
  let pending = '';
  let startLine = 0;
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) return;
    if (pending === '') startLine = index + 1;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    steps.push(parseInstruction(pending + line, startLine));
    pending = '';
  });
  if (pending !== '') throw new Error(`Dockerfile line ${startLine}: continued past the end of the file`);
  return steps;
}

function parseInstruction(text: string, line: number): DockerStep {
  const match = /^(\w+)\s+(.*)$/.exec(text);
  const fail = (why: string) => new Error(`Dockerfile line ${line}: ${why}: ${text}`);
  if (!match) throw fail('expected INSTRUCTION ARGUMENTS');
  const [, instruction = '', rest = ''] = match;
  switch (instruction.toUpperCase()) {
    case 'FROM':
      return { kind: 'from', image: rest.trim() };
    case 'WORKDIR':
      return { kind: 'workdir', path: rest.trim() };
    case 'RUN':
      return { kind: 'run', command: rest.trim() };
    case 'USER':
      return { kind: 'user', user: rest.trim() };
    case 'COPY': {
      const words = rest.trim().split(/\s+/);
      if (words.some((w) => w.startsWith('--'))) throw fail('COPY flags are not supported');
      if (words.length < 2) throw fail('COPY needs a source and a target');
      return { kind: 'copy', sources: words.slice(0, -1), target: words[words.length - 1] ?? '' };
    }
    case 'ENV': {
      const env = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(rest.trim());
      if (!env) throw fail('ENV must be NAME=VALUE');
      return { kind: 'env', name: env[1] ?? '', value: env[2] ?? '' };
    }
    case 'ENTRYPOINT':
    case 'CMD': {
      let words: unknown;
      try {
        words = JSON.parse(rest);
      } catch {
        words = undefined;
      }
      if (!Array.isArray(words) || !words.every((w) => typeof w === 'string')) {
        throw fail(`${instruction} must be a JSON array of strings`);
      }
      return instruction.toUpperCase() === 'CMD' ? { kind: 'cmd', words } : { kind: 'entrypoint', words };
    }
    default:
      throw fail(`${instruction} is not supported here`);
  }
}
