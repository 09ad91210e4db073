// The command line of `tenantkit backup|restore`: picks the verb, prints the usage (all of it, or one
// verb's for `VERB --help`), and turns every failure into one line for main's `tenantkit: ...`.
import { explain } from './shared.ts';

export interface Verb {
  /** As typed after `tenantkit backup`, e.g. `logs NAME [--timeout 60s]`. */
  synopsis: string;
  /** What it does, a line or two. */
  summary: string[];
  /** Its own flags, as usage lines. */
  flags?: string[];
  /** `usage` is the synopsis after `tenantkit backup`, for messages about wrong arguments. */
  run: (args: string[], usage: string) => Promise<void>;
}

export interface CommandLine {
  noun: 'backup' | 'restore';
  /** One sentence under the usage line. */
  about: string;
  /** In the order the usage lists them. */
  verbs: Record<string, Verb>;
}

const everyCommandFlags = [
  'Flags of every command:',
  "  -n, --namespace NS   (default: the kubeconfig context's namespace)   --kubeconfig FILE   --context NAME",
];

/** A verb's lines in the command list: synopsis, its summary in a column, then its flags. */
function verbLines(verb: Verb): string[] {
  const column = 30;
  const [first = '', ...more] = verb.summary;
  const synopsis = verb.synopsis.length < column ? verb.synopsis.padEnd(column) : `${verb.synopsis}   `;
  return [
    `  ${synopsis}${first}`,
    ...more.map((line) => `${' '.repeat(column + 2)}${line}`),
    ...(verb.flags ?? []),
  ];
}

function commandUsage(command: CommandLine): string {
  const { noun } = command;
  return [
    `${`Usage: tenantkit ${noun} COMMAND [flags]`.padEnd(44)}(also: kubectl tenantkit ${noun} ...)`,
    '',
    command.about,
    '',
    'Commands:',
    ...Object.values(command.verbs).flatMap(verbLines),
    '',
    ...everyCommandFlags,
    '',
  ].join('\n');
}

function verbUsage(command: CommandLine, verb: Verb): string {
  return [
    `Usage: tenantkit ${command.noun} ${verb.synopsis}`,
    '',
    ...verb.summary.map((line) => `  ${line}`),
    ...(verb.flags ? ['', 'Flags:', ...verb.flags] : []),
    '',
    ...everyCommandFlags,
    '',
  ].join('\n');
}

const isHelp = (arg: string) => arg === '--help' || arg === '-h';

/** `a, b or c`. */
const alternatives = (words: string[]) => `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;

export async function runCommand(command: CommandLine, args: string[]): Promise<void> {
  const [name, ...rest] = args;
  if (name === undefined || name === 'help' || isHelp(name)) {
    process.stdout.write(commandUsage(command));
    return;
  }
  const verb = Object.hasOwn(command.verbs, name) ? command.verbs[name] : undefined;
  if (!verb) {
    throw new Error(
      `unknown command "${command.noun} ${name}": use ${alternatives(Object.keys(command.verbs))} (tenantkit ${command.noun} --help)`,
    );
  }
  if (rest.some(isHelp)) {
    process.stdout.write(verbUsage(command, verb));
    return;
  }
  const usage = `tenantkit ${command.noun} ${verb.synopsis}`;
  try {
    await verb.run(rest, usage);
  } catch (err) {
    throw explain(unknownFlag(err, usage) ?? err);
  }
}

/** node's parseArgs explains an unknown flag with advice about `--`; say which command does not take it. */
function unknownFlag(err: unknown, usage: string): Error | undefined {
  if ((err as NodeJS.ErrnoException)?.code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return undefined;
  const flag = /'([^']+)'/.exec((err as Error).message)?.[1] ?? 'flag';
  const command = usage.split(' ').slice(0, 3).join(' ');
  return new Error(`unknown flag ${flag} for ${command}; see ${command} --help`);
}

/** The one NAME a verb acts on, with a message that says what is missing. */
export function oneName(positionals: string[], noun: string, usage: string): string {
  if (positionals.length !== 1) throw new Error(`give exactly one ${noun} name: ${usage}`);
  return positionals[0]!;
}
