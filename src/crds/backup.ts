// Non-admin backup API. Tenants use OADP's oadp.openshift.io/v1alpha1 kinds, field for field as the
// OADP non-admin controller defines them, so that existing OADP clients (oadp-cli, console plugins,
// scripts) work against tenantkit unchanged: NonAdminBackup, NonAdminRestore, NonAdminSchedule,
// NonAdminBackupStorageLocation (with the admin's NonAdminBackupStorageLocationRequest to approve it)
// and NonAdminDownloadRequest. Each wraps a Velero spec (src/crds/velero.ts) that tenantkit turns into a
// Velero object in Velero's namespace; status mirrors that object.
//
// Cluster admins configure the capability with one NonAdminBackupConfig (backup.tenantkit.io), whose
// spec.nonAdmin uses the field names of OADP's DataProtectionApplication spec.nonAdmin.
import { Type } from '@sinclair/typebox';
import { type EnforcedKind, unenforceable } from './backup-policy.ts';
import { ConditionsSchema, defineCrd, MetaV1ConditionSchema, Nullable, type ObjectOf } from './schema.ts';
import {
  BackupPhaseSchema,
  BackupSpecSchema,
  BackupStatusSchema,
  BackupStorageLocationSpecSchema,
  BackupStorageLocationStatusSchema,
  DeleteBackupRequestStatusSchema,
  DownloadRequestStatusSchema,
  DownloadTargetSchema,
  literals,
  ObjectStorageLocationSchema,
  RestoreSpecSchema,
  RestoreStatusSchema,
  ScheduleStatusSchema,
} from './velero.ts';

const group = 'oadp.openshift.io';
const version = 'v1alpha1';
const categories = ['tenantkit'];

// ---- Pieces shared by the non-admin kinds ---------------------------------------------------------------

/** Lifecycle of every non-admin object: New, BackingOff (invalid, waiting for a change), Created, Deleting. */
export const nonAdminPhases = ['New', 'BackingOff', 'Created', 'Deleting'] as const;
const phase = (what: string) =>
  Type.Optional(literals(nonAdminPhases, `One-word summary of where the ${what} is in its lifecycle.`));

const conditions = () =>
  Type.Optional(Type.Array(MetaV1ConditionSchema, { description: 'Detailed state, one entry per type.' }));

/** Identifies the Velero object that tenantkit created for a non-admin object. */
const veleroObjectRef = (what: string) => ({
  nacuuid: Type.Optional(
    Type.String({ description: `Identifier that labels the Velero ${what} (openshift.io/oadp-*-nacuuid).` }),
  ),
  name: Type.Optional(Type.String({ description: `Name of the Velero ${what}.` })),
  namespace: Type.Optional(Type.String({ description: `Namespace of the Velero ${what} (Velero's).` })),
});

const queueInfo = () =>
  Type.Optional(
    Type.Object(
      {
        estimatedQueuePosition: Type.Integer({
          description: 'Velero operations ahead of this one; 0 once it runs or has finished.',
        }),
      },
      { description: "Where the Velero operation is in Velero's queue." },
    ),
  );

const n = (description: string) => Type.Optional(Type.Integer({ description }));

/** Bytes moved and why a volume failed: only present once Velero reported them. */
const transfer = (what: string, named: string) => ({
  bytesDone: n(`Bytes the ${what} have moved so far (present once Velero reports progress).`),
  totalBytes: n(`Bytes the ${what} move in all, as far as Velero knows yet.`),
  failures: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.String({ description: named }),
        message: Type.String({
          maxLength: 1024,
          description: "Velero's reason (a longer one keeps its start and its end, joined by ' … ').",
        }),
      }),
      { maxItems: 10, description: `Which ${what} failed or were canceled, and why (the first 10).` },
    ),
  ),
});

/** Counts of velero.io/v2alpha1 DataUploads or DataDownloads by phase. */
const dataMoverCounts = (what: string) =>
  Type.Optional(
    Type.Object(
      {
        total: n(`${what} in all.`),
        new: n(`${what} in phase New.`),
        accepted: n(`${what} in phase Accepted.`),
        prepared: n(`${what} in phase Prepared.`),
        inProgress: n(`${what} in phase InProgress.`),
        canceling: n(`${what} in phase Canceling.`),
        canceled: n(`${what} in phase Canceled.`),
        failed: n(`${what} in phase Failed.`),
        completed: n(`${what} in phase Completed.`),
        ...transfer(what, 'The PersistentVolumeClaim whose data failed to move.'),
      },
      { description: `Data mover ${what} of the operation, by phase.` },
    ),
  );

/** Counts of PodVolumeBackups or PodVolumeRestores by phase. */
const podVolumeCounts = (what: string) =>
  Type.Optional(
    Type.Object(
      {
        total: n(`${what} in all.`),
        new: n(`${what} in phase New.`),
        inProgress: n(`${what} in phase InProgress.`),
        failed: n(`${what} in phase Failed.`),
        completed: n(`${what} in phase Completed.`),
        ...transfer(what, 'The Pod and its volume, as <pod>/<volume>.'),
      },
      { description: `File-system ${what} of the operation, by phase.` },
    ),
  );

const requestPhaseColumn = { name: 'Request-Phase', type: 'string', jsonPath: '.status.phase' } as const;

// ---- NonAdminBackup -------------------------------------------------------------------------------------

export const NonAdminBackupCrd = defineCrd({
  group,
  version,
  kind: 'NonAdminBackup',
  plural: 'nonadminbackups',
  singular: 'nonadminbackup',
  scope: 'Namespaced',
  shortNames: ['nab'],
  categories,
  requireSpec: false,
  description:
    "A tenant's backup of its own namespace: tenantkit runs it as a Velero Backup limited to this namespace and reports that Backup's progress here.",
  spec: Type.Object({
    backupSpec: Type.Object(BackupSpecSchema.properties, {
      description: 'The Velero Backup to run; namespaces are always this one.',
    }),
    deleteBackup: Type.Optional(
      Type.Boolean({
        description: 'Set to true to delete the backup and its data in object storage, then this object.',
      }),
    ),
  }),
  status: Type.Object({
    phase: phase('NonAdminBackup'),
    conditions: conditions(),
    queueInfo: queueInfo(),
    veleroBackup: Type.Optional(
      Type.Object(
        {
          ...veleroObjectRef('Backup'),
          spec: Type.Optional(BackupSpecSchema),
          status: Type.Optional(BackupStatusSchema),
        },
        { description: 'The Velero Backup behind this object, its spec and status.' },
      ),
    ),
    veleroDeleteBackupRequest: Type.Optional(
      Type.Object(
        { ...veleroObjectRef('DeleteBackupRequest'), status: Type.Optional(DeleteBackupRequestStatusSchema) },
        { description: 'The Velero DeleteBackupRequest made when deleteBackup is set.' },
      ),
    ),
    dataMoverDataUploads: dataMoverCounts('DataUploads'),
    fileSystemPodVolumeBackups: podVolumeCounts('PodVolumeBackups'),
  }),
  printerColumns: [
    requestPhaseColumn,
    { name: 'Velero-Phase', type: 'string', jsonPath: '.status.veleroBackup.status.phase' },
  ],
});

// ---- NonAdminRestore ------------------------------------------------------------------------------------

/** One object of the backup that was not restored because its requester may not write it. */
const RefusedItemSchema = Type.Object({
  apiVersion: Type.String({ description: 'API version of the object.' }),
  kind: Type.String({ description: 'Kind of the object.' }),
  name: Type.String({ description: "Name of the object in the NonAdminRestore's namespace." }),
  verb: Type.String({ description: 'The write that was refused: create, patch, or update (of status).' }),
  reason: Type.String({ description: 'Why, as the API server answered: Forbidden, Invalid, ...' }),
  message: Type.String({ description: "The API server's message for the requester." }),
});

export const NonAdminRestoreCrd = defineCrd({
  group,
  version,
  kind: 'NonAdminRestore',
  plural: 'nonadminrestores',
  singular: 'nonadminrestore',
  scope: 'Namespaced',
  shortNames: ['nar'],
  categories,
  requireSpec: false,
  description:
    "A tenant's restore into its own namespace from one of its NonAdminBackups, run as a Velero Restore.",
  spec: Type.Object({
    restoreSpec: Type.Object(RestoreSpecSchema.properties, {
      description: 'The Velero Restore to run; backupName names a NonAdminBackup in this namespace.',
    }),
  }),
  status: Type.Object({
    phase: phase('NonAdminRestore'),
    conditions: conditions(),
    queueInfo: queueInfo(),
    veleroRestore: Type.Optional(
      Type.Object(
        { ...veleroObjectRef('Restore'), status: Type.Optional(RestoreStatusSchema) },
        { description: 'The Velero Restore behind this object and its status.' },
      ),
    ),
    dataMoverDataDownloads: dataMoverCounts('DataDownloads'),
    fileSystemPodVolumeRestores: podVolumeCounts('PodVolumeRestores'),
    refusedItems: Type.Optional(
      Type.Object(
        {
          count: Type.Integer({ minimum: 0, description: 'How many objects were not restored.' }),
          items: Type.Optional(
            Type.Array(RefusedItemSchema, { description: 'The first 500 of them, with the reason.' }),
          ),
        },
        {
          description:
            "Objects of the backup left out because the NonAdminRestore's creator could not have written them with their own rights (tenantkit's addition; set when the restore finished).",
        },
      ),
    ),
  }),
  printerColumns: [
    requestPhaseColumn,
    { name: 'Velero-Phase', type: 'string', jsonPath: '.status.veleroRestore.status.phase' },
  ],
});

// ---- NonAdminSchedule -----------------------------------------------------------------------------------

/** One Backup a NonAdminSchedule produced. */
const ScheduledBackupSchema = Type.Object({
  name: Type.String({ description: 'The NonAdminBackup that represents this run.' }),
  veleroBackupName: Type.String({ description: 'The Velero Backup of this run.' }),
  phase: Type.Optional(BackupPhaseSchema('Phase of the Velero Backup.')),
  startTimestamp: Type.Optional(
    Type.String({ format: 'date-time', description: 'When the backup started.' }),
  ),
  completionTimestamp: Type.Optional(
    Type.String({ format: 'date-time', description: 'When the backup finished.' }),
  ),
  expiration: Type.Optional(
    Type.String({ format: 'date-time', description: 'When Velero deletes the backup.' }),
  ),
});

export const NonAdminScheduleCrd = defineCrd({
  group,
  version,
  kind: 'NonAdminSchedule',
  plural: 'nonadminschedules',
  singular: 'nonadminschedule',
  scope: 'Namespaced',
  shortNames: ['nas'],
  categories,
  requireSpec: false,
  description:
    "Backups of a tenant's namespace on a cron schedule, run by a Velero Schedule; each run appears as a NonAdminBackup.",
  spec: Type.Object({
    schedule: Type.String({
      description: 'When to back up: a cron expression such as "0 3 * * *", or a descriptor such as @daily.',
    }),
    paused: Type.Optional(Type.Boolean({ description: 'No new backups while true.' })),
    skipImmediately: Type.Optional(
      Type.Boolean({
        description: 'Skip the run that is due now; reset once handed to the Velero Schedule.',
      }),
    ),
    template: Type.Object(
      {
        backupSpec: Type.Object(
          {
            ...BackupSpecSchema.properties,
            // Present in the upstream NonAdminSchedule's BackupSpec, not in Velero v1.18's.
            backupType: Type.Optional(
              literals(
                ['Full', 'Incremental'] as const,
                'Whether volume data is backed up in full or incrementally.',
              ),
            ),
          },
          { description: 'The Velero Backup every run makes; namespaces are always this one.' },
        ),
      },
      { description: 'What each scheduled run backs up.' },
    ),
  }),
  status: Type.Object({
    phase: phase('NonAdminSchedule'),
    conditions: conditions(),
    veleroSchedule: Type.Optional(
      Type.Object(
        { ...veleroObjectRef('Schedule'), status: Type.Optional(ScheduleStatusSchema) },
        { description: 'The Velero Schedule behind this object and its status.' },
      ),
    ),
    lastBackup: Type.Optional(
      Type.Object(ScheduledBackupSchema.properties, { description: 'The newest backup of this schedule.' }),
    ),
    recentBackups: Type.Optional(
      Type.Array(ScheduledBackupSchema, { description: 'Up to five recent backups, newest first.' }),
    ),
    nextRun: Type.Optional(Type.String({ format: 'date-time', description: 'When the next backup is due.' })),
  }),
  printerColumns: [
    requestPhaseColumn,
    { name: 'Velero-Phase', type: 'string', jsonPath: '.status.veleroSchedule.status.phase' },
    { name: 'Next-Run', type: 'date', jsonPath: '.status.nextRun' },
    { name: 'Paused', type: 'boolean', jsonPath: '.spec.paused' },
  ],
});

// ---- NonAdminBackupStorageLocation and its approval request ---------------------------------------------

export const NonAdminBackupStorageLocationCrd = defineCrd({
  group,
  version,
  kind: 'NonAdminBackupStorageLocation',
  plural: 'nonadminbackupstoragelocations',
  singular: 'nonadminbackupstoragelocation',
  scope: 'Namespaced',
  shortNames: ['nabsl'],
  categories,
  requireSpec: false,
  description:
    "A tenant's own object storage for its backups: tenantkit creates the Velero BackupStorageLocation (and copies the credential Secret) once the location is approved.",
  spec: Type.Object({
    backupStorageLocationSpec: Type.Object(BackupStorageLocationSpecSchema.properties, {
      description: 'The Velero BackupStorageLocation to create; credential names a Secret in this namespace.',
    }),
  }),
  status: Type.Object({
    phase: phase('NonAdminBackupStorageLocation'),
    conditions: conditions(),
    veleroBackupStorageLocation: Type.Optional(
      Type.Object(
        {
          ...veleroObjectRef('BackupStorageLocation'),
          status: Type.Optional(BackupStorageLocationStatusSchema),
        },
        { description: 'The Velero BackupStorageLocation behind this object and its status.' },
      ),
    ),
  }),
  printerColumns: [
    {
      name: 'Request-Approved',
      type: 'string',
      jsonPath: ".status.conditions[?(@.type=='ClusterAdminApproved')].status",
    },
    requestPhaseColumn,
    { name: 'Velero-Phase', type: 'string', jsonPath: '.status.veleroBackupStorageLocation.status.phase' },
  ],
});

export const NonAdminBackupStorageLocationRequestCrd = defineCrd({
  group,
  version,
  kind: 'NonAdminBackupStorageLocationRequest',
  plural: 'nonadminbackupstoragelocationrequests',
  singular: 'nonadminbackupstoragelocationrequest',
  scope: 'Namespaced',
  shortNames: ['nabslrequest'],
  categories,
  requireSpec: false,
  description:
    "An admin's decision on a NonAdminBackupStorageLocation; tenantkit creates one in Velero's namespace for each location when approval is required.",
  spec: Type.Object({
    approvalDecision: Type.Optional(
      literals(['approve', 'reject', 'pending'] as const, "The cluster admin's decision on the location."),
    ),
  }),
  status: Type.Object({
    phase: Type.Optional(literals(['Pending', 'Approved', 'Rejected'] as const, 'Where the request stands.')),
    nonAdminBackupStorageLocation: Type.Optional(
      Type.Object(
        {
          nacuuid: Type.Optional(
            Type.String({ description: 'Identifier of the NonAdminBackupStorageLocation.' }),
          ),
          name: Type.Optional(Type.String({ description: 'Name of the NonAdminBackupStorageLocation.' })),
          namespace: Type.Optional(Type.String({ description: "Its namespace (the tenant's)." })),
          requestedSpec: Type.Object(BackupStorageLocationSpecSchema.properties, {
            description: 'The BackupStorageLocation spec the tenant asked for.',
          }),
        },
        { description: 'The NonAdminBackupStorageLocation this request is about.' },
      ),
    ),
  }),
  printerColumns: [
    requestPhaseColumn,
    {
      name: 'Request-Namespace',
      type: 'string',
      jsonPath: '.status.nonAdminBackupStorageLocation.namespace',
    },
    { name: 'Request-Name', type: 'string', jsonPath: '.status.nonAdminBackupStorageLocation.name' },
  ],
});

// ---- NonAdminDownloadRequest ----------------------------------------------------------------------------

export const NonAdminDownloadRequestCrd = defineCrd({
  group,
  version,
  kind: 'NonAdminDownloadRequest',
  plural: 'nonadmindownloadrequests',
  singular: 'nonadmindownloadrequest',
  scope: 'Namespaced',
  shortNames: ['nadr'],
  categories,
  requireSpec: false,
  description:
    'A download of a log or result file of a NonAdminBackup or NonAdminRestore, through a Velero DownloadRequest.',
  spec: Type.Object({
    target: Type.Object(DownloadTargetSchema.properties, {
      description: 'The file to download; name is that of a NonAdminBackup or NonAdminRestore here.',
    }),
  }),
  status: Type.Object({
    phase: phase('NonAdminDownloadRequest'),
    conditions: conditions(),
    velero: Type.Optional(
      Type.Object(
        // OADP has only `status` here; tenantkit adds the NACUUID reference, as the other kinds have it.
        { ...veleroObjectRef('DownloadRequest'), status: Type.Optional(DownloadRequestStatusSchema) },
        { description: 'The Velero DownloadRequest behind this object.' },
      ),
    ),
  }),
  printerColumns: [requestPhaseColumn],
});

// ---- NonAdminBackupConfig (tenantkit's admin configuration) --------------------------------------------

/** A Go duration such as 2m, 24h or 1h30m; 0 disables. */
const durationPattern = '^(0|([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$';
const period = (description: string, fallback: string) =>
  Type.Optional(Type.String({ pattern: durationPattern, maxLength: 64, default: fallback, description }));

/**
 * CEL rules that refuse, at admission, the fields the backup capability never lets an admin enforce
 * (backup-policy.ts keeps the list and the reasons; src/backup/policy/enforce.ts reports the same messages).
 */
const refuseUnenforceable = (kind: EnforcedKind, configPath: string) =>
  Object.entries(unenforceable[kind]).map(([field, reason]) => ({
    rule: `!has(self.${field})`,
    message: `${configPath}.${field} cannot be enforced: ${reason}`,
  }));

/** The DPA's EnforceBackupStorageLocationSpec: a BSL spec with every field optional and no `default`. */
const EnforceBslSpecSchema = Type.Object(
  {
    ...Type.Omit(Type.Partial(BackupStorageLocationSpecSchema), ['default', 'objectStorage']).properties,
    objectStorage: Type.Optional(
      Nullable(Type.Partial(ObjectStorageLocationSchema), {
        description: 'Object storage values to enforce.',
      }),
    ),
  },
  {
    description: 'Values every NonAdminBackupStorageLocation must have (or gets when it sets none).',
    'x-kubernetes-validations': refuseUnenforceable(
      'NonAdminBackupStorageLocation',
      'spec.nonAdmin.enforceBSLSpec',
    ),
  },
);

export const NonAdminBackupConfigCrd = defineCrd({
  group: 'backup.tenantkit.io',
  version: 'v1alpha1',
  kind: 'NonAdminBackupConfig',
  plural: 'nonadminbackupconfigs',
  singular: 'nonadminbackupconfig',
  scope: 'Cluster',
  shortNames: ['nabconfig'],
  categories,
  description:
    'Configuration of non-admin backup and restore; only the object named "cluster" is used. spec.nonAdmin has the fields of an OADP DataProtectionApplication\'s spec.nonAdmin.',
  spec: Type.Object({
    nonAdmin: Type.Optional(
      Type.Object(
        {
          enable: Type.Optional(
            Type.Boolean({ default: false, description: 'Whether tenants may use the non-admin kinds.' }),
          ),
          enforceBackupSpec: Type.Optional(
            Type.Object(BackupSpecSchema.properties, {
              description:
                'BackupSpec values every NonAdminBackup and NonAdminSchedule gets; a tenant value that differs is rejected.',
              'x-kubernetes-validations': refuseUnenforceable(
                'NonAdminBackup',
                'spec.nonAdmin.enforceBackupSpec',
              ),
            }),
          ),
          enforceRestoreSpec: Type.Optional(
            Type.Object(RestoreSpecSchema.properties, {
              description:
                'RestoreSpec values every NonAdminRestore gets; a tenant value that differs is rejected.',
              'x-kubernetes-validations': refuseUnenforceable(
                'NonAdminRestore',
                'spec.nonAdmin.enforceRestoreSpec',
              ),
            }),
          ),
          enforceBSLSpec: Type.Optional(EnforceBslSpecSchema),
          requireApprovalForBSL: Type.Optional(
            Type.Boolean({
              default: false,
              description:
                'Whether an admin must approve (NonAdminBackupStorageLocationRequest) each tenant storage location; when false, all are approved.',
            }),
          ),
          backupSyncPeriod: period(
            "How often Velero's Backups are synced into tenants' namespaces as NonAdminBackups; 0 disables.",
            '2m',
          ),
          garbageCollectionPeriod: period(
            'How often Velero objects left behind by deleted non-admin objects are removed; 0 disables.',
            '24h',
          ),
          minimumScheduleInterval: period(
            'The shortest time a NonAdminSchedule may leave between two runs (its cron fields or @every); a schedule that runs more often is refused. Velero runs one backup at a time for everyone, so this bounds what one tenant can take. 0 allows any.',
            '1h',
          ),
          stalledQueueWarningAfter: period(
            "How long Velero's backup (restore) queue may hold unfinished Backups (Restores) without any moving (none started, progressed or finished, no volume moved) before each NonAdminBackup (NonAdminRestore) in it says the queue is stalled: its Queued condition, reason VeleroQueueStalled, and a Warning Event. Velero runs them one at a time, so one stuck backup holds every later one. A running Backup (Restore) that alone has not changed for as long while Velero goes on with others (--concurrent-backups above 1) says it is stuck (reason VeleroBackupStuck, VeleroRestoreStuck). 0 disables.",
            '10m',
          ),
          resumeStuckVolumeOperationsAfter: period(
            "How long a volume operation of Velero's node-agent (PodVolumeBackup, PodVolumeRestore, DataUpload, DataDownload) may stay Accepted before tenantkit acts on it: when its data mover Pod has been running that long, it annotates the Pod, which the node-agent waits for to start the operation (a node-agent restarted at that moment misses it); when there is no data mover Pod, it cancels the operation (spec.cancel, Velero's own way), so its backup or restore ends with Velero's reason instead of holding Velero's queue for the 30-minute prepare timeout. When an InProgress one's data mover Pod has ended that long (the node-agent was down when it ended and waits 10 minutes for it to run again), it cancels the operation too. 0 disables.",
            '2m',
          ),
          allowedStorageEndpoints: Type.Optional(
            Type.Array(
              Type.String({
                minLength: 1,
                maxLength: 253,
                pattern:
                  '^(\\*\\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?$|^\\[[0-9a-f:.]+\\](:[0-9]{1,5})?$',
              }),
              {
                maxItems: 256,
                description:
                  "The S3 endpoints tenants' own storage locations may use (config.s3Url): a host (s3.example.com), a host and port (minio.storage.svc:9000), or every subdomain of a domain (*.example.com). Unset allows any endpoint but link-local ones (cloud metadata); an empty list allows none. Velero and tenantkit send requests to these endpoints, so list only stores you trust to answer.",
              },
            ),
          ),
          maxQueuedBackupsPerNamespace: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 10000,
              default: 5,
              description:
                "How many of a namespace's NonAdminBackups may be in Velero's queue (created in Velero and not finished) at once; later ones wait in tenantkit, in creation order, so one tenant cannot push every other tenant's backups back. 0 allows any number.",
            }),
          ),
          maxSchedulesPerNamespace: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 10000,
              default: 10,
              description:
                "How many NonAdminSchedules a namespace may have; a schedule beyond this number is refused at admission, and one stored past the webhook (or left over after the number was lowered) makes no runs. Each schedule's runs take places in Velero's one queue, so this bounds what one tenant can take. 0 allows any number.",
            }),
          ),
          podHookNamespaces: Type.Optional(
            Type.Array(
              Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' }),
              {
                maxItems: 256,
                description:
                  "Namespaces whose Pods (and workloads' Pod templates) may carry Velero's hook annotations (pre.hook.backup.velero.io/command and the like). Velero runs those hooks in every backup or restore that includes the Pod, whatever the Backup says and for as long as the annotation's timeout, one backup at a time for the whole cluster; so in every other namespace (but Velero's and the cluster's own) tenantkit refuses them. List only namespaces no tenant can create or write Pods in.",
              },
            ),
          ),
          veleroNamespace: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 63,
              pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
              default: 'velero',
              description: 'Namespace where Velero runs and tenantkit creates the Velero objects.',
            }),
          ),
        },
        {
          default: {},
          description: 'Non-admin backup settings, named as in an OADP DataProtectionApplication.',
          'x-kubernetes-validations': [
            {
              rule: "!has(self.garbageCollectionPeriod) || !has(self.backupSyncPeriod) || duration(self.garbageCollectionPeriod) == duration('0s') || duration(self.backupSyncPeriod) == duration('0s') || duration(self.garbageCollectionPeriod) > duration(self.backupSyncPeriod)",
              message: 'garbageCollectionPeriod must be longer than backupSyncPeriod',
            },
          ],
        },
      ),
    ),
  }),
  status: Type.Object({
    observedGeneration: Type.Optional(Type.Integer({ format: 'int64' })),
    conditions: Type.Optional(ConditionsSchema),
  }),
  validations: [
    { rule: "self.metadata.name == 'cluster'", message: 'the NonAdminBackupConfig must be named "cluster"' },
  ],
  printerColumns: [
    { name: 'Enabled', type: 'boolean', jsonPath: '.spec.nonAdmin.enable' },
    { name: 'Velero-Namespace', type: 'string', jsonPath: '.spec.nonAdmin.veleroNamespace' },
    { name: 'BSL-Approval', type: 'boolean', jsonPath: '.spec.nonAdmin.requireApprovalForBSL' },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    {
      name: 'Reason',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      priority: 1,
    },
  ],
});

export const backupCrds = [
  NonAdminBackupCrd,
  NonAdminRestoreCrd,
  NonAdminScheduleCrd,
  NonAdminBackupStorageLocationCrd,
  NonAdminBackupStorageLocationRequestCrd,
  NonAdminDownloadRequestCrd,
  NonAdminBackupConfigCrd,
];

export type NonAdminBackup = ObjectOf<typeof NonAdminBackupCrd>;
export type NonAdminRestore = ObjectOf<typeof NonAdminRestoreCrd>;
export type NonAdminSchedule = ObjectOf<typeof NonAdminScheduleCrd>;
export type NonAdminBackupStorageLocation = ObjectOf<typeof NonAdminBackupStorageLocationCrd>;
export type NonAdminBackupStorageLocationRequest = ObjectOf<typeof NonAdminBackupStorageLocationRequestCrd>;
export type NonAdminDownloadRequest = ObjectOf<typeof NonAdminDownloadRequestCrd>;
export type NonAdminBackupConfig = ObjectOf<typeof NonAdminBackupConfigCrd>;
