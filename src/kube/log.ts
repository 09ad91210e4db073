// JSON logs, one line per event, object keys as fields. LOG_LEVEL sets the level (default info).
import { type Logger, pino } from 'pino';

export type { Logger };

export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({ name, level, base: { component: name }, timestamp: pino.stdTimeFunctions.isoTime });
}

/** A logger that drops everything, for tests that assert on behaviour rather than output. */
export const silentLogger: Logger = pino({ level: 'silent' });
