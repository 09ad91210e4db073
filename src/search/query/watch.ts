// The `watch` subscription: changes in the index, each filtered by the subscriber's search and access set
// in SQL. Triggers on search.resources record changes only while some API replica holds an unexpired
// row in tenantkit_search.watchers, and NOTIFY; every replica LISTENs and also polls, so a dropped
// notification only delays an event.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from 'pino';
import { untilAborted } from '../../kube/abort.ts';
import type { AccessSet, SearchEvent, SearchInput } from '../model.ts';
import { accessPredicate } from './access-sql.ts';
import { inputConditions } from './filters.ts';
import { formatItem } from './items.ts';
import { and, documentColumns, Params } from './sql.ts';

export interface WatchHubOptions {
  pool: pg.Pool;
  hubCluster: string;
  logger: Logger;
  /** Poll even without a notification this often (default 1 s). */
  pollMs?: number;
  /** Keep recorded changes this long (default 2 min). */
  retentionMs?: number;
}

interface Subscriber {
  /** Read on every delivery, so a permission revoked mid-watch stops the events it no longer allows. */
  access: () => AccessSet;
  input: SearchInput;
  last: number;
  queue: SearchEvent[];
  wake?: () => void;
}

interface EventRow {
  id: string;
  operation: SearchEvent['operation'];
  uid: string;
  cluster: string;
  old_data: Record<string, unknown> | null;
  new_data: Record<string, unknown> | null;
  at: Date;
}

const channel = 'tenantkit_search_events';
const heartbeatMs = 10_000;

export class WatchHub {
  private readonly options: WatchHubOptions;
  private readonly id = randomUUID();
  private readonly subscribers = new Set<Subscriber>();
  private polling?: Promise<void>;
  private again = false;

  constructor(options: WatchHubOptions) {
    this.options = options;
  }

  /** LISTENs, polls, keeps this replica's watcher row alive and prunes old changes until `signal`. */
  async run(signal: AbortSignal): Promise<void> {
    const poll = setInterval(() => this.kick(), this.options.pollMs ?? 1000);
    const beat = setInterval(() => {
      void this.heartbeat().catch((err) =>
        this.options.logger.warn({ err: String(err) }, 'watch heartbeat failed'),
      );
      void this.prune().catch(() => {});
    }, heartbeatMs);
    try {
      while (!signal.aborted) {
        await this.listen(signal).catch((err) =>
          this.options.logger.warn({ err: String(err) }, 'watch listener lost its connection; reconnecting'),
        );
        if (!signal.aborted) await new Promise((r) => setTimeout(r, 1000));
      }
    } finally {
      clearInterval(poll);
      clearInterval(beat);
      for (const s of this.subscribers) s.wake?.();
      await this.options.pool
        .query('DELETE FROM tenantkit_search.watchers WHERE id = $1', [this.id])
        .catch(() => {});
    }
  }

  /** Changes matching `input` within `access` (as it is at each delivery), from now until `signal` aborts. */
  async *subscribe(
    access: () => AccessSet,
    input: SearchInput,
    signal: AbortSignal,
  ): AsyncGenerator<SearchEvent> {
    const subscriber: Subscriber = { access, input, last: 0, queue: [] };
    // Register as a watcher before reading the high-water mark, so no change falls between the two.
    this.subscribers.add(subscriber);
    try {
      await this.heartbeat();
      const max = await this.options.pool.query<{ id: string | null }>(
        'SELECT max(id)::text AS id FROM tenantkit_search.events',
      );
      subscriber.last = Number(max.rows[0]?.id ?? 0);
      while (!signal.aborted) {
        const event = subscriber.queue.shift();
        if (event) {
          yield event;
          continue;
        }
        await new Promise<void>((resolve) => {
          subscriber.wake = resolve;
          signal.addEventListener('abort', () => resolve(), { once: true });
        });
      }
    } finally {
      this.subscribers.delete(subscriber);
      if (this.subscribers.size === 0) {
        await this.options.pool
          .query('DELETE FROM tenantkit_search.watchers WHERE id = $1', [this.id])
          .catch(() => {});
      }
    }
  }

  private async listen(signal: AbortSignal): Promise<void> {
    const client = await this.options.pool.connect();
    try {
      await client.query(`LISTEN ${channel}`);
      const onNotify = () => this.kick();
      client.on('notification', onNotify);
      await new Promise<void>((resolve, reject) => {
        client.once('error', reject);
        untilAborted(signal).then(resolve);
      });
      client.off('notification', onNotify);
      await client.query(`UNLISTEN ${channel}`).catch(() => {});
      client.release();
    } catch (err) {
      client.release(true);
      throw err;
    }
  }

  private async heartbeat(): Promise<void> {
    if (this.subscribers.size === 0) return;
    await this.options.pool.query(
      `INSERT INTO tenantkit_search.watchers (id, expires) VALUES ($1, now() + interval '30 seconds')
       ON CONFLICT (id) DO UPDATE SET expires = EXCLUDED.expires`,
      [this.id],
    );
  }

  private async prune(): Promise<void> {
    const seconds = Math.ceil((this.options.retentionMs ?? 120_000) / 1000);
    await this.options.pool.query(
      `DELETE FROM tenantkit_search.events WHERE at < now() - make_interval(secs => $1)`,
      [seconds],
    );
    await this.options.pool.query('DELETE FROM tenantkit_search.watchers WHERE expires < now()');
  }

  private kick(): void {
    if (this.subscribers.size === 0) return;
    if (this.polling) {
      this.again = true;
      return;
    }
    this.polling = this.deliver()
      .catch((err) => this.options.logger.warn({ err: String(err) }, 'watch delivery failed'))
      .finally(() => {
        this.polling = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async deliver(): Promise<void> {
    const max = await this.options.pool.query<{ id: string | null }>(
      'SELECT max(id)::text AS id FROM tenantkit_search.events',
    );
    const high = Number(max.rows[0]?.id ?? 0);
    for (const s of this.subscribers) {
      if (s.last >= high) continue;
      const access = s.access();
      const p = new Params();
      const cols = documentColumns('coalesce(e.new_data, e.old_data)', 'e.cluster');
      const where = and([
        `e.id > ${p.add(s.last)}`,
        `e.id <= ${p.add(high)}`,
        ...inputConditions(s.input, cols, p),
        accessPredicate(access, this.options.hubCluster, cols, p),
      ]);
      const rows = await this.options.pool.query<EventRow>({
        text: `SELECT e.id, e.operation, e.uid, e.cluster, e.old_data, e.new_data, e.at
               FROM tenantkit_search.events e WHERE ${where} ORDER BY e.id`,
        values: p.values,
      });
      s.last = high;
      for (const row of rows.rows) {
        s.queue.push({
          uid: row.uid,
          operation: row.operation,
          ...(row.new_data ? { newData: formatItem(row.uid, row.cluster, row.new_data) } : {}),
          ...(row.old_data ? { oldData: formatItem(row.uid, row.cluster, row.old_data) } : {}),
          timestamp: row.at.toISOString(),
        });
      }
      if (rows.rows.length > 0) s.wake?.();
    }
  }
}
