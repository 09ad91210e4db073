// Pure pieces of `tenantkit backup|restore`: command-line values to the Velero spec fields of a
// NonAdminBackup or NonAdminRestore, with the flag names of `velero` and `oc oadp nonadmin`.
import { setOwn } from '../../kube/own.ts';
import type { LabelSelector } from '../../kube/selectors.ts';

/** Splits on commas outside parentheses: `a=b,c in (x,y)` is two terms. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      terms.push(current);
      current = '';
    } else current += ch;
  }
  terms.push(current);
  return terms.map((t) => t.trim()).filter(Boolean);
}

const keyPattern = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const checkKey = (key: string, term: string) => {
  if (!keyPattern.test(key)) throw new Error(`invalid label selector "${term}": "${key}" is not a label key`);
  return key;
};

/**
 * A kubectl label selector (`app=web`, `tier!=db`, `env in (a,b)`, `env notin (c)`, `ready`, `!legacy`)
 * as a metav1.LabelSelector.
 */
export function parseSelector(text: string): LabelSelector {
  const labels: Record<string, string> = {};
  const expressions: NonNullable<LabelSelector['matchExpressions']> = [];
  const terms = splitTerms(text);
  if (terms.length === 0) throw new Error('empty label selector: give e.g. -l app=web');
  for (const term of terms) {
    const set = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (set) {
      const values = set[3]!
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);
      const operator = set[2] === 'in' ? 'In' : 'NotIn';
      expressions.push({ key: checkKey(set[1]!, term), operator, values });
      continue;
    }
    const notEqual = /^([^!=\s]+)\s*!=\s*(\S*)$/.exec(term);
    if (notEqual) {
      expressions.push({
        key: checkKey(notEqual[1]!, term),
        operator: 'NotIn',
        values: [notEqual[2]!],
      });
      continue;
    }
    const equal = /^([^!=\s]+)\s*==?\s*(\S*)$/.exec(term);
    if (equal) {
      labels[checkKey(equal[1]!, term)] = equal[2]!;
      continue;
    }
    const absent = /^!\s*(\S+)$/.exec(term);
    if (absent) {
      expressions.push({ key: checkKey(absent[1]!, term), operator: 'DoesNotExist' });
      continue;
    }
    expressions.push({ key: checkKey(term, term), operator: 'Exists' });
  }
  return {
    ...(Object.keys(labels).length > 0 ? { matchLabels: labels } : {}),
    ...(expressions.length > 0 ? { matchExpressions: expressions } : {}),
  };
}

/** A metav1.LabelSelector written back as kubectl would take it, or `<none>`. */
export function formatSelector(selector: LabelSelector | undefined | null): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) parts.push(`${k}=${v}`);
  for (const e of selector?.matchExpressions ?? []) {
    if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
    else parts.push(`${e.key} ${e.operator === 'In' ? 'in' : 'notin'} (${(e.values ?? []).join(',')})`);
  }
  return parts.length > 0 ? parts.join(',') : '<none>';
}

const goDuration = /^(0|(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+)$/;

/** A Go duration as Velero takes it (`720h`, `1h30m`), checked here so the mistake names the flag. */
export function checkDuration(flag: string, value: string): string {
  if (!goDuration.test(value)) {
    throw new Error(`invalid --${flag} "${value}": give a duration such as 720h, 24h0m0s or 90m`);
  }
  return value;
}

/** Repeatable, comma-separated list flags (`--include-resources a,b --include-resources c`). */
export function listFlag(values: string[] | undefined): string[] | undefined {
  const items = (values ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
  return items.length > 0 ? items : undefined;
}

/** `key=value` pairs, comma-separated and repeatable (`--labels a=1,b=2`). */
export function mapFlag(flag: string, values: string[] | undefined): Record<string, string> | undefined {
  const items = listFlag(values);
  if (!items) return undefined;
  const map: Record<string, string> = {};
  for (const item of items) {
    const at = item.indexOf('=');
    if (at <= 0) throw new Error(`invalid --${flag} "${item}": give key=value`);
    // A key named "__proto__" is a label like any other.
    setOwn(map, item.slice(0, at), item.slice(at + 1));
  }
  return map;
}

/**
 * Velero's optional booleans (`--snapshot-volumes`, `--snapshot-volumes=false`) for node's parseArgs,
 * which takes `--flag` and `--no-flag` only.
 */
export function normalizeOptionalBooleans(args: string[], names: readonly string[]): string[] {
  return args.map((arg) => {
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!m || !names.includes(m[1]!)) return arg;
    const value = m[2]!.toLowerCase();
    if (value === 'true') return `--${m[1]}`;
    if (value === 'false') return `--no-${m[1]}`;
    throw new Error(`invalid --${m[1]} "${m[2]}": give true or false`);
  });
}

type Spec = Record<string, unknown>;
const put = (spec: Spec, key: string, value: unknown) => {
  if (value !== undefined) spec[key] = value;
};

export interface BackupFlags {
  'include-resources'?: string[];
  'exclude-resources'?: string[];
  'include-namespace-scoped-resources'?: string[];
  'exclude-namespace-scoped-resources'?: string[];
  selector?: string;
  ttl?: string;
  'storage-location'?: string;
  'volume-snapshot-locations'?: string[];
  'snapshot-volumes'?: boolean;
  'snapshot-move-data'?: boolean;
  'default-volumes-to-fs-backup'?: boolean;
  'data-mover'?: string;
  'csi-snapshot-timeout'?: string;
  'item-operation-timeout'?: string;
  'resource-policies-configmap'?: string;
  'parallel-files-upload'?: string;
}

/** The `spec.backupSpec` of a NonAdminBackup from `backup create` flags (namespaces are tenantkit's to set). */
export function backupSpecFromFlags(flags: BackupFlags): Spec {
  const spec: Spec = {};
  const included = listFlag(flags['include-resources']);
  const excluded = listFlag(flags['exclude-resources']);
  const includedNs = listFlag(flags['include-namespace-scoped-resources']);
  const excludedNs = listFlag(flags['exclude-namespace-scoped-resources']);
  if ((included || excluded) && (includedNs || excludedNs)) {
    throw new Error(
      '--include-resources/--exclude-resources and --include-namespace-scoped-resources/--exclude-namespace-scoped-resources cannot be used together (Velero refuses old and new filters in one backup)',
    );
  }
  put(spec, 'includedResources', included);
  put(spec, 'excludedResources', excluded);
  put(spec, 'includedNamespaceScopedResources', includedNs);
  put(spec, 'excludedNamespaceScopedResources', excludedNs);
  if (flags.selector !== undefined) spec.labelSelector = parseSelector(flags.selector);
  if (flags.ttl !== undefined) spec.ttl = checkDuration('ttl', flags.ttl);
  put(spec, 'storageLocation', flags['storage-location'] || undefined);
  put(spec, 'volumeSnapshotLocations', listFlag(flags['volume-snapshot-locations']));
  put(spec, 'snapshotVolumes', flags['snapshot-volumes']);
  put(spec, 'snapshotMoveData', flags['snapshot-move-data']);
  put(spec, 'defaultVolumesToFsBackup', flags['default-volumes-to-fs-backup']);
  put(spec, 'datamover', flags['data-mover'] || undefined);
  if (flags['csi-snapshot-timeout'] !== undefined)
    spec.csiSnapshotTimeout = checkDuration('csi-snapshot-timeout', flags['csi-snapshot-timeout']);
  if (flags['item-operation-timeout'] !== undefined)
    spec.itemOperationTimeout = checkDuration('item-operation-timeout', flags['item-operation-timeout']);
  if (flags['resource-policies-configmap'])
    spec.resourcePolicy = { kind: 'configmap', name: flags['resource-policies-configmap'] };
  if (flags['parallel-files-upload'] !== undefined) {
    const n = Number(flags['parallel-files-upload']);
    if (!Number.isInteger(n) || n < 1) {
      throw new Error(
        `invalid --parallel-files-upload "${flags['parallel-files-upload']}": give a whole number ≥ 1`,
      );
    }
    spec.uploaderConfig = { parallelFilesUpload: n };
  }
  return spec;
}

export interface RestoreFlags {
  'from-backup'?: string;
  'include-resources'?: string[];
  'exclude-resources'?: string[];
  selector?: string;
  'existing-resource-policy'?: string;
  'restore-volumes'?: boolean;
  'preserve-nodeports'?: boolean;
  'item-operation-timeout'?: string;
}

/** The `spec.restoreSpec` of a NonAdminRestore from `restore create` flags; backupName is a NonAdminBackup. */
export function restoreSpecFromFlags(flags: RestoreFlags): Spec {
  if (!flags['from-backup']) {
    throw new Error(
      '--from-backup is required: the name of a NonAdminBackup in this namespace (tenantkit backup get)',
    );
  }
  const spec: Spec = { backupName: flags['from-backup'] };
  put(spec, 'includedResources', listFlag(flags['include-resources']));
  put(spec, 'excludedResources', listFlag(flags['exclude-resources']));
  if (flags.selector !== undefined) spec.labelSelector = parseSelector(flags.selector);
  const policy = flags['existing-resource-policy'];
  if (policy !== undefined) {
    if (policy !== 'none' && policy !== 'update') {
      throw new Error(`invalid --existing-resource-policy "${policy}": give none or update`);
    }
    spec.existingResourcePolicy = policy;
  }
  put(spec, 'restorePVs', flags['restore-volumes']);
  put(spec, 'preserveNodePorts', flags['preserve-nodeports']);
  if (flags['item-operation-timeout'] !== undefined)
    spec.itemOperationTimeout = checkDuration('item-operation-timeout', flags['item-operation-timeout']);
  return spec;
}
