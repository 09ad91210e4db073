// Velero's API shapes (velero.io/v1, as of Velero v1.18) as reusable TypeBox schemas, for tenantkit APIs
// that embed them: NonAdminBackup carries a BackupSpec, NonAdminRestore a RestoreSpec, and so on.
// Velero owns its own CRDs (see the resource types at the end of this file); these definitions describe the same JSON so that
// what a tenant writes is exactly what tenantkit can hand on to Velero. Field names, types, required
// fields, nullability and list/map markers follow Velero's Go types as controller-gen renders them.
import { type Static, type TUnknown, Type } from '@sinclair/typebox';
import type { KubeObject, ResourceType } from '../kube/resources.ts';
import { Nullable } from './schema.ts';

// ---- Kubernetes types embedded by Velero -------------------------------------------------------------

const stringList = (description: string) => Type.Array(Type.String(), { description });
/** A list Velero treats as "not set" when null or absent. */
const nullableStringList = (description: string) => Nullable(Type.Array(Type.String()), { description });
const stringMap = (description: string) => Type.Record(Type.String(), Type.String(), { description });
/** A Go time.Duration string such as 30s, 10m or 1h30m. */
const duration = (description: string) => Type.String({ description });
/** An RFC 3339 timestamp that Velero writes as null while unknown. */
const nullableTimestamp = (description: string) =>
  Nullable(Type.String({ format: 'date-time' }), { description });
const nullableBool = (description: string) => Nullable(Type.Boolean(), { description });
/** An enum: a union of string literals. */
export const literals = <T extends string>(values: readonly T[], description: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    { description },
  );

/** metav1.LabelSelector: matchLabels and matchExpressions, ANDed. Replaced as a whole on merge. */
export const KubeLabelSelectorSchema = Type.Object(
  {
    matchLabels: Type.Optional(stringMap('Labels an object must carry, key and value.')),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object({
          key: Type.String({ description: 'The label key.' }),
          operator: Type.String({ description: 'In, NotIn, Exists or DoesNotExist.' }),
          values: Type.Optional(
            Type.Array(Type.String(), {
              description: 'Values for In and NotIn; empty for Exists and DoesNotExist.',
              'x-kubernetes-list-type': 'atomic',
            }),
          ),
        }),
        {
          description: 'Requirements on labels, all of which must hold.',
          'x-kubernetes-list-type': 'atomic',
        },
      ),
    ),
  },
  { 'x-kubernetes-map-type': 'atomic' },
);

/** corev1.SecretKeySelector: one key of a Secret. */
export const secretKeySelector = (description?: string) =>
  Type.Object(
    {
      name: Type.Optional(Type.String({ default: '', description: 'Name of the Secret.' })),
      key: Type.String({ description: 'The key within the Secret.' }),
      optional: Type.Optional(Type.Boolean({ description: 'Whether the Secret or key may be missing.' })),
    },
    { 'x-kubernetes-map-type': 'atomic', ...(description ? { description } : {}) },
  );

/** corev1.TypedLocalObjectReference: an object of a given kind in the same namespace. */
export const TypedLocalObjectReferenceSchema = Type.Object(
  {
    apiGroup: Type.Optional(Type.String({ description: 'API group of the kind; empty for the core group.' })),
    kind: Type.String({ description: 'Kind of the referenced object.' }),
    name: Type.String({ description: 'Name of the referenced object.' }),
  },
  { 'x-kubernetes-map-type': 'atomic' },
);

// ---- Shared Velero pieces ------------------------------------------------------------------------------

/** Which namespaces, resources and labels a hook applies to (backup and restore hooks alike). */
const hookScope = {
  name: Type.String({ description: 'Name of this hook spec.' }),
  includedNamespaces: Type.Optional(nullableStringList('Namespaces the hook applies to; all when empty.')),
  excludedNamespaces: Type.Optional(nullableStringList('Namespaces the hook does not apply to.')),
  includedResources: Type.Optional(nullableStringList('Resources the hook applies to; all when empty.')),
  excludedResources: Type.Optional(nullableStringList('Resources the hook does not apply to.')),
  labelSelector: Type.Optional(
    Nullable(KubeLabelSelectorSchema, { description: 'Only objects with matching labels.' }),
  ),
};

const hookErrorMode = () =>
  Type.Optional(literals(['Continue', 'Fail'] as const, 'Whether a failing hook fails the operation.'));

const hookCommand = () =>
  Type.Array(Type.String(), { minItems: 1, description: 'Command and arguments to run.' });

/** An exec hook run in a pod's container around backing it up. */
export const BackupExecHookSchema = Type.Object({
  container: Type.Optional(Type.String({ description: "Container to run in; the pod's first when empty." })),
  command: hookCommand(),
  onError: hookErrorMode(),
  timeout: Type.Optional(duration('How long to wait for the command before it counts as failed.')),
});

export const BackupResourceHookSchema = Type.Object({
  exec: BackupExecHookSchema,
});

export const BackupResourceHookSpecSchema = Type.Object({
  ...hookScope,
  pre: Type.Optional(
    Type.Array(BackupResourceHookSchema, { description: 'Hooks run before the item is backed up.' }),
  ),
  post: Type.Optional(
    Type.Array(BackupResourceHookSchema, { description: 'Hooks run after the item is backed up.' }),
  ),
});

export const BackupHooksSchema = Type.Object({
  resources: Type.Optional(
    Nullable(Type.Array(BackupResourceHookSpecSchema), { description: 'Hooks per selected resource.' }),
  ),
});

/** An exec hook run in a restored pod once its container is up. */
export const RestoreExecHookSchema = Type.Object({
  container: Type.Optional(Type.String({ description: "Container to run in; the pod's first when empty." })),
  command: hookCommand(),
  onError: hookErrorMode(),
  execTimeout: Type.Optional(duration('How long to wait for the command before it counts as failed.')),
  waitTimeout: Type.Optional(duration('How long to wait for the container to be ready.')),
  waitForReady: Type.Optional(nullableBool('Whether to wait for the container to be ready first.')),
});

/** Init containers added to a restored pod. */
export const InitRestoreHookSchema = Type.Object({
  initContainers: Type.Optional(
    Type.Array(
      // Unknown: any corev1.Container, checked by the API server's structural schema as an object.
      Type.Unknown({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }) as TUnknown & {
        static: Record<string, unknown>;
      },
      {
        description: 'Init containers (corev1.Container) to add to the pod.',
        'x-kubernetes-preserve-unknown-fields': true,
      },
    ),
  ),
  timeout: Type.Optional(duration('How long to wait for the init containers.')),
});

export const RestoreResourceHookSchema = Type.Object({
  exec: Type.Optional(RestoreExecHookSchema),
  init: Type.Optional(InitRestoreHookSchema),
});

export const RestoreResourceHookSpecSchema = Type.Object({
  ...hookScope,
  postHooks: Type.Optional(
    Type.Array(RestoreResourceHookSchema, { description: 'Hooks run after the item is restored.' }),
  ),
});

export const RestoreHooksSchema = Type.Object({
  resources: Type.Optional(
    Type.Array(RestoreResourceHookSpecSchema, { description: 'Hooks per selected resource.' }),
  ),
});

/** What every backup and restore filters on: namespaces, resources and labels. */
const selection = {
  includedNamespaces: Type.Optional(nullableStringList('Namespaces to include; all when empty.')),
  excludedNamespaces: Type.Optional(nullableStringList('Namespaces to leave out.')),
  includedResources: Type.Optional(nullableStringList('Resources to include; all when empty.')),
  excludedResources: Type.Optional(nullableStringList('Resources to leave out.')),
  labelSelector: Type.Optional(
    Nullable(KubeLabelSelectorSchema, { description: 'Only objects with matching labels.' }),
  ),
  orLabelSelectors: Type.Optional(
    Nullable(Type.Array(KubeLabelSelectorSchema), {
      description: 'Objects matching any of these selectors; exclusive with labelSelector.',
    }),
  ),
  includeClusterResources: Type.Optional(
    nullableBool('Whether cluster-scoped resources are considered at all.'),
  ),
  itemOperationTimeout: Type.Optional(duration('How long to wait for asynchronous item operations.')),
};

// ---- Backup --------------------------------------------------------------------------------------------

/** velero.io/v1 BackupSpec. */
export const BackupSpecSchema = Type.Object({
  metadata: Type.Optional(Type.Object({ labels: Type.Optional(stringMap('Labels for the Backup object.')) })),
  ...selection,
  includedClusterScopedResources: Type.Optional(
    nullableStringList('Cluster-scoped resource types to include; * for all.'),
  ),
  excludedClusterScopedResources: Type.Optional(
    nullableStringList('Cluster-scoped resource types to leave out; * for all.'),
  ),
  includedNamespaceScopedResources: Type.Optional(
    nullableStringList('Namespace-scoped resource types to include; all when empty.'),
  ),
  excludedNamespaceScopedResources: Type.Optional(
    nullableStringList('Namespace-scoped resource types to leave out; * for all.'),
  ),
  snapshotVolumes: Type.Optional(nullableBool('Whether to snapshot the persistent volumes backed up.')),
  ttl: Type.Optional(duration('How long the backup is kept.')),
  hooks: Type.Optional(BackupHooksSchema),
  storageLocation: Type.Optional(
    Type.String({ description: 'BackupStorageLocation to store the backup in.' }),
  ),
  volumeSnapshotLocations: Type.Optional(stringList('VolumeSnapshotLocations to use.')),
  defaultVolumesToRestic: Type.Optional(nullableBool('Deprecated: use defaultVolumesToFsBackup.')),
  defaultVolumesToFsBackup: Type.Optional(
    nullableBool('Whether to back up every pod volume with the file-system uploader.'),
  ),
  orderedResources: Type.Optional(
    Nullable(Type.Record(Type.String(), Type.String()), {
      description: 'Backup order per resource: comma-separated namespace/name (or name) lists.',
    }),
  ),
  csiSnapshotTimeout: Type.Optional(duration('How long to wait for a CSI VolumeSnapshot to be ready.')),
  resourcePolicy: Type.Optional(TypedLocalObjectReferenceSchema),
  snapshotMoveData: Type.Optional(nullableBool('Whether snapshot data is moved to the storage location.')),
  datamover: Type.Optional(Type.String({ description: 'Data mover to use; the built-in one when empty.' })),
  uploaderConfig: Type.Optional(
    Nullable(
      Type.Object({
        parallelFilesUpload: Type.Optional(Type.Integer({ description: 'Files uploaded in parallel.' })),
      }),
      { description: 'Settings of the file-system uploader.' },
    ),
  ),
  volumeGroupSnapshotLabelKey: Type.Optional(
    Type.String({ description: 'Label key that groups PVCs into one VolumeGroupSnapshot.' }),
  ),
});

export const backupPhases = [
  'New',
  'Queued',
  'ReadyToStart',
  'FailedValidation',
  'InProgress',
  'WaitingForPluginOperations',
  'WaitingForPluginOperationsPartiallyFailed',
  'Finalizing',
  'FinalizingPartiallyFailed',
  'Completed',
  'PartiallyFailed',
  'Failed',
  'Deleting',
] as const;

export const BackupPhaseSchema = (description = 'Phase of the Velero Backup.') =>
  literals(backupPhases, description);

const hookStatus = () =>
  Type.Optional(
    Nullable(
      Type.Object({
        hooksAttempted: Type.Optional(Type.Integer()),
        hooksFailed: Type.Optional(Type.Integer()),
      }),
      { description: 'How many hooks ran and failed.' },
    ),
  );

const count = (description: string) => Type.Optional(Type.Integer({ description }));

/** velero.io/v1 BackupStatus. */
export const BackupStatusSchema = Type.Object({
  version: count('Deprecated backup format version.'),
  formatVersion: Type.Optional(Type.String({ description: 'Format of the backup in object storage.' })),
  expiration: Type.Optional(nullableTimestamp('When the backup may be garbage-collected.')),
  phase: Type.Optional(BackupPhaseSchema()),
  queuePosition: count('Position in the queue of backups waiting to start.'),
  validationErrors: Type.Optional(nullableStringList('Why the backup failed validation.')),
  startTimestamp: Type.Optional(nullableTimestamp('When the backup started.')),
  completionTimestamp: Type.Optional(nullableTimestamp('When the backup finished.')),
  volumeSnapshotsAttempted: count('Volume snapshots attempted.'),
  volumeSnapshotsCompleted: count('Volume snapshots completed.'),
  failureReason: Type.Optional(Type.String({ description: 'Why the backup failed.' })),
  warnings: count('Warnings during the backup.'),
  errors: count('Errors during the backup.'),
  progress: Type.Optional(
    Nullable(
      Type.Object({
        totalItems: count('Items to back up, as far as known.'),
        itemsBackedUp: count('Items backed up so far.'),
      }),
      { description: 'Progress while the backup runs.' },
    ),
  ),
  csiVolumeSnapshotsAttempted: count('CSI VolumeSnapshots attempted.'),
  csiVolumeSnapshotsCompleted: count('CSI VolumeSnapshots completed.'),
  backupItemOperationsAttempted: count('Asynchronous item operations attempted.'),
  backupItemOperationsCompleted: count('Asynchronous item operations completed.'),
  backupItemOperationsFailed: count('Asynchronous item operations failed.'),
  hookStatus: hookStatus(),
});

// ---- Restore -------------------------------------------------------------------------------------------

/** velero.io/v1 RestoreSpec. */
export const RestoreSpecSchema = Type.Object({
  backupName: Type.Optional(Type.String({ description: 'Backup to restore from.' })),
  scheduleName: Type.Optional(
    Type.String({ description: "Restore from this Schedule's latest completed Backup." }),
  ),
  ...selection,
  namespaceMapping: Type.Optional(stringMap('Restore objects of namespace (key) into namespace (value).')),
  restoreStatus: Type.Optional(
    Nullable(
      Type.Object({
        includedResources: Type.Optional(nullableStringList('Resources whose status is restored.')),
        excludedResources: Type.Optional(nullableStringList('Resources whose status is not restored.')),
      }),
      { description: 'Which resources get their status restored.' },
    ),
  ),
  restorePVs: Type.Optional(nullableBool('Whether to restore persistent volumes from snapshots.')),
  preserveNodePorts: Type.Optional(nullableBool('Whether to keep the node ports of Services.')),
  hooks: Type.Optional(RestoreHooksSchema),
  existingResourcePolicy: Type.Optional(
    Nullable(Type.String(), { description: 'What to do with objects that exist already: none or update.' }),
  ),
  resourceModifier: Type.Optional(
    Nullable(TypedLocalObjectReferenceSchema, {
      description: 'ConfigMap with rules that modify objects while they are restored.',
    }),
  ),
  uploaderConfig: Type.Optional(
    Nullable(
      Type.Object({
        writeSparseFiles: Type.Optional(nullableBool('Whether to write files sparsely.')),
        parallelFilesDownload: Type.Optional(Type.Integer({ description: 'Files downloaded in parallel.' })),
      }),
      { description: 'Settings of the file-system uploader.' },
    ),
  ),
});

export const restorePhases = [
  'New',
  'FailedValidation',
  'InProgress',
  'WaitingForPluginOperations',
  'WaitingForPluginOperationsPartiallyFailed',
  'Completed',
  'PartiallyFailed',
  'Failed',
  'Finalizing',
  'FinalizingPartiallyFailed',
] as const;

/** velero.io/v1 RestoreStatus. */
export const RestoreStatusSchema = Type.Object({
  phase: Type.Optional(literals(restorePhases, 'Phase of the Velero Restore.')),
  validationErrors: Type.Optional(nullableStringList('Why the restore failed validation.')),
  warnings: count('Warnings during the restore.'),
  errors: count('Errors during the restore.'),
  failureReason: Type.Optional(Type.String({ description: 'Why the restore failed.' })),
  startTimestamp: Type.Optional(nullableTimestamp('When the restore started.')),
  completionTimestamp: Type.Optional(nullableTimestamp('When the restore finished.')),
  progress: Type.Optional(
    Nullable(
      Type.Object({
        totalItems: count('Items to restore, as far as known.'),
        itemsRestored: count('Items restored so far.'),
      }),
      { description: 'Progress while the restore runs.' },
    ),
  ),
  restoreItemOperationsAttempted: count('Asynchronous item operations attempted.'),
  restoreItemOperationsCompleted: count('Asynchronous item operations completed.'),
  restoreItemOperationsFailed: count('Asynchronous item operations failed.'),
  hookStatus: hookStatus(),
});

// ---- BackupStorageLocation -----------------------------------------------------------------------------

const accessMode = () =>
  Type.Optional(
    literals(['ReadOnly', 'ReadWrite'] as const, 'Whether Velero may write backups to the location.'),
  );

/** velero.io/v1 ObjectStorageLocation. */
export const ObjectStorageLocationSchema = Type.Object({
  bucket: Type.String({ description: 'Bucket that holds the backups.' }),
  prefix: Type.Optional(Type.String({ description: 'Path inside the bucket.' })),
  caCert: Type.Optional(
    Type.String({ format: 'byte', description: 'CA bundle (base64) for TLS to the provider; deprecated.' }),
  ),
  caCertRef: Type.Optional(secretKeySelector("Secret key with the CA bundle, in the location's namespace.")),
});

/** velero.io/v1 BackupStorageLocationSpec. */
export const BackupStorageLocationSpecSchema = Type.Object({
  provider: Type.String({ description: 'Object storage provider (plugin), e.g. aws.' }),
  objectStorage: ObjectStorageLocationSchema,
  config: Type.Optional(stringMap('Provider-specific settings.')),
  credential: Type.Optional(secretKeySelector('Secret key with the credentials for the location.')),
  default: Type.Optional(Type.Boolean({ description: 'Whether this is the default location.' })),
  accessMode: accessMode(),
  backupSyncPeriod: Type.Optional(
    Nullable(Type.String(), { description: 'How often backups are synced from storage; 0 disables.' }),
  ),
  validationFrequency: Type.Optional(
    Nullable(Type.String(), { description: 'How often the storage is validated; 0 disables.' }),
  ),
});

/** velero.io/v1 BackupStorageLocationStatus. */
export const BackupStorageLocationStatusSchema = Type.Object({
  phase: Type.Optional(
    literals(['Available', 'Unavailable'] as const, 'Whether Velero can reach the location.'),
  ),
  lastSyncedTime: Type.Optional(nullableTimestamp('When backups were last synced from the location.')),
  lastValidationTime: Type.Optional(nullableTimestamp('When the location was last validated.')),
  message: Type.Optional(Type.String({ description: 'Details about the phase.' })),
  lastSyncedRevision: Type.Optional(Type.String({ description: 'Deprecated and unused.' })),
  accessMode: accessMode(),
});

// ---- DeleteBackupRequest, DownloadRequest, Schedule ---------------------------------------------------

/** velero.io/v1 DeleteBackupRequestStatus. */
export const DeleteBackupRequestStatusSchema = Type.Object({
  phase: Type.Optional(
    literals(['New', 'InProgress', 'Processed'] as const, 'Phase of the deletion request.'),
  ),
  errors: Type.Optional(nullableStringList('Errors while deleting the backup.')),
});

export const downloadTargetKinds = [
  'BackupLog',
  'BackupContents',
  'BackupVolumeSnapshots',
  'BackupItemOperations',
  'BackupResourceList',
  'BackupResults',
  'RestoreLog',
  'RestoreResults',
  'RestoreResourceList',
  'RestoreItemOperations',
  'CSIBackupVolumeSnapshots',
  'CSIBackupVolumeSnapshotContents',
  'BackupVolumeInfos',
  'RestoreVolumeInfo',
] as const;

/** velero.io/v1 DownloadTarget. */
export const DownloadTargetSchema = Type.Object({
  kind: literals(downloadTargetKinds, 'Which file to download.'),
  name: Type.String({ description: 'Name of the Backup or Restore the file belongs to.' }),
});

/** velero.io/v1 DownloadRequestStatus. */
export const DownloadRequestStatusSchema = Type.Object({
  phase: Type.Optional(literals(['New', 'Processed'] as const, 'Phase of the download request.')),
  downloadURL: Type.Optional(Type.String({ description: 'Pre-signed URL of the file.' })),
  expiration: Type.Optional(nullableTimestamp('When the URL and the request expire.')),
});

/** velero.io/v1 ScheduleStatus. */
export const ScheduleStatusSchema = Type.Object({
  phase: Type.Optional(
    literals(['New', 'Enabled', 'FailedValidation'] as const, 'Phase of the Velero Schedule.'),
  ),
  lastBackup: Type.Optional(nullableTimestamp('When the schedule last created a Backup.')),
  lastSkipped: Type.Optional(nullableTimestamp('When the schedule last skipped a run.')),
  validationErrors: Type.Optional(stringList('Why the schedule failed validation.')),
});

export type BackupSpec = Static<typeof BackupSpecSchema>;
export type BackupStatus = Static<typeof BackupStatusSchema>;
export type RestoreSpec = Static<typeof RestoreSpecSchema>;
export type RestoreStatus = Static<typeof RestoreStatusSchema>;
export type BackupStorageLocationSpec = Static<typeof BackupStorageLocationSpecSchema>;
export type BackupStorageLocationStatus = Static<typeof BackupStorageLocationStatusSchema>;
export type DownloadTarget = Static<typeof DownloadTargetSchema>;
export type KubeLabelSelector = Static<typeof KubeLabelSelectorSchema>;

// The resource types tenantkit reads and writes in Velero's namespace, and the fields it reads from them.
// Velero owns these schemas; its CRDs come from the Velero binary (see devenv/velero/launch.ts).
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
