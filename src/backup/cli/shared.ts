// What `tenantkit backup` and `tenantkit restore` share: the user's kubeconfig and namespace, kubectl-like
// output, one-line errors, confirmation, and waiting for Velero to finish.
import { createInterface } from 'node:readline/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { ApiError, KubeClient } from '../../kube/client.ts';
import type { KubeObject, ResourceType } from '../../kube/resources.ts';

/** Flags every tenant command takes, as kubectl spells them. */
export const connectionOptions = {
  namespace: { type: 'string', short: 'n' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
} as const;

export interface Session {
  client: KubeClient;
  namespace: string;
}

/** The user's kubeconfig (--kubeconfig, else $KUBECONFIG or ~/.kube/config) and namespace (-n, else the context's). */
export function session(values: { namespace?: string; kubeconfig?: string; context?: string }): Session {
  let client: KubeClient;
  try {
    client = values.kubeconfig
      ? KubeClient.fromKubeconfig({ path: values.kubeconfig }, values.context)
      : KubeClient.fromDefault(values.context);
  } catch (err) {
    const message = (err as Error).message.split('\n')[0]!;
    if (message.startsWith('context "')) throw new Error(message);
    const fromEnvironment = process.env.KUBECONFIG ? `${process.env.KUBECONFIG} ($KUBECONFIG)` : undefined;
    const file = values.kubeconfig ?? fromEnvironment ?? '~/.kube/config';
    throw new Error(`cannot read kubeconfig ${file}: ${message}`);
  }
  // Admission warnings (e.g. "not enabled yet") reach the user as kubectl prints them.
  client.onWarning = (warning) => process.stderr.write(`Warning: ${warning}\n`);
  const namespace = values.namespace ?? client.credentials.namespace ?? 'default';
  return { client, namespace };
}

/** Turns API errors into kubectl's one line (`Error from server (Forbidden): ...`), and transport errors too. */
export function explain(err: unknown, server?: URL): Error {
  if (err instanceof ApiError) {
    const reason =
      err.reason ||
      (err.status === 403 ? 'Forbidden' : err.status === 404 ? 'NotFound' : `HTTP ${err.status}`);
    return new Error(`Error from server (${reason}): ${oneLine(err.message)}`);
  }
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ECONNREFUSED' || e?.code === 'ENOTFOUND' || e?.code === 'ECONNRESET') {
    return new Error(
      `cannot reach the API server${server ? ` at ${server.origin}` : ''}: ${e.code}; check your kubeconfig`,
    );
  }
  return err instanceof Error ? new Error(oneLine(err.message)) : new Error(String(err));
}

const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ').trim();

export type OutputFormat = 'table' | 'json' | 'yaml' | 'name';

export function outputFormat<F extends OutputFormat = OutputFormat>(
  value: string | undefined,
  allowed: F[] = ['table', 'json', 'yaml', 'name'] as F[],
): F {
  const format = (value ?? 'table') as F;
  if (!allowed.includes(format)) {
    throw new Error(`unknown output format "${value}": use ${allowed.join(', ')}`);
  }
  return format;
}

/** Prints objects as kubectl does: one object as itself, several as a v1 List. */
export function printObjects(
  objects: KubeObject[],
  format: 'json' | 'yaml' | 'name',
  type: ResourceType,
  single: boolean,
) {
  if (format === 'name') {
    for (const o of objects)
      process.stdout.write(`${type.kind.toLowerCase()}.${type.group}/${o.metadata.name}\n`);
    return;
  }
  const value = single
    ? objects[0]
    : { apiVersion: 'v1', kind: 'List', items: objects, metadata: { resourceVersion: '' } };
  process.stdout.write(format === 'json' ? `${JSON.stringify(value, null, 4)}\n` : stringify(value));
}

/** A kubectl-style table: upper-case headers, columns three spaces apart. */
export function renderRows(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('   ')
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join('\n')}\n`;
}

/** Velero's time format: `2006-01-02 15:04:05 -0700 MST`, in UTC. */
export function veleroTime(value: string | null | undefined): string {
  if (!value) return '<n/a>';
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return value;
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} +0000 UTC`;
}

/** A short duration as kubectl prints ages: 45s, 12m, 5h, 29d. */
export function shortDuration(ms: number): string {
  const s = Math.floor(Math.abs(ms) / 1000);
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

/**
 * Asks before something that cannot be undone. `--confirm` skips the question; without a terminal to ask
 * on, the answer is no, and the message says how to go on.
 */
export async function confirmed(
  question: string,
  confirm: boolean | undefined,
  refusal: string,
): Promise<boolean> {
  if (confirm) return true;
  if (!process.stdin.isTTY)
    throw new Error(`${refusal}: stdin is not a terminal to ask on; run again with --confirm`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = (await rl.question(`${question} (y/N): `)).trim().toLowerCase();
    return answer === 'y' || answer === 'yes';
  } finally {
    rl.close();
  }
}

/**
 * Polls an object until `done` returns a result; undefined `get` (deleted) is an error. Prints a dot per
 * poll on a terminal, as velero does.
 */
export async function waitFor<T extends KubeObject, R>(
  get: () => Promise<T | undefined>,
  done: (o: T) => R | undefined | Promise<R | undefined>,
  what: string,
  intervalMs = 1000,
): Promise<R> {
  for (;;) {
    const o = await get();
    if (!o) throw new Error(`${what} was deleted while waiting for it`);
    const result = await done(o);
    if (result !== undefined) {
      if (process.stdout.isTTY) process.stdout.write('\n');
      return result;
    }
    if (process.stdout.isTTY) process.stdout.write('.');
    await sleep(intervalMs);
  }
}
