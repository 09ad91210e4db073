// `tenantkit backup|restore describe`: what `velero backup|restore describe` prints, from the tenant's
// NonAdminBackup/NonAdminRestore (status mirrors the Velero object) and, with --details, Velero's files
// fetched through NonAdminDownloadRequests. Pure: the caller fetches, this formats.
import type { NonAdminBackup, NonAdminRestore } from '../../crds/backup.ts';
import type { LabelSelector } from '../../kube/selectors.ts';
import { veleroTime } from './shared.ts';
import { formatSelector } from './spec.ts';

export interface DescribeExtras {
  /** Velero's *ResourceList file, parsed (with --details). */
  resourceList?: Record<string, unknown[]>;
  /** Velero's *Results file, parsed (with --details, when there are errors or warnings). */
  results?: { errors?: Results; warnings?: Results };
  /** Why a file could not be fetched, shown in its place. */
  problems?: Record<string, string>;
  /** Events about the object, oldest first. */
  events?: { type?: string; reason?: string; note?: string }[];
  details?: boolean;
}

export interface Results {
  velero?: string[];
  cluster?: string[];
  namespaces?: Record<string, string[]>;
}

type Spec = Record<string, unknown>;

const list = (v: unknown) => (Array.isArray(v) && v.length > 0 ? v.join(', ') : '<none>');
const boolAuto = (v: unknown) => (v === true ? 'true' : v === false ? 'false' : 'auto');
const orNone = (v: unknown) => (v === undefined || v === null || v === '' ? '<none>' : String(v));

function mapLines(title: string, map: Record<string, string> | undefined): string[] {
  const entries = Object.entries(map ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const pad = ' '.repeat(14);
  const head = title.padEnd(14);
  if (entries.length === 0) return [`${head}<none>`];
  return entries.map(([k, v], i) => `${i === 0 ? head : pad}${k}=${v}`);
}

/** `key:  value` lines with the values in one column. */
function aligned(pairs: [string, string][]): string[] {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 2;
  return pairs.map(([k, v]) => `${`${k}:`.padEnd(width + 1)}${v}`);
}

function header(o: NonAdminBackup | NonAdminRestore): string[] {
  return [
    `Name:         ${o.metadata.name}`,
    `Namespace:    ${o.metadata.namespace}`,
    ...mapLines('Labels:', o.metadata.labels),
    ...mapLines('Annotations:', o.metadata.annotations),
  ];
}

function resultLines(
  title: string,
  r: Results | undefined,
  count: number | undefined,
  extras: DescribeExtras,
  command: string,
): string[] {
  const n = count ?? 0;
  if (n === 0) return [`${title}:  0`];
  if (!extras.details) return [`${title}:  ${n} (run '${command} --details' to see them)`];
  const problem = extras.problems?.results;
  if (problem) return [`${title}:  ${n}`, `  <${problem}>`];
  const lines = [`${title}:`];
  lines.push(`  Velero:   ${r?.velero?.length ? '' : '<none>'}`, ...(r?.velero ?? []).map((m) => `    ${m}`));
  lines.push(
    `  Cluster:  ${r?.cluster?.length ? '' : '<none>'}`,
    ...(r?.cluster ?? []).map((m) => `    ${m}`),
  );
  const namespaces = Object.entries(r?.namespaces ?? {});
  lines.push(`  Namespaces: ${namespaces.length ? '' : '<none>'}`);
  for (const [ns, messages] of namespaces) {
    lines.push(`    ${ns}:`, ...messages.map((m) => `      ${m}`));
  }
  return lines.map((l) => l.trimEnd());
}

function resourceListLines(extras: DescribeExtras, command: string): string[] {
  if (!extras.details) return [`Resource List:  <run '${command} --details' for the list>`];
  if (extras.problems?.resourceList) return [`Resource List:  <${extras.problems.resourceList}>`];
  const entries = Object.entries(extras.resourceList ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return ['Resource List:  <none>'];
  const lines = ['Resource List:'];
  for (const [kind, items] of entries) {
    lines.push(`  ${kind}:`);
    for (const item of items) {
      // Restore lists hold {namespace, name, action}; backup lists hold "namespace/name".
      if (typeof item === 'string') lines.push(`    - ${item}`);
      else {
        const i = item as { namespace?: string; name?: string; action?: string };
        lines.push(
          `    - ${i.namespace ? `${i.namespace}/` : ''}${i.name}${i.action ? `(${i.action})` : ''}`,
        );
      }
    }
  }
  return lines;
}

interface VolumeCounts {
  total?: number;
  completed?: number;
  failed?: number;
  inProgress?: number;
  bytesDone?: number;
  totalBytes?: number;
  failures?: { name: string; message: string }[];
}

const mib = (bytes = 0) => (bytes / 2 ** 20).toFixed(1);

/** Volumes of the operation (the status' counts): how many are done, the bytes moved, and why any failed. */
function volumeLines(title: string, counts: VolumeCounts | undefined): string[] {
  if (!counts?.total) return [];
  const parts = [`${counts.completed ?? 0} of ${counts.total} completed`];
  if (counts.inProgress) parts.push(`${counts.inProgress} in progress`);
  if (counts.failed) parts.push(`${counts.failed} failed`);
  if (counts.totalBytes !== undefined)
    parts.push(`${mib(counts.bytesDone)} of ${mib(counts.totalBytes)} MiB`);
  return [
    `${title}:  ${parts.join(', ')}`,
    ...(counts.failures ?? []).map((f) => `  failed ${f.name}: ${f.message}`),
  ];
}

/** Where tenantkit's request stands, and the Velero object it made for it. */
function requestLines(
  o: NonAdminBackup | NonAdminRestore,
  veleroKind: 'Backup' | 'Restore',
  velero: { name?: string; namespace?: string } | undefined,
): string[] {
  return [
    `Request Phase:   ${orNone(o.status?.phase)}`,
    `Queue Position:  ${orNone(o.status?.queueInfo?.estimatedQueuePosition)}`,
    `${`Velero ${veleroKind}:`.padEnd(17)}${velero?.name ? `${velero.namespace}/${velero.name}` : '<none>'}`,
  ];
}

/** Velero's errors and warnings, in `order`, and why it failed the operation or refused to start it. */
function outcomeLines(
  status: { errors?: number; warnings?: number; failureReason?: string; validationErrors?: string[] | null },
  extras: DescribeExtras,
  command: string,
  order: ('Errors' | 'Warnings')[],
): string[] {
  const counts = { Errors: status.errors, Warnings: status.warnings };
  const results = { Errors: extras.results?.errors, Warnings: extras.results?.warnings };
  const lines = order.flatMap((title) => resultLines(title, results[title], counts[title], extras, command));
  if (status.failureReason) lines.push('', `Failure Reason:  ${status.failureReason}`);
  if (status.validationErrors?.length) {
    lines.push('', 'Validation errors:', ...status.validationErrors.map((e) => `  ${e}`));
  }
  return lines;
}

function tail(o: NonAdminBackup | NonAdminRestore, extras: DescribeExtras): string[] {
  const lines = ['', 'Conditions:'];
  const conditions = o.status?.conditions ?? [];
  if (conditions.length === 0) lines[1] = 'Conditions:  <none>';
  for (const c of conditions) lines.push(`  ${c.type}=${c.status} (${c.reason}): ${c.message}`);
  if (extras.events) {
    lines.push('');
    if (extras.events.length === 0) lines.push('Events:  <none>');
    else {
      lines.push('Events:');
      for (const e of extras.events)
        lines.push(`  ${e.type ?? ''}  ${e.reason ?? ''}  ${e.note ?? ''}`.trimEnd());
    }
  }
  return lines;
}

export function describeBackup(nab: NonAdminBackup, extras: DescribeExtras = {}): string {
  const velero = nab.status?.veleroBackup;
  const status = velero?.status ?? {};
  const spec = (velero?.spec ?? nab.spec?.backupSpec ?? {}) as Spec;
  const command = `tenantkit backup describe ${nab.metadata.name} -n ${nab.metadata.namespace}`;
  const lines = [
    ...header(nab),
    '',
    `Phase:  ${status.phase ?? `<no Velero Backup yet; request phase ${nab.status?.phase ?? 'none'}>`}`,
    '',
    ...requestLines(nab, 'Backup', velero),
    '',
    ...outcomeLines(status, extras, command, ['Errors', 'Warnings']),
    '',
    'Namespaces:',
    `  Included:  ${list(spec.includedNamespaces ?? [nab.metadata.namespace])}`,
    `  Excluded:  ${list(spec.excludedNamespaces)}`,
    '',
    'Resources:',
    `  Included:        ${Array.isArray(spec.includedResources) && spec.includedResources.length ? list(spec.includedResources) : '*'}`,
    `  Excluded:        ${list(spec.excludedResources)}`,
    `  Cluster-scoped:  ${spec.includeClusterResources === true ? 'included' : spec.includeClusterResources === false ? 'excluded' : 'auto'}`,
  ];
  if (spec.includedNamespaceScopedResources || spec.excludedNamespaceScopedResources) {
    lines.push(
      `  Namespace-scoped included:  ${list(spec.includedNamespaceScopedResources)}`,
      `  Namespace-scoped excluded:  ${list(spec.excludedNamespaceScopedResources)}`,
    );
  }
  lines.push(
    '',
    `Label selector:  ${formatSelector(spec.labelSelector as LabelSelector | undefined)}`,
    '',
    `Storage Location:  ${orNone(spec.storageLocation) === '<none>' ? 'default' : spec.storageLocation}`,
    '',
    ...aligned([
      ['Velero-Native Snapshot PVs', boolAuto(spec.snapshotVolumes)],
      ['Snapshot Move Data', boolAuto(spec.snapshotMoveData)],
      ['Default Volumes to FS Backup', boolAuto(spec.defaultVolumesToFsBackup)],
      ['Data Mover', orNone(spec.datamover) === '<none>' ? 'velero' : String(spec.datamover)],
    ]),
    '',
    `TTL:  ${orNone(spec.ttl)}`,
    '',
    `CSISnapshotTimeout:    ${orNone(spec.csiSnapshotTimeout)}`,
    `ItemOperationTimeout:  ${orNone(spec.itemOperationTimeout)}`,
    '',
    `Backup Format Version:  ${orNone(status.formatVersion)}`,
    '',
    `Started:    ${veleroTime(status.startTimestamp)}`,
    `Completed:  ${veleroTime(status.completionTimestamp)}`,
    '',
    `Expiration:  ${veleroTime(status.expiration)}`,
    '',
    `Total items to be backed up:  ${orNone(status.progress?.totalItems)}`,
    `Items backed up:              ${orNone(status.progress?.itemsBackedUp)}`,
    '',
    ...resourceListLines(extras, command),
    '',
    `Backup Volumes:  ${status.volumeSnapshotsAttempted || status.csiVolumeSnapshotsAttempted ? `${(status.volumeSnapshotsCompleted ?? 0) + (status.csiVolumeSnapshotsCompleted ?? 0)} of ${(status.volumeSnapshotsAttempted ?? 0) + (status.csiVolumeSnapshotsAttempted ?? 0)} snapshots completed` : '<none>'}`,
    ...volumeLines('File-system volume backups', nab.status?.fileSystemPodVolumeBackups),
    ...volumeLines('Data mover uploads', nab.status?.dataMoverDataUploads),
    ...tail(nab, extras),
  );
  return `${lines.join('\n')}\n`;
}

export function describeRestore(nar: NonAdminRestore, extras: DescribeExtras = {}): string {
  const velero = nar.status?.veleroRestore;
  const status = velero?.status ?? {};
  const spec = (nar.spec?.restoreSpec ?? {}) as Spec;
  const command = `tenantkit restore describe ${nar.metadata.name} -n ${nar.metadata.namespace}`;
  const progress = (status as { progress?: { totalItems?: number; itemsRestored?: number } }).progress;
  const lines = [
    ...header(nar),
    '',
    `Phase:                       ${status.phase ?? `<no Velero Restore yet; request phase ${nar.status?.phase ?? 'none'}>`}`,
    `Total items to be restored:  ${orNone(progress?.totalItems)}`,
    `Items restored:              ${orNone(progress?.itemsRestored)}`,
    ...volumeLines('File-system volume restores', nar.status?.fileSystemPodVolumeRestores),
    ...volumeLines('Data mover downloads', nar.status?.dataMoverDataDownloads),
    '',
    ...requestLines(nar, 'Restore', velero),
    '',
    `Started:    ${veleroTime(status.startTimestamp)}`,
    `Completed:  ${veleroTime(status.completionTimestamp)}`,
    '',
    // velero restore describe lists warnings first.
    ...outcomeLines(status, extras, command, ['Warnings', 'Errors']),
    '',
    `Backup:  ${orNone(spec.backupName)}`,
    '',
    'Namespaces:',
    `  Included:  ${nar.metadata.namespace}`,
    '  Excluded:  <none>',
    '',
    'Resources:',
    `  Included:        ${Array.isArray(spec.includedResources) && spec.includedResources.length ? list(spec.includedResources) : '*'}`,
    `  Excluded:        ${list(spec.excludedResources)}`,
    '  Cluster-scoped:  excluded',
    '',
    'Namespace mappings:  <none>',
    '',
    `Label selector:  ${formatSelector(spec.labelSelector as LabelSelector | undefined)}`,
    '',
    `Restore PVs:  ${boolAuto(spec.restorePVs)}`,
    '',
    `Existing Resource Policy:    ${orNone(spec.existingResourcePolicy)}`,
    `ItemOperationTimeout:        ${orNone(spec.itemOperationTimeout)}`,
    '',
    `Preserve Service NodePorts:  ${boolAuto(spec.preserveNodePorts)}`,
    '',
    ...resourceListLines(extras, command),
    ...tail(nar, extras),
  ];
  return `${lines.join('\n')}\n`;
}
