// What a tenant may ask of a backup or a restore, checked the same way by the admission webhook and the
// controller: every problem names the field, the rule and the fix. Tenant data is never trusted to widen
// the reach of a backup or restore: namespaces, cluster-scoped resources and storage locations are
// tenantkit's to set.
import type { NonAdminBackup } from '../../crds/backup.ts';
import { compileSelector, type LabelSelector } from '../../kube/selectors.ts';
import { parseDuration } from './config.ts';
import { enforcedMessage, type JsonObject, unenforceable, violations } from './enforce.ts';

const path = 'spec.backupSpec';

/**
 * The longest timeout a tenant may ask for: Velero's own default item operation timeout (4h). Velero runs
 * one backup (and one restore) at a time, so a tenant's long wait is every tenant's wait; an admin who
 * wants longer enforces the field.
 */
export const maxTenantTimeout = '4h';
const maxTenantTimeoutMs = parseDuration(maxTenantTimeout)!;

/** Problems with tenant timeouts (`fields`, under `prefix`), unless the admin enforces them. */
function timeoutProblems(spec: JsonObject, enforced: JsonObject, prefix: string, fields: string[]): string[] {
  const problems: string[] = [];
  for (const field of fields) {
    const value = spec[field];
    if (value === undefined || value === null || field in enforced) continue;
    const ms = typeof value === 'string' ? parseDuration(value) : undefined;
    if (ms === undefined) {
      problems.push(`${prefix}.${field} "${String(value)}" is not a duration: write it like 30m or 1h30m`);
    } else if (ms > maxTenantTimeoutMs) {
      problems.push(
        `${prefix}.${field} ${value} is longer than ${maxTenantTimeout}: Velero runs one operation at a time, so a long wait stalls every tenant's backups and restores; ask for at most ${maxTenantTimeout} (or leave it out for Velero's default), or ask an admin to enforce a longer one`,
      );
    }
  }
  return problems;
}

/** Whether `value` is a JSON object (not null, not an array). */
const isPlainObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The shape of a tenant's spec as a whole: `spec` and its `field` (backupSpec, restoreSpec) must be
 * objects. The API server's CRD schema says so too; these checks do not rely on it (an admin can edit a
 * CRD), since a list or a string there would read as an empty spec.
 */
export function specShapeProblems(spec: unknown, field: string): string[] {
  if (spec === undefined || spec === null) return [];
  if (!isPlainObject(spec)) return [`spec must be an object with ${field}`];
  const inner = spec[field];
  if (inner === undefined || inner === null || isPlainObject(inner)) return [];
  return [`spec.${field} must be an object (got ${Array.isArray(inner) ? 'a list' : typeof inner})`];
}

/**
 * includedNamespaces may name only the tenant's own namespace and excludedNamespaces nothing, whatever
 * JSON type a tenant (or an edited CRD) lets through: a string or an object is refused, not skipped.
 */
function namespaceProblems(spec: JsonObject, namespace: string, prefix: string, what: string): string[] {
  const problems: string[] = [];
  const included = spec.includedNamespaces;
  if (included !== undefined && included !== null) {
    if (!Array.isArray(included)) {
      problems.push(
        `${prefix}.includedNamespaces must be a list, and may only name this namespace (${namespace}); leave it out, tenantkit sets it`,
      );
    } else if (included.some((n) => n !== namespace)) {
      problems.push(
        `${prefix}.includedNamespaces may only name this namespace (${namespace}); leave it out, tenantkit sets it`,
      );
    }
  }
  const excluded = spec.excludedNamespaces;
  if (excluded !== undefined && excluded !== null && !(Array.isArray(excluded) && excluded.length === 0)) {
    problems.push(
      `${prefix}.excludedNamespaces is not allowed: a ${what} covers this namespace only; leave it out`,
    );
  }
  return problems;
}

/** A tenant may not set `field` unless the admin enforces it (the admin's value is then the only one). */
function adminOnly(spec: JsonObject, enforced: JsonObject, prefix: string, field: string, why: string) {
  const value = spec[field];
  if (value === undefined || value === null || field in enforced) return [];
  return [`${prefix}.${field} is not allowed: ${why}; leave it out, or ask an admin to enforce it`];
}

/**
 * Problems with the label selectors of a spec (labelSelector, orLabelSelectors): Velero would only fail
 * the whole backup or restore for them later (FailedValidation); said here, at once, with the field.
 */
function selectorProblems(spec: JsonObject, prefix: string): string[] {
  const problems: string[] = [];
  const check = (field: string, selector: unknown) => {
    if (selector === undefined || selector === null) return;
    if (typeof selector !== 'object' || Array.isArray(selector)) {
      problems.push(`${prefix}.${field} must be a label selector (matchLabels, matchExpressions)`);
      return;
    }
    const compiled = compileSelector(selector as LabelSelector);
    if (!compiled.ok) problems.push(`${prefix}.${field} is invalid: ${compiled.error}`);
  };
  check('labelSelector', spec.labelSelector);
  const or = spec.orLabelSelectors;
  if (Array.isArray(or)) for (const [i, selector] of or.entries()) check(`orLabelSelectors[${i}]`, selector);
  return problems;
}

const hooksWhy =
  "hooks run commands in the namespace's pods while Velero waits, and Velero runs one backup or restore at a time, so a slow hook stalls every tenant";

export function backupSpecProblems(
  namespace: string,
  spec: JsonObject,
  enforced: JsonObject,
  /**
   * Whether a NonAdminBackupStorageLocation of this namespace has this name. Without it (callers that
   * cannot resolve tenant locations), any storageLocation is refused.
   */
  hasLocation?: (name: string) => boolean,
): string[] {
  const problems: string[] = [];
  problems.push(...namespaceProblems(spec, namespace, path, 'backup'), ...selectorProblems(spec, path));
  if (spec.includeClusterResources === true) {
    problems.push(
      `${path}.includeClusterResources may not be true: tenants cannot back up cluster-scoped resources`,
    );
  }
  for (const field of ['includedClusterScopedResources', 'excludedClusterScopedResources'] as const) {
    const value = spec[field];
    if (Array.isArray(value) && value.length > 0) {
      problems.push(`${path}.${field} is not allowed: tenants cannot back up cluster-scoped resources`);
    }
  }
  // A tenant names its own NonAdminBackupStorageLocation (looked up in its namespace only), never a
  // Velero BackupStorageLocation: tenantkit puts the Velero name in (controllers/backup/reconciler.ts).
  const location = spec.storageLocation;
  if (typeof location === 'string' && location !== '' && !hasLocation?.(location)) {
    problems.push(
      hasLocation
        ? `${path}.storageLocation "${location}" is not a NonAdminBackupStorageLocation of namespace ${namespace}: name one of this namespace's locations (kubectl get nonadminbackupstoragelocations -n ${namespace}), or leave it out to use the default location`
        : `${path}.storageLocation is not supported here; leave it out to use the default location`,
    );
  }
  problems.push(
    ...adminOnly(spec, enforced, path, 'hooks', hooksWhy),
    ...adminOnly(
      spec,
      enforced,
      path,
      'resourcePolicy',
      "it names a ConfigMap in Velero's namespace, which only an admin may choose",
    ),
    ...timeoutProblems(spec, enforced, path, ['csiSnapshotTimeout', 'itemOperationTimeout']),
  );
  for (const field of violations(spec, enforced)) problems.push(enforcedMessage('NonAdminBackup', field));
  return problems;
}

const restorePath = 'spec.restoreSpec';

/** The Velero phases a Backup ends in without being restorable (src/crds/velero.ts finishedPhases). */
const failedBackupPhases = ['PartiallyFailed', 'Failed', 'FailedValidation'];

/**
 * The admin's enforced RestoreSpec, less the fields tenantkit itself sets (the NonAdminBackupConfig CRD
 * refuses them; dropped here too, so that a config stored before that rule cannot turn the NAB name a
 * tenant writes in backupName, or the namespace tenantkit forces, into an "override").
 */
export function enforceableRestoreSpec(enforced: JsonObject): JsonObject {
  return Object.fromEntries(
    Object.entries(enforced).filter(([field]) => !Object.hasOwn(unenforceable.NonAdminRestore, field)),
  );
}

/**
 * What a tenant may ask of a restore. `backupName` names a NonAdminBackup of the same namespace (found
 * with `findNab`), never a Velero backup: tenantkit restores from that NAB's Velero backup, so a tenant
 * can only restore what it backed up itself, and only into its own namespace.
 */
export function restoreSpecProblems(
  namespace: string,
  spec: JsonObject,
  enforced: JsonObject,
  /** Omitted at admission: the NonAdminBackup may not exist or be complete yet, and the restore waits. */
  findNab?: (name: string) => NonAdminBackup | undefined,
): string[] {
  const problems: string[] = [];
  const backupName = spec.backupName;
  if (typeof backupName !== 'string' || backupName === '') {
    problems.push(
      `${restorePath}.backupName is required: set it to the name of a NonAdminBackup in namespace ${namespace} whose backup completed`,
    );
  } else if (findNab) {
    const problem = backupProblem(namespace, backupName, findNab(backupName));
    if (problem) problems.push(problem);
  }
  if (typeof spec.scheduleName === 'string' && spec.scheduleName !== '') {
    problems.push(
      `${restorePath}.scheduleName is not allowed: tenants restore from their own NonAdminBackups; leave it out and set backupName to a NonAdminBackup`,
    );
  }
  problems.push(
    ...namespaceProblems(spec, namespace, restorePath, 'restore'),
    ...selectorProblems(spec, restorePath),
  );
  const mapping = spec.namespaceMapping;
  if (typeof mapping === 'object' && mapping !== null && Object.keys(mapping).length > 0) {
    problems.push(
      `${restorePath}.namespaceMapping is not allowed: a restore writes into this namespace (${namespace}) only; leave it out`,
    );
  }
  if (spec.includeClusterResources === true) {
    problems.push(
      `${restorePath}.includeClusterResources may not be true: tenants cannot restore cluster-scoped resources; leave it out`,
    );
  }
  const allowed = enforceableRestoreSpec(enforced);
  // A resource modifier is a ConfigMap in Velero's namespace, which is the admin's to choose (by
  // enforcing it), not the tenant's.
  const modifier = spec.resourceModifier;
  if (modifier !== undefined && modifier !== null && !('resourceModifier' in allowed)) {
    problems.push(
      `${restorePath}.resourceModifier is not allowed: it names a ConfigMap in Velero's namespace, which only an admin may choose; leave it out`,
    );
  }
  problems.push(
    ...adminOnly(spec, allowed, restorePath, 'hooks', hooksWhy),
    ...timeoutProblems(spec, allowed, restorePath, ['itemOperationTimeout']),
  );
  for (const field of violations(spec, allowed)) problems.push(enforcedMessage('NonAdminRestore', field));
  return problems;
}

/** Why a NonAdminBackup cannot be restored from, or undefined when it can. */
function backupProblem(namespace: string, name: string, nab: NonAdminBackup | undefined): string | undefined {
  const field = `${restorePath}.backupName "${name}"`;
  if (!nab) {
    return `${field} is not a NonAdminBackup in namespace ${namespace}: name one of this namespace's NonAdminBackups (kubectl get nonadminbackups -n ${namespace})`;
  }
  if (nab.metadata.deletionTimestamp || nab.spec?.deleteBackup === true) {
    return `${field}: that NonAdminBackup is being deleted; pick another NonAdminBackup`;
  }
  const velero = nab.status?.veleroBackup;
  const phase = velero?.status?.phase;
  if (phase === 'Completed' && velero?.name) return undefined;
  if (phase && failedBackupPhases.includes(phase)) {
    return `${field}: its backup ended ${phase}, and only a Completed backup can be restored; pick another NonAdminBackup`;
  }
  if (nab.status?.phase === 'BackingOff') {
    return `${field}: that NonAdminBackup was not accepted (BackingOff), so it has no backup; fix it or pick another NonAdminBackup`;
  }
  return `${field}: its backup is ${phase ?? nab.status?.phase ?? 'New'}, not Completed yet; wait for it to complete, or pick another NonAdminBackup`;
}
