// Create-or-update for objects a controller owns, without ever adopting one it does not own:
// - absent from the cache: create (POST). If it exists after all (our cache lagged, or someone else made
//   it), read it and only continue when it carries our controller ownerReference;
// - present and ours: server-side apply only when it differs from the desired state, so an idle
//   resync issues no writes;
// - present and not ours: report a conflict and leave it alone.
import { isAlreadyExists, type KubeClient } from './client.ts';
import type { KubeObject, ResourceType } from './resources.ts';

export type EnsureResult =
  | { outcome: 'unchanged' | 'created' | 'updated'; object: KubeObject }
  | { outcome: 'conflict'; message: string };

export interface EnsureOptions<T extends KubeObject> {
  client: KubeClient;
  type: ResourceType;
  desired: T;
  /** What the cache holds under the desired name, if anything. */
  cached: T | undefined;
  ownerUid: string;
  upToDate: (actual: T, desired: T) => boolean;
  fieldManager: string;
}

const isOwned = (object: KubeObject, uid: string) =>
  (object.metadata.ownerReferences ?? []).some((r) => r.uid === uid && r.controller);

function conflict(type: ResourceType, desired: KubeObject): EnsureResult {
  const where = desired.metadata.namespace ? ` in namespace ${desired.metadata.namespace}` : '';
  return {
    outcome: 'conflict',
    message: `${type.kind} ${desired.metadata.name}${where} already exists and is not managed by tenantkit; delete or rename it to let tenantkit create its own`,
  };
}

export async function ensureOwned<T extends KubeObject>(o: EnsureOptions<T>): Promise<EnsureResult> {
  let current: T | undefined = o.cached;
  if (!current) {
    try {
      const created = await o.client.create<T>(o.type, o.desired, { fieldManager: o.fieldManager });
      return { outcome: 'created', object: created };
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      current = await o.client.get<T>(o.type, o.desired.metadata.name!, o.desired.metadata.namespace);
      if (!current) throw err;
    }
  }
  if (!isOwned(current, o.ownerUid)) return conflict(o.type, o.desired);
  if (o.upToDate(current, o.desired)) return { outcome: 'unchanged', object: current };
  const updated = await o.client.apply<T>(o.type, o.desired, { fieldManager: o.fieldManager, force: true });
  return { outcome: 'updated', object: updated };
}
