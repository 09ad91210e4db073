// `tenantkit dev`'s logs: every component's JSON log lines go to a file (.tenantkit/tenantkit.log), and
// the terminal, which is for people, gets only warnings and errors, one plain line each. With
// --log-to-terminal the JSON lines go to the terminal instead, as before.
import { createWriteStream } from 'node:fs';
import { Writable } from 'node:stream';
import { type Logger, pino } from 'pino';

const levelNames: Record<number, string> = { 40: 'warning', 50: 'error', 60: 'fatal' };
/** Fields pino writes on every line, which the plain line leaves out. */
const envelope = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'name', 'component']);

/** One JSON log line as a line for people: `12:03:04 warning: message (controller=x, err=...)`. */
export function plainLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 19) : '';
  const level = levelNames[Number(entry.level)] ?? 'info';
  const details = Object.entries(entry)
    .filter(([k]) => !envelope.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v.split('\n')[0] : JSON.stringify(v)}`);
  const where = details.length > 0 ? ` (${details.join(', ')})` : '';
  return `${time} ${level}: ${String(entry.msg ?? '')}${where}`;
}

/** A stream that writes each JSON line it gets as a plain line to `out`. */
function plainStream(out: NodeJS.WritableStream): Writable {
  let rest = '';
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) if (line.trim() !== '') out.write(`${plainLine(line)}\n`);
      done();
    },
  });
}

/**
 * The dev logger: JSON to `file` at LOG_LEVEL (default info) and warnings and errors as plain lines on
 * stderr; or, with `toTerminal`, JSON on stdout as before.
 */
export function devLogger(file: string, toTerminal: boolean): Logger {
  const level = process.env.LOG_LEVEL ?? 'info';
  const options = {
    name: 'tenantkit-dev',
    level,
    base: { component: 'tenantkit-dev' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (toTerminal) return pino(options);
  const streams = pino.multistream([
    { level: level as pino.Level, stream: createWriteStream(file, { flags: 'a' }) },
    { level: 'warn', stream: plainStream(process.stderr) },
  ]);
  return pino(options, streams);
}
