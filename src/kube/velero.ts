// Velero's API (velero.io/v1) as tenantkit talks to it: the resource types and the fields it reads.
// Velero owns these schemas; its CRDs come from the Velero binary (see src/controlplane/velero-launch.ts).
import type { KubeObject, ResourceType } from './resources.ts';

const velero = (plural: string, kind: string): ResourceType => ({
  group: 'velero.io',
  version: 'v1',
  plural,
  kind,
  namespaced: true,
});

export const VeleroResources = {
  backups: velero('backups', 'Backup'),
  restores: velero('restores', 'Restore'),
  backupStorageLocations: velero('backupstoragelocations', 'BackupStorageLocation'),
  deleteBackupRequests: velero('deletebackuprequests', 'DeleteBackupRequest'),
  downloadRequests: velero('downloadrequests', 'DownloadRequest'),
  schedules: velero('schedules', 'Schedule'),
  serverStatusRequests: velero('serverstatusrequests', 'ServerStatusRequest'),
  podVolumeBackups: velero('podvolumebackups', 'PodVolumeBackup'),
  podVolumeRestores: velero('podvolumerestores', 'PodVolumeRestore'),
  dataUploads: { ...velero('datauploads', 'DataUpload'), version: 'v2alpha1' },
  dataDownloads: { ...velero('datadownloads', 'DataDownload'), version: 'v2alpha1' },
} satisfies Record<string, ResourceType>;

export interface BackupStorageLocation extends KubeObject {
  spec: {
    provider: string;
    objectStorage: { bucket: string; prefix?: string };
    config?: Record<string, string>;
    credential?: { name: string; key: string };
    default?: boolean;
    accessMode?: 'ReadWrite' | 'ReadOnly';
  };
  status?: { phase?: 'Available' | 'Unavailable'; message?: string; lastValidationTime?: string };
}

/** The phases a Backup or Restore ends in; any other phase means Velero is still at work. */
export const finishedPhases = ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation'] as const;

/** What Backups and Restores both report. */
interface OperationStatus {
  phase?: string;
  errors?: number;
  warnings?: number;
  failureReason?: string;
  validationErrors?: string[];
}

export interface Backup extends KubeObject {
  spec: {
    includedNamespaces?: string[];
    excludedResources?: string[];
    storageLocation?: string;
    snapshotVolumes?: boolean;
    defaultVolumesToFsBackup?: boolean;
    ttl?: string;
  };
  status?: OperationStatus & { progress?: { itemsBackedUp?: number; totalItems?: number } };
}

export interface Restore extends KubeObject {
  spec: {
    backupName: string;
    includedNamespaces?: string[];
    existingResourcePolicy?: 'none' | 'update';
  };
  status?: OperationStatus & { progress?: { itemsRestored?: number; totalItems?: number } };
}
