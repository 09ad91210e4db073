// The controller's side of the restore guard (see admission/requester.ts for who the requester is).
// - Before a tenant's Velero Restore is made, Velero must be running tenantkit's restore guard plugin:
//   without it Velero would write every item with its own rights. Asked through a ServerStatusRequest
//   (Velero lists its plugins there); fail closed while it is missing or Velero does not answer.
// - Once the Restore finished, the refusals the plugin recorded (a ConfigMap in Velero's namespace,
//   owned by the Restore) are read once and reported on the NonAdminRestore. The plugin writes that
//   ConfigMap a bounded number of times per restore (it counts refusals in memory and writes at its first
//   refusal, at most every few seconds, and when Velero stops it at the end of the restore); `open` in it
//   counts plugin processes that have not written their last refusals, so a process that died is seen.

import { VeleroResources } from '../../../crds/velero.ts';
import type { KubeClient } from '../../../kube/client.ts';
import { type KubeObject, Resources } from '../../../kube/resources.ts';
import { Labels, ManagedByValue, RefusalsKey, RefusalsLabel, RestoreGuardPlugin } from '../../model.ts';

/** How long a positive answer about Velero's plugins is trusted; a negative one is asked again sooner. */
const presentForMs = 60_000;
/** How long to wait for Velero to answer a ServerStatusRequest. */
const answerWithinMs = 15_000;

interface ServerStatusRequest extends KubeObject {
  status?: { phase?: string; plugins?: { name: string; kind: string }[] };
}

/** Whether Velero in a namespace runs the guard, asked at most once a minute while it does. */
export class RestoreGuardPresence {
  private readonly known = new Map<string, number>();
  private readonly asking = new Map<string, Promise<string | undefined>>();

  /** undefined when the guard runs; otherwise what is wrong, for the NonAdminRestore's condition. */
  async missing(client: KubeClient, veleroNamespace: string): Promise<string | undefined> {
    const seen = this.known.get(veleroNamespace);
    if (seen !== undefined && Date.now() - seen < presentForMs) return undefined;
    let pending = this.asking.get(veleroNamespace);
    if (!pending) {
      pending = this.ask(client, veleroNamespace).finally(() => this.asking.delete(veleroNamespace));
      this.asking.set(veleroNamespace, pending);
    }
    return pending;
  }

  private async ask(client: KubeClient, veleroNamespace: string): Promise<string | undefined> {
    const request = await client.create<ServerStatusRequest>(VeleroResources.serverStatusRequests, {
      metadata: {
        generateName: 'tenantkit-restore-guard-',
        namespace: veleroNamespace,
        labels: { [Labels.managedBy]: ManagedByValue },
      },
    });
    const deadline = Date.now() + answerWithinMs;
    for (let wait = 50; Date.now() < deadline; wait = Math.min(wait * 2, 1000)) {
      await new Promise((r) => setTimeout(r, wait));
      const answer = await client.get<ServerStatusRequest>(
        VeleroResources.serverStatusRequests,
        request.metadata.name!,
        veleroNamespace,
      );
      if (answer?.status?.phase !== 'Processed') continue;
      const plugins = answer.status.plugins ?? [];
      if (plugins.some((p) => p.name === RestoreGuardPlugin && p.kind === 'RestoreItemAction')) {
        this.known.set(veleroNamespace, Date.now());
        return undefined;
      }
      this.known.delete(veleroNamespace);
      return `Velero in namespace ${veleroNamespace} does not run tenantkit's restore guard plugin (${RestoreGuardPlugin}), so it would restore with its own rights instead of yours; an admin must add the plugin to Velero (see docs/backup.md)`;
    }
    this.known.delete(veleroNamespace);
    return `Velero in namespace ${veleroNamespace} did not say within ${answerWithinMs / 1000} s whether it runs tenantkit's restore guard plugin; the restore waits until it does`;
  }
}

/** One object a restore left out, as the plugin recorded it. */
export interface RefusedItem {
  apiVersion: string;
  kind: string;
  name: string;
  verb: string;
  reason: string;
  message: string;
}

export interface Refusals {
  count: number;
  items: RefusedItem[];
  /** A plugin process ended without writing its last refusals: `count` may be low. */
  incomplete?: boolean;
}

/** The ConfigMap the plugin writes for Velero Restore `restoreName` (devenv/go/velero/cmd/tenantkit-restore-guard). */
export const refusalsName = (restoreName: string) => `${restoreName}-refused`;

const isRefusedItem = (v: unknown): v is RefusedItem =>
  typeof v === 'object' &&
  v !== null &&
  ['apiVersion', 'kind', 'name', 'verb', 'reason', 'message'].every(
    (k) => typeof (v as Record<string, unknown>)[k] === 'string',
  );

/**
 * The refusals recorded for `restore` (a Velero Restore tenantkit made): only from the ConfigMap named
 * for it in its own namespace, labelled for it and owned by this very Restore (by UID). None recorded
 * means none refused.
 */
export async function readRefusals(client: KubeClient, restore: KubeObject): Promise<Refusals> {
  const cm = await client.get<KubeObject & { data?: Record<string, string> }>(
    Resources.configMaps,
    refusalsName(restore.metadata.name!),
    restore.metadata.namespace,
  );
  if (!cm) return { count: 0, items: [] };
  const ours =
    cm.metadata.labels?.[RefusalsLabel] === restore.metadata.name &&
    cm.metadata.ownerReferences?.some((o) => o.kind === 'Restore' && o.uid === restore.metadata.uid);
  if (!ours) return { count: 0, items: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(cm.data?.[RefusalsKey] ?? '{}');
  } catch {
    parsed = undefined;
  }
  const record = (parsed ?? {}) as { count?: unknown; items?: unknown; open?: unknown };
  const items = Array.isArray(record.items) ? record.items.filter(isRefusedItem) : [];
  const count =
    typeof record.count === 'number' && record.count >= items.length ? record.count : items.length;
  const incomplete = record.open !== undefined && record.open !== 0;
  return { count, items, ...(incomplete ? { incomplete } : {}) };
}

/** One line for a condition and an Event: how many, and the first few with the API server's words. */
export function refusalSummary(refusals: Refusals, requester: string, nothingRestored: boolean): string {
  const shown = refusals.items
    .slice(0, 3)
    .map((i) => `${i.kind} ${i.name} (${i.verb}: ${i.message})`)
    .join('; ');
  const more = refusals.count > 3 ? `; and ${refusals.count - 3} more in status.refusedItems` : '';
  const head = nothingRestored
    ? `nothing was restored: all ${refusals.count} objects were refused because ${requester} could not write them with their own rights`
    : `${refusals.count} objects were not restored because ${requester} could not write them with their own rights`;
  const lost = refusals.incomplete
    ? `; the restore guard stopped before it recorded every refusal, so there may be more: Velero's restore log names each one (tenantkit restore logs <name>)`
    : '';
  return `${head}: ${shown}${more}${lost}`;
}
