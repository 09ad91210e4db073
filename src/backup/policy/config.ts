// The admin's policy for non-admin backup, read from the NonAdminBackupConfig named "cluster" through the
// manager's informer: every reconcile sees the current one, so a change applies live (no restart), and
// objects record the generation they were checked against.
import { type NonAdminBackupConfig, NonAdminBackupConfigCrd } from '../../crds/backup.ts';
import type { Informer } from '../../kube/informer.ts';
import type { JsonObject } from './enforce.ts';

export const ConfigName = 'cluster';
export const DefaultVeleroNamespace = 'velero';
/** The CRD's defaults, used when the config leaves the periods out. */
export const DefaultBackupSyncPeriod = '2m';
export const DefaultGarbageCollectionPeriod = '24h';
export const DefaultMinimumScheduleInterval = '1h';
export const DefaultStalledQueueWarningAfter = '10m';
export const DefaultResumeStuckVolumeOperationsAfter = '2m';
export const DefaultMaxQueuedBackupsPerNamespace = 5;
export const DefaultMaxSchedulesPerNamespace = 10;

export interface BackupPolicy {
  enabled: boolean;
  veleroNamespace: string;
  enforceBackupSpec: JsonObject;
  enforceRestoreSpec: JsonObject;
  enforceBSLSpec: JsonObject;
  /** Whether each NonAdminBackupStorageLocation waits for an admin's approval. */
  requireApprovalForBSL: boolean;
  /** How often backup sync runs, in milliseconds; 0 disables it. */
  backupSyncPeriodMs: number;
  /** How often garbage collection runs, in milliseconds; 0 disables it. */
  garbageCollectionPeriodMs: number;
  /** The shortest gap between two runs of a NonAdminSchedule, in milliseconds; 0 allows any. */
  minimumScheduleIntervalMs: number;
  /** How long Velero's backup queue may stand still before NABs in it say it is stalled, in ms; 0 is off. */
  stalledQueueWarningAfterMs: number;
  /** How long a volume operation may stay Accepted before tenantkit resumes or cancels it, in ms; 0 is off. */
  resumeStuckVolumeOperationsAfterMs: number;
  /** The endpoints tenant locations may use (see endpointProblems); undefined allows any but link-local. */
  allowedStorageEndpoints: readonly string[] | undefined;
  /** How many of a namespace's NonAdminBackups may be in Velero's queue at once; 0 allows any. */
  maxQueuedBackupsPerNamespace: number;
  /** How many NonAdminSchedules a namespace may have; 0 allows any. */
  maxSchedulesPerNamespace: number;
  /** Namespaces whose Pods may carry Velero's hook annotations (policy/pod-hooks.ts); none by default. */
  podHookNamespaces: readonly string[];
  /** metadata.generation of the config (0 when there is none). */
  generation: number;
}

export const configType = NonAdminBackupConfigCrd.type;

/** Why every controller holds a tenant's request while the admin has not turned non-admin backups on. */
export const NonAdminDisabled = {
  reason: 'NonAdminDisabled',
  message: `non-admin backups are not enabled: an admin must set spec.nonAdmin.enable: true in NonAdminBackupConfig "${ConfigName}"`,
} as const;

const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1e3, m: 60e3, h: 3600e3 };

/**
 * A Go duration (`90s`, `1h30m`, `0`) in milliseconds, as the CRD's pattern admits them; undefined for
 * anything else, so a caller falls back to the default instead of running every millisecond.
 */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const part = /([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let at = 0;
  while (at < text.length) {
    part.lastIndex = at;
    const m = part.exec(text);
    if (!m) return undefined;
    total += Number(m[1]) * units[m[2]!]!;
    at = part.lastIndex;
  }
  return text.length > 0 ? total : undefined;
}

const periodMs = (value: string | undefined, fallback: string) =>
  parseDuration(value ?? fallback) ?? parseDuration(fallback)!;

export function currentPolicy(configs: Informer<NonAdminBackupConfig>): BackupPolicy {
  const config = configs.get(ConfigName);
  const nonAdmin = config?.spec?.nonAdmin;
  return {
    enabled: nonAdmin?.enable === true,
    veleroNamespace: nonAdmin?.veleroNamespace ?? DefaultVeleroNamespace,
    enforceBackupSpec: (nonAdmin?.enforceBackupSpec ?? {}) as JsonObject,
    enforceRestoreSpec: (nonAdmin?.enforceRestoreSpec ?? {}) as JsonObject,
    enforceBSLSpec: (nonAdmin?.enforceBSLSpec ?? {}) as JsonObject,
    requireApprovalForBSL: nonAdmin?.requireApprovalForBSL === true,
    backupSyncPeriodMs: periodMs(nonAdmin?.backupSyncPeriod, DefaultBackupSyncPeriod),
    garbageCollectionPeriodMs: periodMs(nonAdmin?.garbageCollectionPeriod, DefaultGarbageCollectionPeriod),
    minimumScheduleIntervalMs: periodMs(nonAdmin?.minimumScheduleInterval, DefaultMinimumScheduleInterval),
    stalledQueueWarningAfterMs: periodMs(nonAdmin?.stalledQueueWarningAfter, DefaultStalledQueueWarningAfter),
    resumeStuckVolumeOperationsAfterMs: periodMs(
      nonAdmin?.resumeStuckVolumeOperationsAfter,
      DefaultResumeStuckVolumeOperationsAfter,
    ),
    allowedStorageEndpoints: nonAdmin?.allowedStorageEndpoints,
    maxQueuedBackupsPerNamespace:
      nonAdmin?.maxQueuedBackupsPerNamespace ?? DefaultMaxQueuedBackupsPerNamespace,
    maxSchedulesPerNamespace: nonAdmin?.maxSchedulesPerNamespace ?? DefaultMaxSchedulesPerNamespace,
    podHookNamespaces: nonAdmin?.podHookNamespaces ?? [],
    generation: config?.metadata.generation ?? 0,
  };
}
