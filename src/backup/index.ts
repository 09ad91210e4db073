// Non-admin backup and restore: tenants' NonAdminBackups run as Velero Backups in Velero's namespace,
// under the admin's NonAdminBackupConfig. The one entry point of the capability.
import {
  backupCrds,
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
  NonAdminBackupStorageLocationRequestCrd,
  type NonAdminDownloadRequest,
  NonAdminDownloadRequestCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
  type NonAdminSchedule,
  NonAdminScheduleCrd,
} from '../api/backup.ts';
import type { Capability } from '../capability.ts';
import type { KubeObject } from '../kube/resources.ts';
import type { AdmissionRequest } from '../webhook/admission.ts';
import { reviewNonAdminBackup, reviewNonAdminRestore } from './admission.ts';
import { ownerships, reviewSyncedFrom } from './adopt.ts';
import { registerGarbageCollector } from './gc-controller.ts';
import { registerNabController } from './nab-controller.ts';
import { reviewNonAdminBackupStorageLocation } from './nabsl-admission.ts';
import { NabslType, registerNabslController } from './nabsl-controller.ts';
import { reviewNonAdminDownloadRequest } from './nadr-admission.ts';
import { registerNadrController } from './nadr-controller.ts';
import { registerNarController } from './nar-controller.ts';
import { reviewNonAdminSchedule } from './schedule-admission.ts';
import { registerScheduleController } from './schedule-controller.ts';
import { registerSyncController } from './sync-controller.ts';
import { registerTransparencyController } from './transparency-controller.ts';

const nab = NonAdminBackupCrd.type;
const config = NonAdminBackupConfigCrd.type;

export const backup: Capability = {
  name: 'backup',
  controllerRules: [
    // Tenants' requests: read them, keep a finalizer on them, report in status, delete on deleteBackup.
    {
      apiGroups: [nab.group],
      resources: [nab.plural],
      verbs: ['get', 'list', 'watch', 'update', 'patch', 'delete'],
    },
    { apiGroups: [nab.group], resources: [`${nab.plural}/status`], verbs: ['get', 'update', 'patch'] },
    // Restores: the same, without delete (a NonAdminRestore goes only when its tenant deletes it).
    {
      apiGroups: [nab.group],
      resources: ['nonadminrestores'],
      verbs: ['get', 'list', 'watch', 'update', 'patch'],
    },
    { apiGroups: [nab.group], resources: ['nonadminrestores/status'], verbs: ['get', 'update', 'patch'] },
    { apiGroups: [config.group], resources: [config.plural], verbs: ['get', 'list', 'watch'] },
    // Velero's side, in its namespace (Velero's CRDs are namespaced; the chart can narrow this to a Role).
    { apiGroups: ['velero.io'], resources: ['backups'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
    {
      apiGroups: ['velero.io'],
      resources: ['restores'],
      verbs: ['get', 'list', 'watch', 'create', 'delete'],
    },
    {
      apiGroups: ['velero.io'],
      resources: ['deletebackuprequests'],
      verbs: ['get', 'list', 'watch', 'create', 'delete'],
    },
    // Download requests: a finalizer on the tenant's request, its status, and deleting it once expired;
    // the Velero DownloadRequest made for it.
    {
      apiGroups: [nab.group],
      resources: ['nonadmindownloadrequests'],
      verbs: ['get', 'list', 'watch', 'update', 'patch', 'delete'],
    },
    {
      apiGroups: [nab.group],
      resources: ['nonadmindownloadrequests/status'],
      verbs: ['get', 'update', 'patch'],
    },
    {
      apiGroups: ['velero.io'],
      resources: ['downloadrequests'],
      verbs: ['get', 'list', 'watch', 'create', 'delete'],
    },
    // Tenant storage locations: read the NABSLs, keep a finalizer on them, report in status; in Velero's
    // namespace, the approval requests, the BackupStorageLocations and the copies of the tenants'
    // credential Secrets. Secrets only by name (get, never list/watch): no Secret is ever cached, and a
    // tenant's Secret is read only when its own NABSL names it.
    {
      apiGroups: [nab.group],
      resources: ['nonadminbackupstoragelocations'],
      verbs: ['get', 'list', 'watch', 'update', 'patch'],
    },
    {
      apiGroups: [nab.group],
      resources: ['nonadminbackupstoragelocations/status'],
      verbs: ['get', 'update', 'patch'],
    },
    {
      apiGroups: [nab.group],
      resources: ['nonadminbackupstoragelocationrequests'],
      verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    },
    {
      apiGroups: [nab.group],
      resources: ['nonadminbackupstoragelocationrequests/status'],
      verbs: ['get', 'patch'],
    },
    {
      apiGroups: ['velero.io'],
      resources: ['backupstoragelocations'],
      verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'],
    },
    { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'update', 'delete'] },
    // Transparency: a Role + RoleBinding per tenant namespace in Velero's namespace, letting the namespace's
    // admins get their own Backups/Restores by name. Granting `get` on backups/restores needs holding it
    // (above). Cluster-wide like every capability's rules; the chart could narrow them to a Role in the
    // Velero namespace (plus list/watch of RoleBindings and namespaces cluster-wide).
    {
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['roles', 'rolebindings'],
      verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
    },
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
    // Schedules: a finalizer on the tenant's NonAdminSchedule and resetting its one-shot skipImmediately,
    // its status; the Velero Schedule made for it (edits pushed with a patch).
    {
      apiGroups: [nab.group],
      resources: ['nonadminschedules'],
      verbs: ['get', 'list', 'watch', 'update', 'patch'],
    },
    { apiGroups: [nab.group], resources: ['nonadminschedules/status'], verbs: ['get', 'update', 'patch'] },
    {
      apiGroups: ['velero.io'],
      resources: ['schedules'],
      verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    },
    // Schedule runs and backup sync: a NonAdminBackup for an existing Velero Backup (ownership read from
    // BackupStorageLocations, see ownership.ts).
    { apiGroups: [nab.group], resources: [nab.plural], verbs: ['create'] },
    { apiGroups: ['velero.io'], resources: ['backupstoragelocations'], verbs: ['get', 'list', 'watch'] },
    // Progress counts: Velero's pod volume and data mover objects, read only.
    {
      apiGroups: ['velero.io'],
      resources: ['podvolumebackups', 'podvolumerestores', 'datauploads', 'datadownloads'],
      verbs: ['get', 'list', 'watch'],
    },
    // Garbage collection (gc-controller.ts): list tenantkit's objects of every kind in Velero's namespace
    // and delete orphans; read every origin kind; report on the config. Cluster-wide as above; the chart
    // could narrow the Velero-side verbs to a Role in Velero's namespace.
    {
      apiGroups: ['velero.io'],
      resources: [
        'backups',
        'restores',
        'backupstoragelocations',
        'deletebackuprequests',
        'downloadrequests',
        'schedules',
      ],
      verbs: ['list', 'delete'],
    },
    { apiGroups: ['velero.io'], resources: ['deletebackuprequests'], verbs: ['create'] },
    // Secret copies are read by name (their location's NACUUID), never listed: no list right on Secrets.
    { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'delete'] },
    {
      apiGroups: [nab.group],
      resources: ['nonadminbackupstoragelocationrequests'],
      verbs: ['list', 'delete'],
    },
    {
      apiGroups: [nab.group],
      resources: [
        'nonadminbackups',
        'nonadminrestores',
        'nonadminbackupstoragelocations',
        'nonadmindownloadrequests',
        'nonadminschedules',
      ],
      verbs: ['get', 'list', 'watch'],
    },
    { apiGroups: [config.group], resources: [`${config.plural}/status`], verbs: ['patch'] },
  ],
  // The admission webhook reads the policy from its cache.
  webhookRules: [
    { apiGroups: [config.group], resources: [config.plural], verbs: ['get', 'list', 'watch'] },
    // NonAdminBackups may name a NonAdminBackupStorageLocation of their namespace: it must exist.
    { apiGroups: [nab.group], resources: [NabslType.plural], verbs: ['get', 'list', 'watch'] },
    // The sync label of a NonAdminBackup may only name a Velero Backup its namespace owns (adopt.ts).
    {
      apiGroups: ['velero.io'],
      resources: ['backups', 'backupstoragelocations'],
      verbs: ['get', 'list', 'watch'],
    },
  ],
  webhooks({ manager }) {
    const configs = manager.informer<NonAdminBackupConfig>(config);
    const locations = manager.informer(NabslType);
    const owners = ownerships(manager, { nabs: false });
    const hasLocation = (namespace: string, name: string) =>
      locations.get(`${namespace}/${name}`) !== undefined;
    const rule = (type: { group: string; version: string; plural: string }) => ({
      operations: ['CREATE' as const, 'UPDATE' as const],
      apiGroups: [type.group],
      apiVersions: [type.version],
      resources: [type.plural],
    });
    return [
      {
        name: 'nonadminbackups',
        type: 'validating',
        // Fail closed: the controller would refuse the same objects, but the tenant deserves to hear it now.
        failurePolicy: 'Fail',
        timeoutSeconds: 5,
        rules: [rule(nab)],
        handler: (request) =>
          reviewSyncedFrom(owners, configs, request as AdmissionRequest<NonAdminBackup>) ??
          reviewNonAdminBackup(
            configs,
            request as AdmissionRequest<NonAdminBackup>,
            (namespace, name) => locations.get(`${namespace}/${name}`) !== undefined,
          ),
      },
      {
        name: 'nonadminschedules',
        type: 'validating',
        failurePolicy: 'Fail',
        timeoutSeconds: 5,
        rules: [rule(NonAdminScheduleCrd.type)],
        handler: (request) =>
          reviewNonAdminSchedule(configs, request as AdmissionRequest<NonAdminSchedule>, hasLocation),
      },
      {
        name: 'nonadminbackupstoragelocations',
        type: 'validating',
        // Fail closed: a location's spec decides where Velero writes and with which credentials.
        failurePolicy: 'Fail',
        timeoutSeconds: 5,
        rules: [rule(NabslType)],
        handler: (request) => reviewNonAdminBackupStorageLocation(configs, request),
      },
      {
        name: 'nonadminrestores',
        type: 'validating',
        failurePolicy: 'Fail',
        timeoutSeconds: 5,
        rules: [rule(NonAdminRestoreCrd.type)],
        handler: (request) => reviewNonAdminRestore(configs, request as AdmissionRequest<NonAdminRestore>),
      },
      {
        name: 'nonadmindownloadrequests',
        type: 'validating',
        failurePolicy: 'Fail',
        timeoutSeconds: 5,
        rules: [rule(NonAdminDownloadRequestCrd.type)],
        handler: (request) =>
          reviewNonAdminDownloadRequest(request as AdmissionRequest<NonAdminDownloadRequest>),
      },
    ];
  },
  controllers(ctx) {
    registerNabController(ctx.manager);
    registerNabslController(ctx.manager);
    registerNarController(ctx.manager);
    registerNadrController(ctx.manager);
    registerTransparencyController(ctx.manager);
    registerGarbageCollector(ctx.manager);
    registerScheduleController(ctx.manager);
    registerSyncController(ctx.manager);
  },
};

// Storage location requests are the admin's (approval), not the tenant's.
const tenantKinds = backupCrds
  .filter(
    (d) => d.type.group === NonAdminBackupCrd.type.group && d !== NonAdminBackupStorageLocationRequestCrd,
  )
  .map((d) => d.type.plural);
const aggregate = (...roles: string[]) =>
  Object.fromEntries(roles.map((r) => [`rbac.authorization.k8s.io/aggregate-to-${r}`, 'true']));

/**
 * What tenants get through the default roles, as the seed's RBAC shows: namespace admins and editors
 * manage the non-admin kinds, viewers read them. Nothing in Velero's namespace.
 */
export function backupUserClusterRoles(): KubeObject[] {
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'tenantkit:backup:editor', labels: aggregate('admin', 'edit') },
      rules: [
        {
          apiGroups: [NonAdminBackupCrd.type.group],
          resources: tenantKinds,
          verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
        },
        {
          apiGroups: [NonAdminBackupCrd.type.group],
          resources: tenantKinds.map((k) => `${k}/status`),
          verbs: ['get'],
        },
      ],
    } as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'tenantkit:backup:viewer', labels: aggregate('view') },
      rules: [
        {
          apiGroups: [NonAdminBackupCrd.type.group],
          resources: tenantKinds,
          verbs: ['get', 'list', 'watch'],
        },
        {
          apiGroups: [NonAdminBackupCrd.type.group],
          resources: tenantKinds.map((k) => `${k}/status`),
          verbs: ['get'],
        },
      ],
    } as KubeObject,
  ];
}
