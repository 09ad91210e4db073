// The objects tenantkit makes in Velero's namespace for a tenant's object, made one way: named by the
// NACUUID, carrying tenantkit's marks and the NACUUID label (how the caches find them), the origin
// annotations (whose they are), and created once: one that exists already (made by an earlier pass the
// cache has not shown yet) is not made again.
import { isAlreadyExists } from '../../kube/client.ts';
import type { ReconcileContext } from '../../kube/controller.ts';
import type { KubeObject, ObjectMeta, ResourceType } from '../../kube/resources.ts';
import { managedLabels } from '../model.ts';

/** Metadata for `uuid` in Velero's namespace: `uuidLabel` holds the NACUUID, `annotations` the origin. */
export function managedMeta(
  uuid: string,
  namespace: string,
  uuidLabel: string,
  annotations: Record<string, string>,
  labels: Record<string, string> = {},
): ObjectMeta & { name: string; namespace: string; labels: Record<string, string> } {
  return { name: uuid, namespace, labels: { ...labels, ...managedLabels, [uuidLabel]: uuid }, annotations };
}

/** Creates `object`; returns false when it existed already. */
export async function createOnce(
  ctx: ReconcileContext,
  type: ResourceType,
  object: KubeObject,
): Promise<boolean> {
  try {
    await ctx.client.create(type, object);
    return true;
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    return false;
  }
}
