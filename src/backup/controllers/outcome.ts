// How a tenant reads where her request to Velero stands: one sentence for the Queued condition and the
// Event of a NonAdminBackup or NonAdminRestore. A request that did not complete says why (Velero's
// failure reason), or how many errors and warnings Velero counted and where it names each item: a
// PartiallyFailed backup or restore has no failure reason of its own.
import { finishedPhases } from '../../crds/velero.ts';
import type { StatusEvent } from '../../kube/status.ts';

/** A count Velero wrote, or 0 (its status is not to be trusted blindly). */
const counted = (value: unknown): number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * What a failure reason means when Velero's object store plugin found no keys for the location: Velero
 * v1.18 rewrites a location's credentials file (truncate, then write) each time it uses it, so a backup
 * or restore that reads it at that moment finds it empty, and the AWS plugin's last resort (the EC2
 * metadata service) fails. Its words say nothing of that.
 */
const noCredentials = /no EC2 IMDS role found|failed to refresh cached credentials/;
const noCredentialsHint =
  "Velero found no keys for the storage location at that moment (it rewrites the location's credentials file on each use, and a use at the same moment can read it empty): create it again, and if it fails the same way, have the location's Secret checked";

/**
 * `kind` is Velero's kind; `tenantName` the tenant's object, named in the command she can run;
 * `veleroName` the Velero object; `veleroStatus` its status as Velero wrote it.
 */
export function outcomeOf(
  kind: 'Backup' | 'Restore',
  tenantName: string,
  veleroName: string,
  phase: string,
  veleroStatus: Record<string, unknown> | undefined,
): string {
  const head = `Velero ${kind} ${veleroName} is ${phase}`;
  if (phase === 'Completed' || !(finishedPhases as readonly string[]).includes(phase)) return head;
  const reason = typeof veleroStatus?.failureReason === 'string' ? veleroStatus.failureReason : '';
  const errors = counted(veleroStatus?.errors);
  const warnings = counted(veleroStatus?.warnings);
  const said = [
    reason,
    noCredentials.test(reason) ? noCredentialsHint : '',
    errors || warnings ? `${plural(errors, 'error')} and ${plural(warnings, 'warning')}` : '',
  ].filter(Boolean);
  const noun = kind.toLowerCase();
  return `${head}${said.length ? `: ${said.join('; ')}` : ''}; Velero's results name each item: kubectl tenantkit ${noun} describe ${tenantName} --details (or: kubectl tenantkit ${noun} logs ${tenantName})`;
}

/**
 * The one Event of an outcome: when the Velero object has just finished (its phase `before` was another),
 * `Backup<Phase>` or `Restore<Phase>` with `message`, a Warning unless it completed. One per outcome, not
 * one per step: that would double the API writes per request.
 */
export function outcomeEvent(
  kind: 'Backup' | 'Restore',
  before: string | undefined,
  phase: string,
  message: string,
): StatusEvent | undefined {
  if (before === phase || !(finishedPhases as readonly string[]).includes(phase)) return undefined;
  return {
    type: phase === 'Completed' ? 'Normal' : 'Warning',
    reason: `${kind}${phase}`,
    action: kind,
    message,
  };
}
