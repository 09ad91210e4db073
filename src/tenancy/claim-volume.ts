// A tenant's PersistentVolumeClaim may name a PersistentVolume (spec.volumeName) only when an admin
// reserved that volume for exactly this claim (the volume's spec.claimRef names the claim's namespace and
// name). Kubernetes binds a claim to any Available volume it names, whoever the volume was made for: a
// statically provisioned volume meant for another tenant, or a Retained one an admin made Available again
// with the old tenant's data on it. A claim without volumeName gets a new volume from its StorageClass, as
// before. The volume is read live (not from a cache), and a missing volume gets the same answer as
// someone else's, so that a tenant learns nothing about volumes that are not theirs.
import type { KubeClient } from '../kube/client.ts';
import { type KubeObject, Resources } from '../kube/resources.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../webhook/admission.ts';
import type { ConfigSource } from './config.ts';
import type { PrivilegeCheck } from './identity.ts';

export interface Claim extends KubeObject {
  spec?: { volumeName?: string };
}
export interface Volume extends KubeObject {
  spec?: { claimRef?: { namespace?: string; name?: string } };
}

/**
 * Only requests that set a volume name (a create with one, or an update that fills it in) reach the
 * webhook; the API server refuses any other change of it.
 */
export const setsVolumeName = {
  name: 'sets-volume-name',
  expression:
    "has(object.spec.volumeName) && object.spec.volumeName != '' && (request.operation == 'CREATE' || !has(oldObject.spec.volumeName) || oldObject.spec.volumeName == '')",
};

/** The verdict for a claim that names `volumeName`, given that volume as it is now (or undefined). */
export function claimVolumeVerdict(
  namespace: string,
  claimName: string,
  volumeName: string,
  volume: Volume | undefined,
): Verdict {
  const ref = volume?.spec?.claimRef;
  if (ref?.namespace === namespace && ref.name === claimName) return allow();
  return deny(
    `PersistentVolumeClaim ${namespace}/${claimName}: spec.volumeName "${volumeName}" names a PersistentVolume that is not reserved for this claim; leave volumeName out to get a new volume from a StorageClass, or ask a cluster admin to reserve the volume for it (the volume's spec.claimRef: namespace ${namespace}, name ${claimName})`,
  );
}

export async function validateClaimVolume(
  deps: { client: KubeClient; config: ConfigSource; privileged: PrivilegeCheck },
  req: AdmissionRequest,
): Promise<Verdict> {
  const claim = req.object as Claim | undefined;
  const volumeName = claim?.spec?.volumeName;
  if (typeof volumeName !== 'string' || volumeName === '') return allow();
  if (deps.privileged(req.userInfo, deps.config())) return allow();
  const previous = (req.oldObject as Claim | undefined)?.spec?.volumeName;
  if (req.operation === 'UPDATE' && previous === volumeName) return allow();
  const namespace = req.namespace ?? claim?.metadata.namespace ?? '';
  const name = req.name ?? claim?.metadata.name ?? '';
  const volume = await deps.client.get<Volume>(Resources.persistentVolumes, volumeName);
  return claimVolumeVerdict(namespace, name, volumeName, volume);
}
