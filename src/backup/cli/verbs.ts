// The verbs `tenantkit backup` and `tenantkit restore` share, written once against the kind table
// (kind.ts): get, describe, logs and delete (create is in create.ts).
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { oneName, type Verb } from './command.ts';
import type { DescribeExtras } from './describe.ts';
import { downloadFile } from './download.ts';
import {
  commonColumns,
  getOperation,
  isFinished,
  type NonAdminOperation,
  nameColumn,
  type OperationKind,
  phaseOf,
  veleroFile,
} from './kind.ts';
import {
  confirmed,
  connectionOptions,
  explain,
  outputFormat,
  printObjects,
  renderRows,
  type Session,
  session,
} from './shared.ts';

type SharedVerb = 'get' | 'describe' | 'logs' | 'delete';

export function sharedVerbs<T extends NonAdminOperation>(kind: OperationKind<T>): Record<SharedVerb, Verb> {
  const { noun } = kind;
  return {
    get: {
      synopsis: 'get [NAME] [-o table|json|yaml|name]',
      summary: [`list ${noun}s, or show one`],
      run: (args, usage) => get(kind, args, usage),
    },
    describe: {
      synopsis: 'describe NAME [--details]',
      summary: [
        `what velero ${noun} describe shows; --details adds the resource list and`,
        'the errors and warnings, downloaded from Velero',
      ],
      run: (args, usage) => describe(kind, args, usage),
    },
    logs: {
      synopsis: 'logs NAME [--timeout 60s]',
      summary: [`print Velero's log of the ${noun}`],
      run: (args, usage) => logs(kind, args, usage),
    },
    delete: {
      synopsis: 'delete NAME [--confirm]',
      summary: [kind.deletion.summary],
      run: (args, usage) => remove(kind, args, usage),
    },
  };
}

/** The arguments of a verb that acts on one NAME: the connection flags and its own `options`. */
function parseNamed<O extends ParseArgsOptionsConfig>(
  noun: string,
  args: string[],
  usage: string,
  options: O,
) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...connectionOptions, ...options },
  });
  return { values, name: oneName(positionals, noun, usage) };
}

async function get<T extends NonAdminOperation>(kind: OperationKind<T>, args: string[], usage: string) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...connectionOptions, output: { type: 'string', short: 'o' } },
  });
  if (positionals.length > 1) throw new Error(`give at most one ${kind.noun} name: ${usage}`);
  const output = outputFormat(values.output);
  const s = session(values);
  const items = positionals[0]
    ? [await getOperation(kind, s, positionals[0])]
    : (await s.client.list<T>(kind.type, { namespace: s.namespace })).items;
  if (output !== 'table') return printObjects(items, output, kind.type, positionals.length === 1);
  if (items.length === 0) {
    process.stderr.write(`No ${kind.noun}s found in ${s.namespace} namespace.\n`);
    return;
  }
  process.stdout.write(operationTable(kind, items, Date.now()));
}

/** The `get` table, as `velero backup|restore get` prints it. */
export function operationTable<T extends NonAdminOperation>(kind: OperationKind<T>, items: T[], now: number) {
  const columns = [nameColumn, ...kind.columns(commonColumns(kind))];
  return renderRows(
    columns.map((c) => c.header),
    items.map((o) => columns.map((c) => c.cell(o, now))),
  );
}

/** Events about one object of the namespace (kubectl describe shows them too); none when not readable. */
async function eventsAbout(s: Session, kind: string, name: string): Promise<DescribeExtras['events']> {
  try {
    const list = await s.client.list<
      KubeObject & {
        type?: string;
        reason?: string;
        note?: string;
        regarding?: { kind?: string; name?: string };
      }
    >(Resources.events, { namespace: s.namespace });
    return list.items
      .filter((e) => e.regarding?.kind === kind && e.regarding?.name === name)
      .sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''));
  } catch {
    return undefined;
  }
}

/** A file parsed as JSON, or the reason it could not be had (shown in its place). */
async function jsonFile<V>(
  s: Session,
  kind: string,
  target: string,
): Promise<{ value: V } | { problem: string }> {
  try {
    return { value: JSON.parse(await downloadFile(s.client, s.namespace, kind, target)) as V };
  } catch (err) {
    return { problem: explain(err).message };
  }
}

async function describe<T extends NonAdminOperation>(kind: OperationKind<T>, args: string[], usage: string) {
  const { values, name } = parseNamed(kind.noun, args, usage, { details: { type: 'boolean' } });
  const s = session(values);
  const o = await getOperation(kind, s, name);
  const extras: DescribeExtras = { details: Boolean(values.details), problems: {} };
  const velero = kind.velero(o);
  if (values.details) {
    // Velero writes no files for an operation it refused to start.
    if (isFinished(velero?.phase) && velero.phase !== 'FailedValidation') {
      const list = await jsonFile<Record<string, unknown[]>>(s, veleroFile(kind, 'ResourceList'), name);
      if ('value' in list) extras.resourceList = list.value;
      else extras.problems!.resourceList = list.problem;
      if ((velero.errors ?? 0) + (velero.warnings ?? 0) > 0) {
        const results = await jsonFile<DescribeExtras['results']>(s, veleroFile(kind, 'Results'), name);
        if ('value' in results) extras.results = results.value;
        else extras.problems!.results = results.problem;
      }
    } else {
      extras.problems!.resourceList = `available once the ${kind.noun} finished (phase ${phaseOf(kind, o)})`;
    }
  }
  extras.events = await eventsAbout(s, kind.type.kind, name);
  process.stdout.write(kind.describe(o, extras));
}

/** `--timeout`: how long to wait for Velero to answer a download request. */
function parseTimeout(text: string): number {
  const m = /^(\d+)(s|m)?$/.exec(text);
  if (!m) throw new Error(`invalid --timeout "${text}": give seconds or minutes, e.g. 60s or 2m`);
  return Number(m[1]) * (m[2] === 'm' ? 60_000 : 1000);
}

async function logs<T extends NonAdminOperation>(kind: OperationKind<T>, args: string[], usage: string) {
  const { values, name } = parseNamed(kind.noun, args, usage, {
    timeout: { type: 'string', default: '60s' },
  });
  const timeoutMs = parseTimeout(values.timeout);
  const s = session(values);
  const o = await getOperation(kind, s, name);
  if (!isFinished(kind.velero(o)?.phase)) {
    throw new Error(
      `${kind.noun} "${name}" has not finished (phase ${phaseOf(kind, o)}): Velero uploads its log when it finishes; try again then`,
    );
  }
  process.stdout.write(await downloadFile(s.client, s.namespace, veleroFile(kind, 'Log'), name, timeoutMs));
}

async function remove<T extends NonAdminOperation>(kind: OperationKind<T>, args: string[], usage: string) {
  const { values, name } = parseNamed(kind.noun, args, usage, { confirm: { type: 'boolean' } });
  const s = session(values);
  await getOperation(kind, s, name);
  const yes = await confirmed(
    kind.deletion.question(name, s.namespace),
    values.confirm,
    `refusing to delete ${kind.noun} "${name}" without confirmation`,
  );
  if (!yes) {
    process.stdout.write('Deletion cancelled.\n');
    return;
  }
  await kind.deletion.request(s, name);
  process.stdout.write(
    `Request to delete ${kind.noun} "${name}" submitted successfully.\n${kind.deletion.outcome(name)}\n`,
  );
}
