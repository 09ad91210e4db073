// Finalizers are added and removed with a merge patch guarded by resourceVersion, so a concurrent writer
// makes us retry (409) instead of silently dropping someone else's finalizer.
import { type KubeClient, PatchType } from './client.ts';
import type { KubeObject, ResourceType } from './resources.ts';

export function hasFinalizer(object: KubeObject, finalizer: string): boolean {
  return (object.metadata.finalizers ?? []).includes(finalizer);
}

async function setFinalizers<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  object: T,
  finalizers: string[],
): Promise<T> {
  const patch = { metadata: { resourceVersion: object.metadata.resourceVersion, finalizers } };
  return client.patch<T>(type, object.metadata.name!, object.metadata.namespace, patch, PatchType.merge);
}

/** Adds the finalizer unless present; returns the (possibly updated) object. */
export async function ensureFinalizer<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  object: T,
  finalizer: string,
): Promise<T> {
  if (hasFinalizer(object, finalizer)) return object;
  return setFinalizers(client, type, object, [...(object.metadata.finalizers ?? []), finalizer]);
}

/** Removes the finalizer if present; returns the (possibly updated) object. */
export async function removeFinalizer<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  object: T,
  finalizer: string,
): Promise<T> {
  if (!hasFinalizer(object, finalizer)) return object;
  return setFinalizers(
    client,
    type,
    object,
    (object.metadata.finalizers ?? []).filter((f) => f !== finalizer),
  );
}
