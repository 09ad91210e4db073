// The admin's policy for non-admin backup, read from the NonAdminBackupConfig named "cluster" through the
// manager's informer: every reconcile sees the current one, so a change applies live (no restart), and
// objects record the generation they were checked against.
import { type NonAdminBackupConfig, NonAdminBackupConfigCrd } from '../api/backup.ts';
import type { Informer } from '../kube/informer.ts';
import type { JsonObject } from './enforce.ts';

export const ConfigName = 'cluster';
export const DefaultVeleroNamespace = 'velero';

export interface BackupPolicy {
  enabled: boolean;
  veleroNamespace: string;
  enforceBackupSpec: JsonObject;
  enforceRestoreSpec: JsonObject;
  /** metadata.generation of the config (0 when there is none). */
  generation: number;
}

export const configType = NonAdminBackupConfigCrd.type;

export function currentPolicy(configs: Informer<NonAdminBackupConfig>): BackupPolicy {
  const config = configs.get(ConfigName);
  const nonAdmin = config?.spec?.nonAdmin;
  return {
    enabled: nonAdmin?.enable === true,
    veleroNamespace: nonAdmin?.veleroNamespace ?? DefaultVeleroNamespace,
    enforceBackupSpec: (nonAdmin?.enforceBackupSpec ?? {}) as JsonObject,
    enforceRestoreSpec: (nonAdmin?.enforceRestoreSpec ?? {}) as JsonObject,
    generation: config?.metadata.generation ?? 0,
  };
}
