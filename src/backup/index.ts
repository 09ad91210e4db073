// Non-admin backup and restore: tenants' NonAdminBackups run as Velero Backups in Velero's namespace,
// under the admin's NonAdminBackupConfig. The one entry point of the capability.
import {
  backupCrds,
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
  NonAdminBackupStorageLocationRequestCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../api/backup.ts';
import type { Capability } from '../capability.ts';
import type { KubeObject } from '../kube/resources.ts';
import type { AdmissionRequest } from '../webhook/admission.ts';
import { reviewNonAdminBackup, reviewNonAdminRestore } from './admission.ts';
import { registerNabController } from './nab-controller.ts';
import { registerNarController } from './nar-controller.ts';
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
  ],
  // The admission webhook reads the policy from its cache.
  webhookRules: [{ apiGroups: [config.group], resources: [config.plural], verbs: ['get', 'list', 'watch'] }],
  webhooks({ manager }) {
    const configs = manager.informer<NonAdminBackupConfig>(config);
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
        handler: (request) => reviewNonAdminBackup(configs, request as AdmissionRequest<NonAdminBackup>),
      },
      {
        name: 'nonadminrestores',
        type: 'validating',
        failurePolicy: 'Fail',
        timeoutSeconds: 5,
        rules: [rule(NonAdminRestoreCrd.type)],
        handler: (request) => reviewNonAdminRestore(configs, request as AdmissionRequest<NonAdminRestore>),
      },
    ];
  },
  controllers(ctx) {
    registerNabController(ctx.manager);
    registerNarController(ctx.manager);
    registerTransparencyController(ctx.manager);
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
