// The backup capability's admission webhooks: one per tenant kind, all fail closed (the controllers
// would refuse the same objects, but the tenant deserves to hear it at `kubectl apply`). The one place
// they are declared (index.ts calls backupWebhooks); the reviews are the other files of admission/.
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
  NonAdminBackupStorageLocationCrd,
  type NonAdminDownloadRequest,
  NonAdminDownloadRequestCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
  type NonAdminSchedule,
  NonAdminScheduleCrd,
} from '../../crds/backup.ts';
import { ByNamespace, type Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import type { KubeObject } from '../../kube/resources.ts';
import type { AdmissionHandler, AdmissionRequest } from '../../webhook/admission.ts';
import type { WebhookDefinition } from '../../webhook/registration.ts';
import { ownerships } from '../velero/ownerships.ts';
import { reviewNonAdminBackup, reviewNonAdminRestore } from './backup-restore.ts';
import { reviewNonAdminDownloadRequest } from './download.ts';
import { reviewNonAdminBackupStorageLocation } from './location.ts';
import { carriesHookKeys, podHookRules, reviewPodHooks } from './pod-hooks.ts';
import { recordRequester, requesterUnchanged } from './requester.ts';
import { reviewNonAdminSchedule } from './schedule.ts';
import { reviewSyncedFrom } from './synced-from.ts';

type Kind = {
  type: { group: string; version: string; plural: string };
  spec: WebhookDefinition['specSchema'];
};

/** A fail-closed webhook on create and update of one tenant kind, its spec checked against the CRD's. */
function onWrite(
  name: string,
  kind: Kind,
  handler: AdmissionHandler,
  type: WebhookDefinition['type'] = 'validating',
): WebhookDefinition {
  return {
    name,
    type,
    failurePolicy: 'Fail',
    timeoutSeconds: 5,
    rules: [
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: [kind.type.group],
        apiVersions: [kind.type.version],
        resources: [kind.type.plural],
      },
    ],
    specSchema: kind.spec,
    handler,
  };
}

export function backupWebhooks(manager: Manager): WebhookDefinition[] {
  const configs = manager.informer<NonAdminBackupConfig>(NonAdminBackupConfigCrd.type);
  const locations = manager.informer(NonAdminBackupStorageLocationCrd.type);
  const hasLocation = (namespace: string, name: string) =>
    locations.get(`${namespace}/${name}`) !== undefined;
  const schedules = manager.informer<NonAdminSchedule>(NonAdminScheduleCrd.type);
  const schedulesIn = (namespace: string) => schedules.byIndex(ByNamespace, namespace).length;
  return [
    onWrite('nonadminbackups', NonAdminBackupCrd, reviewBackup(manager, configs, locations)),
    onWrite('nonadminschedules', NonAdminScheduleCrd, (request) =>
      reviewNonAdminSchedule(
        configs,
        request as AdmissionRequest<NonAdminSchedule>,
        hasLocation,
        schedulesIn,
      ),
    ),
    // A location's spec decides where Velero writes and with which credentials.
    onWrite('nonadminbackupstoragelocations', NonAdminBackupStorageLocationCrd, (request) =>
      reviewNonAdminBackupStorageLocation(configs, request),
    ),
    // Who asked: the restore writes only what this user could write (admission/requester.ts). A
    // NonAdminRestore without a trusted requester is refused by the controller anyway.
    onWrite(
      'nonadminrestores-requester',
      NonAdminRestoreCrd,
      (request) => recordRequester(request as AdmissionRequest<NonAdminRestore>),
      'mutating',
    ),
    onWrite(
      'nonadminrestores',
      NonAdminRestoreCrd,
      (request) =>
        requesterUnchanged(request as AdmissionRequest<NonAdminRestore>) ??
        reviewNonAdminRestore(configs, request as AdmissionRequest<NonAdminRestore>),
    ),
    onWrite('nonadmindownloadrequests', NonAdminDownloadRequestCrd, (request) =>
      reviewNonAdminDownloadRequest(request as AdmissionRequest<NonAdminDownloadRequest>),
    ),
    podHookWebhook(configs),
  ];
}

/**
 * Velero hook annotations on Pods and Pod templates (admission/pod-hooks.ts): fail closed, whoever writes
 * (a ReplicaSet's Pods are written by the control plane), but called only for objects that carry such a
 * key, and never for the cluster's own namespaces.
 */
export function podHookWebhook(configs: Informer<NonAdminBackupConfig>): WebhookDefinition {
  return {
    name: 'pod-hooks',
    type: 'validating',
    failurePolicy: 'Fail',
    timeoutSeconds: 5,
    rules: podHookRules,
    namespaceSelector: {
      matchExpressions: [
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: ['kube-system', 'kube-public', 'kube-node-lease'],
        },
      ],
    },
    includeControlPlane: true,
    matchConditions: [carriesHookKeys],
    handler: (request) => reviewPodHooks(configs, request),
  };
}

/** A NonAdminBackup: a sync label only for a Backup its namespace owns, then the policy's rules. */
function reviewBackup(
  manager: Manager,
  configs: Informer<NonAdminBackupConfig>,
  locations: Informer<KubeObject>,
): AdmissionHandler {
  const owners = ownerships(manager, { nabs: false });
  return async (request) => {
    const review = request as AdmissionRequest<NonAdminBackup>;
    // A location created a moment ago (one `kubectl apply` of both) may not be cached yet: the API
    // server is asked before the backup is refused for naming a missing one.
    const wanted = review.object?.spec?.backupSpec?.storageLocation;
    const ns = review.namespace ?? '';
    const live =
      typeof wanted === 'string' && wanted !== '' && !locations.get(`${ns}/${wanted}`)
        ? await manager.client.get(NonAdminBackupStorageLocationCrd.type, wanted, ns).catch(() => undefined)
        : undefined;
    return (
      reviewSyncedFrom(owners, configs, review) ??
      reviewNonAdminBackup(
        configs,
        review,
        (namespace, name) =>
          locations.get(`${namespace}/${name}`) !== undefined ||
          (live !== undefined && namespace === ns && name === wanted),
      )
    );
  };
}
