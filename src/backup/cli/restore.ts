// `tenantkit restore create|get|describe|logs|delete`: a tenant's NonAdminRestores with the verbs and flags
// of `oc oadp nonadmin restore` (and `velero restore`), as the kubeconfig's user, in one namespace. Here is
// what is NonAdminRestore's own: its entry in the kind table and its half of `create`; the verbs both
// kinds share are in verbs.ts and create.ts.
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../../crds/backup.ts';
import type { LabelSelector } from '../../kube/selectors.ts';
import { runCommand, type Verb } from './command.ts';
import { createFlagsUsage, createOperation, parseCreateArgs, refusal, type WaitOutcome } from './create.ts';
import { describeRestore } from './describe.ts';
import { isFinished, type OperationKind } from './kind.ts';
import { type Session, veleroTime } from './shared.ts';
import { formatSelector, restoreSpecFromFlags } from './spec.ts';
import { sharedVerbs } from './verbs.ts';

const narType = NonAdminRestoreCrd.type;

/** The NonAdminBackup the restore is from. */
const backupOf = (nar: NonAdminRestore) => nar.spec?.restoreSpec?.backupName ?? '';

export const restoreKind: OperationKind<NonAdminRestore> = {
  noun: 'restore',
  type: narType,
  velero: (nar) => nar.status?.veleroRestore?.status,
  columns: ({ status, errors, warnings, created }) => [
    { header: 'BACKUP', cell: backupOf },
    status,
    { header: 'STARTED', cell: (nar) => veleroTime(nar.status?.veleroRestore?.status?.startTimestamp) },
    {
      header: 'COMPLETED',
      cell: (nar) => veleroTime(nar.status?.veleroRestore?.status?.completionTimestamp),
    },
    errors,
    warnings,
    created,
    {
      header: 'SELECTOR',
      cell: (nar) => formatSelector(nar.spec?.restoreSpec?.labelSelector as LabelSelector | undefined),
    },
  ],
  describe: describeRestore,
  deletion: {
    summary: 'delete the restore (what it restored stays)',
    question: (name, namespace) =>
      `Are you sure you want to delete restore "${name}" in namespace ${namespace}? (What it restored stays.)`,
    request: (s, name) => s.client.delete(narType, name, s.namespace),
    outcome: () =>
      "The restore's Velero Restore and its logs and results go with it; the restored objects stay.",
  },
};

/** A misspelt backup name would leave the restore waiting for a backup that never comes: say so now. */
async function backupExists(s: Session, backupName: string): Promise<void> {
  if (!(await s.client.get(NonAdminBackupCrd.type, backupName, s.namespace))) {
    throw new Error(
      `backup "${backupName}" not found in namespace ${s.namespace}: --from-backup names a NonAdminBackup of this namespace (tenantkit backup get -n ${s.namespace} lists them)`,
    );
  }
}

/**
 * When a --wait ends. A restore may wait for its backup to finish (BackingOff until then): the wait goes on
 * while the backup runs, saying why, and ends with the refusal's message when waiting cannot help.
 */
function restoreFinished(s: Session, backupName: string) {
  let said = '';
  return async (nar: NonAdminRestore): Promise<WaitOutcome | undefined> => {
    const phase = restoreKind.velero(nar)?.phase;
    if (isFinished(phase)) return { phase };
    const message = refusal(nar);
    if (nar.status?.phase !== 'BackingOff' || !message) return undefined;
    const nab = await s.client.get<NonAdminBackup>(NonAdminBackupCrd.type, backupName, s.namespace);
    if (!nab || isFinished(nab.status?.veleroBackup?.status?.phase)) return { refused: message };
    if (message !== said) process.stderr.write(`Waiting: ${message}\n`);
    said = message;
    return undefined;
  };
}

const create: Verb = {
  synopsis: 'create NAME --from-backup BACKUP [flags]',
  summary: ['restore from backup BACKUP (a NonAdminBackup of this namespace)'],
  flags: createFlagsUsage(narType, [
    '      --existing-resource-policy none|update   --restore-volumes[=false]   --preserve-nodeports[=false]',
  ]),
  run: async (args, usage) => {
    const parsed = parseCreateArgs(args, {
      strings: ['from-backup', 'existing-resource-policy'],
      optionalBooleans: ['restore-volumes', 'preserve-nodeports'],
    });
    await createOperation(restoreKind, parsed, usage, {
      spec: () => ({ restoreSpec: restoreSpecFromFlags(parsed.values) }),
      check: (s, nar) => backupExists(s, backupOf(nar)),
      until: (s, nar) => restoreFinished(s, backupOf(nar)),
    });
  },
};

export function restoreCommand(args: string[]): Promise<void> {
  return runCommand(
    {
      noun: 'restore',
      about:
        "Restore your namespace from its NonAdminBackups with NonAdminRestores, run by the cluster's Velero.",
      verbs: { create, ...sharedVerbs(restoreKind) },
    },
    args,
  );
}
