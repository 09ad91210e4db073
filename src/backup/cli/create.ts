// The half of `tenantkit backup create` and `tenantkit restore create` that is the same: the flags both
// take, the object from the flags, printing it (-o) or creating it, and waiting for Velero (--wait).
// Each kind's own flags, spec and end of waiting are in backup.ts and restore.ts.
import { parseArgs } from 'node:util';
import type { KubeObject, ResourceType } from '../../kube/resources.ts';
import { oneName } from './command.ts';
import { type NonAdminOperation, type OperationKind, title } from './kind.ts';
import { connectionOptions, outputFormat, printObjects, type Session, session, waitFor } from './shared.ts';
import { mapFlag, normalizeOptionalBooleans } from './spec.ts';

/** The flags of both `create`s (velero spells them alike for backups and restores). */
const createOptions = {
  ...connectionOptions,
  'include-resources': { type: 'string', multiple: true },
  'exclude-resources': { type: 'string', multiple: true },
  selector: { type: 'string', short: 'l' },
  'item-operation-timeout': { type: 'string' },
  labels: { type: 'string', multiple: true },
  annotations: { type: 'string', multiple: true },
  wait: { type: 'boolean', short: 'w' },
  output: { type: 'string', short: 'o' },
} as const;

/** `create`'s flags in the usage: those of both kinds around the kind's own. */
export const createFlagsUsage = (type: ResourceType, own: string[]) => [
  '      --include-resources R,...  --exclude-resources R,...   resource types (e.g. configmaps,deployments.apps)',
  '      -l, --selector SELECTOR    only objects with matching labels (app=web,tier!=db,env in (a,b))',
  ...own,
  "      --item-operation-timeout DURATION   how long Velero waits for plugins' asynchronous operations",
  `      --labels k=v,...  --annotations k=v,...   on the ${type.kind}`,
  '      -w, --wait                 wait until Velero finished (exit code 1 unless Completed)',
  `      -o json|yaml               print the ${type.kind} instead of creating it`,
];

/** A kind's own `create` flags, by what they take: a value, a repeatable list, or velero's optional boolean. */
export interface KindFlags<S extends string, L extends string, B extends string> {
  strings?: readonly S[];
  lists?: readonly L[];
  /** `--flag`, `--flag=false` or `--no-flag`; unset leaves the choice to Velero. */
  optionalBooleans?: readonly B[];
}

/** The same parseArgs declaration for each of `names`. */
const declareAll = <K extends string, D>(names: readonly K[] = [], declaration: D) =>
  Object.fromEntries(names.map((name) => [name, declaration])) as Record<K, D>;

/** Parses `create`'s arguments: the flags of both kinds, and the kind's own. */
export function parseCreateArgs<S extends string, L extends string, B extends string>(
  args: string[],
  flags: KindFlags<S, L, B>,
) {
  return parseArgs({
    args: normalizeOptionalBooleans(args, flags.optionalBooleans ?? []),
    allowPositionals: true,
    allowNegative: true,
    options: {
      ...createOptions,
      ...declareAll(flags.strings, { type: 'string' } as const),
      ...declareAll(flags.lists, { type: 'string', multiple: true } as const),
      ...declareAll(flags.optionalBooleans, { type: 'boolean' } as const),
    },
  });
}

interface CreateFlags {
  namespace?: string;
  kubeconfig?: string;
  context?: string;
  labels?: string[];
  annotations?: string[];
  wait?: boolean;
  output?: string;
}

/** How a --wait ends: Velero finished in `phase`, or the request was refused and waiting cannot help. */
export type WaitOutcome = { phase: string } | { refused: string };

export interface CreateSteps<T extends NonAdminOperation> {
  /** The object's spec from the flags; it throws on flags Velero would refuse. */
  spec: () => Record<string, unknown>;
  /** A last look before creating, for mistakes the API server would accept. */
  check?: (s: Session, o: T) => Promise<void>;
  /** Makes the test each poll of --wait applies (one per wait, so it may remember what it said); an outcome ends it. */
  until: (s: Session, o: T) => (current: T) => WaitOutcome | undefined | Promise<WaitOutcome | undefined>;
}

/** Runs `create` once its flags are parsed: every flag is checked before anything is created. */
export async function createOperation<T extends NonAdminOperation>(
  kind: OperationKind<T>,
  parsed: { values: CreateFlags; positionals: string[] },
  usage: string,
  steps: CreateSteps<T>,
): Promise<void> {
  const { values } = parsed;
  const name = oneName(parsed.positionals, kind.noun, usage);
  const output = values.output === undefined ? undefined : outputFormat(values.output, ['json', 'yaml']);
  const spec = steps.spec();
  const s = session(values);
  const o = draft(kind, s.namespace, name, values, spec);
  if (output) return printObjects([o], output, kind.type, true);
  await steps.check?.(s, o);
  await submit(kind, s, o, values.wait, steps.until(s, o));
}

/** The object `create` makes: the kind's spec, and the user's --labels and --annotations. */
function draft<T extends NonAdminOperation>(
  kind: OperationKind<T>,
  namespace: string,
  name: string,
  flags: CreateFlags,
  spec: Record<string, unknown>,
): T {
  const labels = mapFlag('labels', flags.labels);
  const annotations = mapFlag('annotations', flags.annotations);
  return {
    apiVersion: `${kind.type.group}/${kind.type.version}`,
    kind: kind.type.kind,
    metadata: {
      name,
      namespace,
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
    },
    spec,
  } as KubeObject as T;
}

/** Creates the object and, with --wait, waits until `until` says it is over (exit code 1 unless Completed). */
async function submit<T extends NonAdminOperation>(
  kind: OperationKind<T>,
  s: Session,
  o: T,
  wait: boolean | undefined,
  until: (current: T) => WaitOutcome | undefined | Promise<WaitOutcome | undefined>,
): Promise<void> {
  const { noun } = kind;
  const name = o.metadata.name!;
  await s.client.create(kind.type, o);
  process.stdout.write(`${title(noun)} request "${name}" submitted successfully.\n`);
  const describeCommand = `\`tenantkit ${noun} describe ${name}\``;
  const logsCommand = `\`tenantkit ${noun} logs ${name}\``;
  if (!wait) {
    process.stdout.write(`Run ${describeCommand} or ${logsCommand} for more details.\n`);
    return;
  }
  process.stdout.write(
    `Waiting for ${noun} to complete. You may safely press ctrl-c to stop waiting - your ${noun} will continue in the background.\n`,
  );
  const result = await waitFor(
    () => s.client.get<T>(kind.type, name, s.namespace),
    until,
    `${noun} "${name}"`,
  );
  if ('refused' in result) throw new Error(`${noun} "${name}" was not started: ${result.refused}`);
  process.stdout.write(
    `${title(noun)} completed with status: ${result.phase}. You may check for more information using the commands ${describeCommand} and ${logsCommand}.\n`,
  );
  if (result.phase !== 'Completed') process.exitCode = 1;
}

/** The Accepted condition's message: why the controller refused the request (phase BackingOff). */
export const refusal = (o: NonAdminOperation) =>
  o.status?.conditions?.find((c) => c.type === 'Accepted')?.message;
