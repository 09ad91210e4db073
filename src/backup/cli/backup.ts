// `tenantkit backup create|get|describe|logs|delete`: a tenant's NonAdminBackups with the verbs and flags
// of `oc oadp nonadmin backup` (and `velero backup`), as the kubeconfig's user, in one namespace. Here is
// what is NonAdminBackup's own: its entry in the kind table and its half of `create`; the verbs both
// kinds share are in verbs.ts and create.ts.
import { type NonAdminBackup, NonAdminBackupCrd } from '../../crds/backup.ts';
import { PatchType } from '../../kube/client.ts';
import type { LabelSelector } from '../../kube/selectors.ts';
import { runCommand, type Verb } from './command.ts';
import { createFlagsUsage, createOperation, parseCreateArgs, refusal } from './create.ts';
import { describeBackup } from './describe.ts';
import { isFinished, type OperationKind } from './kind.ts';
import { shortDuration } from './shared.ts';
import { backupSpecFromFlags, formatSelector } from './spec.ts';
import { sharedVerbs } from './verbs.ts';

const nabType = NonAdminBackupCrd.type;

/** Velero's own spec once there is one: it shows what the admin's enforced defaults made of the request. */
const requested = (nab: NonAdminBackup) => nab.status?.veleroBackup?.spec ?? nab.spec?.backupSpec ?? {};

/** The time left until Velero deletes the backup, as kubectl prints ages. */
function expiresIn(nab: NonAdminBackup, now: number): string {
  const expiration = nab.status?.veleroBackup?.status?.expiration;
  if (!expiration) return '';
  const left = Date.parse(expiration) - now;
  return left <= 0 ? 'expired' : shortDuration(left);
}

export const backupKind: OperationKind<NonAdminBackup> = {
  noun: 'backup',
  type: nabType,
  velero: (nab) => nab.status?.veleroBackup?.status,
  columns: ({ status, errors, warnings, created }) => [
    status,
    errors,
    warnings,
    created,
    { header: 'EXPIRES', cell: expiresIn },
    { header: 'STORAGE LOCATION', cell: (nab) => String(requested(nab).storageLocation || 'default') },
    {
      header: 'SELECTOR',
      cell: (nab) => formatSelector(requested(nab).labelSelector as LabelSelector | undefined),
    },
  ],
  describe: describeBackup,
  deletion: {
    summary: 'delete the backup and its data in object storage',
    question: (name, namespace) =>
      `Are you sure you want to delete backup "${name}" in namespace ${namespace} and its data in object storage?`,
    // As OADP does: the controller deletes the Velero Backup and its data, then the NonAdminBackup.
    request: (s, name) =>
      s.client.patch(nabType, name, s.namespace, { spec: { deleteBackup: true } }, PatchType.merge),
    outcome: (name) =>
      `The backup will be fully deleted after Velero removed its data from object storage; \`tenantkit backup get ${name}\` shows it until then.`,
  },
};

const create: Verb = {
  synopsis: 'create NAME [flags]',
  summary: ['create a backup of the namespace'],
  flags: createFlagsUsage(nabType, [
    '      --include-namespace-scoped-resources R,...  --exclude-namespace-scoped-resources R,...',
    '      --ttl DURATION             how long the backup is kept (e.g. 720h)',
    "      --storage-location NAME    storage location (default: the cluster's)",
    '      --volume-snapshot-locations L,...   --snapshot-volumes[=false]   --snapshot-move-data[=false]',
    '      --default-volumes-to-fs-backup[=false]   --data-mover NAME   --parallel-files-upload N',
    '      --csi-snapshot-timeout DURATION   --resource-policies-configmap NAME',
  ]),
  run: async (args, usage) => {
    const parsed = parseCreateArgs(args, {
      strings: [
        'ttl',
        'storage-location',
        'data-mover',
        'csi-snapshot-timeout',
        'resource-policies-configmap',
        'parallel-files-upload',
      ],
      lists: [
        'include-namespace-scoped-resources',
        'exclude-namespace-scoped-resources',
        'volume-snapshot-locations',
      ],
      optionalBooleans: ['snapshot-volumes', 'snapshot-move-data', 'default-volumes-to-fs-backup'],
    });
    await createOperation(backupKind, parsed, usage, {
      spec: () => ({ backupSpec: backupSpecFromFlags(parsed.values) }),
      until: () => (nab) => {
        if (nab.status?.phase === 'BackingOff') return { refused: refusal(nab) ?? 'refused' };
        const phase = backupKind.velero(nab)?.phase;
        return isFinished(phase) ? { phase } : undefined;
      },
    });
  },
};

export function backupCommand(args: string[]): Promise<void> {
  return runCommand(
    {
      noun: 'backup',
      about: "Back up your namespace with NonAdminBackups, run by the cluster's Velero.",
      verbs: { create, ...sharedVerbs(backupKind) },
    },
    args,
  );
}
