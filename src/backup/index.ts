// Non-admin backup and restore: tenants' NonAdminBackups run as Velero Backups in Velero's namespace,
// under the admin's NonAdminBackupConfig. The one entry point of the capability.

import type { Capability, ConsoleCall } from '../capability.ts';
import { crdTypes } from '../crds/generated/crd-types.ts';
import type { KubeObject } from '../kube/resources.ts';
import { backupUserClusterRoles, tenantKinds } from './policy/tenant-roles.ts';

const nab = crdTypes.NonAdminBackup;
const config = crdTypes.NonAdminBackupConfig;

export const backup: Capability = {
  name: 'backup',
  userClusterRoles: backupUserClusterRoles,
  // Cluster-wide: reading (informers over every namespace: Velero's namespace is live configuration)
  // and the tenants' own objects. Every write in Velero's namespace is in controllerNamespacedRules below.
  controllerRules: [
    // The tenant kinds: read them, keep a finalizer on them, report in status. NonAdminBackups are also
    // created (schedule runs, backup sync) and deleted (deleteBackup); NonAdminDownloadRequests deleted
    // once expired. A NonAdminRestore goes only when its tenant deletes it.
    {
      apiGroups: [nab.group],
      resources: [
        'nonadminbackups',
        'nonadminrestores',
        'nonadminbackupstoragelocations',
        'nonadmindownloadrequests',
        'nonadminschedules',
      ],
      verbs: ['get', 'list', 'watch', 'update', 'patch'],
    },
    {
      apiGroups: [nab.group],
      resources: ['nonadminbackups', 'nonadmindownloadrequests'],
      verbs: ['create', 'delete'],
    },
    {
      apiGroups: [nab.group],
      resources: [
        'nonadminbackups/status',
        'nonadminrestores/status',
        'nonadminbackupstoragelocations/status',
        'nonadmindownloadrequests/status',
        'nonadminschedules/status',
      ],
      verbs: ['get', 'update', 'patch'],
    },
    // The admin's policy, and the garbage collector's condition on it.
    { apiGroups: [config.group], resources: [config.plural], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [config.group], resources: [`${config.plural}/status`], verbs: ['patch'] },
    // Velero's objects (queue positions count everyone's Backups and Restores; ownership reads storage
    // locations; progress reads pod volume and data mover objects), approval requests, namespaces.
    {
      apiGroups: ['velero.io'],
      resources: [
        'backups',
        'restores',
        'deletebackuprequests',
        'downloadrequests',
        'backupstoragelocations',
        'schedules',
        'podvolumebackups',
        'podvolumerestores',
        'datauploads',
        'datadownloads',
      ],
      verbs: ['get', 'list', 'watch'],
    },
    {
      apiGroups: [nab.group],
      resources: ['nonadminbackupstoragelocationrequests'],
      verbs: ['get', 'list', 'watch'],
    },
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
    // A tenant's credential Secret, read by name only when its own NABSL names it (never listed or
    // watched: no Secret is cached).
    { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
    // Transparency: who administers each tenant namespace (its RoleBindings), and the Roles it keeps.
    {
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['roles', 'rolebindings'],
      verbs: ['get', 'list', 'watch'],
    },
  ],
  // Writes in Velero's namespace only, by a Role there (the chart's `backup.veleroNamespace`).
  controllerNamespacedRules: [
    {
      namespaceValue: 'backup.veleroNamespace',
      rules: [
        // The Velero objects made for tenants' requests; the garbage collector deletes orphans of each.
        {
          apiGroups: ['velero.io'],
          resources: ['backups', 'restores', 'deletebackuprequests', 'downloadrequests'],
          verbs: ['create', 'delete'],
        },
        {
          apiGroups: ['velero.io'],
          resources: ['backupstoragelocations', 'schedules'],
          verbs: ['create', 'update', 'patch', 'delete'],
        },
        // A finished Backup Velero still counts as running is handed back to its finalizer (its phase set
        // to Finalizing again) so that its deletion goes through (controllers/backup/delete.ts).
        { apiGroups: ['velero.io'], resources: ['backups'], verbs: ['patch'] },
        // The restore guard: asking Velero which plugins it runs (controllers/restore/guard.ts), and reading the
        // refusals the plugin recorded for a finished tenant Restore (by name, never listed).
        { apiGroups: ['velero.io'], resources: ['serverstatusrequests'], verbs: ['create', 'get'] },
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
        // Velero volume operations its node-agent left Accepted (controllers/resume/): their data mover
        // Pods are read by name and annotated, and an operation without one is canceled (spec.cancel).
        { apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] },
        {
          apiGroups: ['velero.io'],
          resources: ['podvolumebackups', 'podvolumerestores', 'datauploads', 'datadownloads'],
          verbs: ['patch'],
        },
        // Copies of tenants' credential Secrets (read back by name, never listed).
        { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'update', 'delete'] },
        // Approval requests for tenant storage locations.
        {
          apiGroups: [nab.group],
          resources: ['nonadminbackupstoragelocationrequests'],
          verbs: ['create', 'patch', 'delete'],
        },
        {
          apiGroups: [nab.group],
          resources: ['nonadminbackupstoragelocationrequests/status'],
          verbs: ['get', 'patch'],
        },
        // Transparency: a Role + RoleBinding per tenant namespace granting `get` on its own Backups and
        // Restores by name (granting `get` needs holding it, above).
        {
          apiGroups: ['rbac.authorization.k8s.io'],
          resources: ['roles', 'rolebindings'],
          verbs: ['create', 'update', 'patch', 'delete'],
        },
      ],
    },
  ],
  // The admission webhook reads the policy from its cache.
  webhookRules: [
    { apiGroups: [config.group], resources: [config.plural], verbs: ['get', 'list', 'watch'] },
    // NonAdminBackups may name a NonAdminBackupStorageLocation of their namespace: it must exist.
    {
      apiGroups: [nab.group],
      resources: [crdTypes.NonAdminBackupStorageLocation.plural],
      verbs: ['get', 'list', 'watch'],
    },
    // A namespace's NonAdminSchedules are counted against maxSchedulesPerNamespace.
    {
      apiGroups: [nab.group],
      resources: [crdTypes.NonAdminSchedule.plural],
      verbs: ['get', 'list', 'watch'],
    },
    // The sync label of a NonAdminBackup may only name a Velero Backup its namespace owns (admission/synced-from.ts).
    {
      apiGroups: ['velero.io'],
      resources: ['backups', 'backupstoragelocations'],
      verbs: ['get', 'list', 'watch'],
    },
    // ... as the instance or organization recorded on it (velero/ownership.ts): namespaces are read.
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
  ],
  webhooks: async ({ manager }) => (await import('./admission/webhooks.ts')).backupWebhooks(manager),
  controllers: async ({ manager }) =>
    (await import('./controllers/index.ts')).registerBackupControllers(manager),
  commands: {
    backup: {
      usage: `  tenantkit backup create|get|describe|logs|delete ... [-n NS]
                                            back up your namespace (NonAdminBackups); see tenantkit backup --help`,
      run: async (args) => (await import('./cli/backup.ts')).backupCommand(args),
    },
    restore: {
      usage: `  tenantkit restore create|get|describe|logs|delete ... [-n NS]
                                            restore it from those backups; see tenantkit restore --help`,
      run: async (args) => (await import('./cli/restore.ts')).restoreCommand(args),
    },
  },
  // The backups page: the tenant kinds in a namespace, and the admin's enforced values.
  consoleCalls: [
    ...tenantKinds.flatMap((plural): ConsoleCall[] => {
      const resource = { group: nab.group, version: nab.version, plural };
      return [
        { methods: ['GET', 'POST'], resource, namespaced: true, scope: 'collection' },
        { methods: ['GET', 'DELETE'], resource, namespaced: true, scope: 'object' },
      ];
    }),
    {
      methods: ['GET'],
      resource: { group: config.group, version: config.version, plural: config.plural },
      namespaced: false,
      scope: 'object',
      name: 'cluster',
    },
  ],
  generatedFiles: async () => (await import('./velero/restore-guard-names.ts')).restoreGuardFiles(),
  // Non-admin backups on, for the Velero dev runs.
  async devSeed({ client, fieldManager, veleroNamespace }) {
    const cluster = { metadata: { name: 'cluster' }, spec: { nonAdmin: { enable: true, veleroNamespace } } };
    await client.apply(config, cluster as KubeObject, { fieldManager, force: true });
  },
};
