// Velero's exec hooks written into a Pod's own annotations: Velero runs them in every backup (and, for the
// restore ones, every restore) that includes the Pod, whatever the Backup's spec says, with a timeout the
// annotation itself sets. Velero runs one backup or restore at a time for the whole cluster, so a tenant's
// Pod with `pre.hook.backup.velero.io/command: ["sleep", "86400"]` and a long timeout would hold every
// tenant's backups for as long. tenantkit refuses `spec.hooks` in tenants' backups and restores
// (validate.ts); this file finds the same hooks where a Pod carries them.

/**
 * The annotation prefixes Velero reads hooks from (internal/hook in Velero v1.18): backup hooks before and
 * after (`hook.backup.velero.io` is the older name of `pre.`), restore hooks after the Pod is up and as
 * init containers. Each is followed by `/command`, `/container`, `/timeout` and the like.
 */
export const veleroHookPrefixes = [
  'hook.backup.velero.io',
  'pre.hook.backup.velero.io',
  'post.hook.backup.velero.io',
  'post.hook.restore.velero.io',
  'init.hook.restore.velero.io',
] as const;

/** Whether an annotation key is one Velero reads a hook from. */
export function isVeleroHookKey(key: string): boolean {
  const slash = key.indexOf('/');
  return slash > 0 && (veleroHookPrefixes as readonly string[]).includes(key.slice(0, slash));
}

/**
 * The CEL test of an annotation map at `path` (from `object`): true when a key may be a hook key (a
 * superset, kept short for the API server; isVeleroHookKey decides). Each step is guarded, so the test
 * is false, not an error, for objects without that path.
 */
export function hookKeysAt(path: readonly string[]): string {
  const guards = path.map((_, i) => `has(object.${path.slice(0, i + 1).join('.')})`);
  const test = "k.contains('hook.backup.velero.io/') || k.contains('hook.restore.velero.io/')";
  return `(${[...guards, `object.${path.join('.')}.exists(k, ${test})`].join(' && ')})`;
}

type Annotations = Record<string, string> | undefined;

/**
 * The hook keys a write adds or changes: all of them on create; on update only those new or with a new
 * value, so a Pod made before tenantkit refused them can still be updated (and its hooks removed).
 */
export function addedHookKeys(now: Annotations, before: Annotations): string[] {
  return Object.entries(now ?? {})
    .filter(([key, value]) => isVeleroHookKey(key) && before?.[key] !== value)
    .map(([key]) => key)
    .sort();
}

/** Why the write is refused, and how to go on. */
export function podHookRefusal(where: string, keys: string[], namespace: string): string {
  return `${where} may not carry Velero hook annotations (${keys.join(', ')}): Velero would run the command in every backup or restore that includes the Pod, with the annotation's own timeout, and it runs one backup or restore at a time for every tenant, so one slow hook stalls them all; remove these annotations, or ask an admin to list namespace ${namespace} in NonAdminBackupConfig "cluster" spec.nonAdmin.podHookNamespaces`;
}
