// Every bench's command line: `--help` lists its options with their defaults, and an option it does not
// know, or a value given to a flag, ends the run with what was wrong and that list, not a stack trace.
import { type ParseArgsConfig, parseArgs } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** The bench's options parsed from the command line; exits with a usage line on `--help` or a mistake. */
export function benchArgs<const T extends Options>(bench: string, options: T) {
  const usage = `usage: npm run ${bench} -- ${Object.entries(options)
    .map(([name, o]) => (o.type === 'boolean' ? `[--${name}]` : `[--${name} ${shown(o.default)}]`))
    .join(' ')}\n(the values shown are the defaults)`;
  if (process.argv.slice(2).some((a) => a === '--help' || a === '-h')) {
    console.log(usage);
    process.exit(0);
  }
  try {
    return parseArgs({ options });
  } catch (err) {
    console.error(`${bench}: ${err instanceof Error ? err.message : String(err)}\n${usage}`);
    process.exit(2);
  }
}

function shown(value: unknown): string {
  if (Array.isArray(value)) return value.length ? value.join(',') : 'VALUE';
  if (value === undefined || value === '') return 'VALUE';
  return /\s/.test(String(value)) ? `"${value}"` : String(value);
}
