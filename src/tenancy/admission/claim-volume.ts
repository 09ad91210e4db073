// A tenant's PersistentVolumeClaim binds only a new volume from a provisioner, or a volume an admin
// reserved for exactly this claim (the volume's spec.claimRef names the claim's namespace and name).
// Kubernetes' volume binder gives a claim any Available volume that it names, or that matches its
// StorageClass and selector, whoever the volume was made for: a statically provisioned volume meant for
// another tenant, or a Retained one an admin made Available again with the old tenant's data on it. So:
// - a claim that names a volume (spec.volumeName) needs that volume reserved for it;
// - a claim that names none needs, unless a volume is reserved for it, a StorageClass with a provisioner,
//   no selector, and no unreserved volume of its class that the binder could hand it instead of a new one.
// Volumes and classes are read live (not from a cache, which could miss a volume made a moment ago), and
// a missing volume gets the same answer as someone else's, so that a tenant learns nothing about volumes
// that are not theirs.
import type { KubeClient } from '../../kube/client.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { type AdmissionRequest, allow, deny, type Verdict } from '../../webhook/admission.ts';
import type { ConfigSource, PrivilegeCheck } from '../model.ts';

export interface Claim extends KubeObject {
  spec?: { volumeName?: string; storageClassName?: string; selector?: unknown };
}
export interface Volume extends KubeObject {
  spec?: { claimRef?: { namespace?: string; name?: string }; storageClassName?: string };
}
interface StorageClass extends KubeObject {
  provisioner?: string;
}

/** The provisioner of StorageClasses whose volumes an admin makes by hand (static volumes only). */
export const noProvisioner = 'kubernetes.io/no-provisioner';

/**
 * Only requests that decide which volume a claim gets reach the webhook: every create, and an update that
 * fills in a volume name (the API server refuses any other change of the name, the class and the
 * selector of a claim).
 */
export const decidesVolume = {
  name: 'decides-volume',
  expression:
    "request.operation == 'CREATE' || (has(object.spec.volumeName) && object.spec.volumeName != '' && (!has(oldObject.spec.volumeName) || oldObject.spec.volumeName == ''))",
};

const reservedFor = (volume: Volume, namespace: string, claimName: string) =>
  volume.spec?.claimRef?.namespace === namespace && volume.spec.claimRef.name === claimName;

/**
 * The verdict for a claim that names no volume, given every volume and its StorageClass as they are now.
 */
export function claimBindingVerdict(
  namespace: string,
  claimName: string,
  claim: Claim,
  volumes: Volume[],
  storageClass: StorageClass | undefined,
): Verdict {
  if (volumes.some((v) => reservedFor(v, namespace, claimName))) return allow();
  const what = `PersistentVolumeClaim ${namespace}/${claimName}`;
  const reserve = `or ask a cluster admin to reserve a volume for it (the volume's spec.claimRef: namespace ${namespace}, name ${claimName})`;
  const className = claim.spec?.storageClassName ?? '';
  let problem: string | undefined;
  if (claim.spec?.selector !== undefined)
    problem =
      'spec.selector picks among existing volumes, which tenants may not claim unless reserved for them';
  else if (className === '')
    problem = 'it has no StorageClass, so it could only bind an existing volume that is not reserved for it';
  else if (!storageClass)
    problem = `StorageClass "${className}" does not exist, so the claim could only bind an existing volume`;
  else if (!storageClass.provisioner || storageClass.provisioner === noProvisioner)
    problem = `StorageClass "${className}" has no provisioner (static volumes only), so the claim could only bind an existing volume`;
  else if (volumes.some((v) => (v.spec?.storageClassName ?? '') === className && !v.spec?.claimRef))
    problem = `StorageClass "${className}" has volumes that are not reserved for any claim, and the binder would hand one of them to this claim instead of a new one`;
  if (!problem) return allow();
  return deny(
    `${what}: ${problem}; tenants get only new volumes from a provisioner or a volume reserved for their claim: use a StorageClass with a provisioner and no selector, ${reserve}`,
  );
}

/** The verdict for a claim that names `volumeName`, given that volume as it is now (or undefined). */
export function claimVolumeVerdict(
  namespace: string,
  claimName: string,
  volumeName: string,
  volume: Volume | undefined,
): Verdict {
  if (volume && reservedFor(volume, namespace, claimName)) return allow();
  return deny(
    `PersistentVolumeClaim ${namespace}/${claimName}: spec.volumeName "${volumeName}" names a PersistentVolume that is not reserved for this claim; leave volumeName out to get a new volume from a StorageClass, or ask a cluster admin to reserve the volume for it (the volume's spec.claimRef: namespace ${namespace}, name ${claimName})`,
  );
}

export async function validateClaimVolume(
  deps: { client: KubeClient; config: ConfigSource; privileged: PrivilegeCheck },
  req: AdmissionRequest,
): Promise<Verdict> {
  const claim = req.object as Claim | undefined;
  if (!claim || deps.privileged(req.userInfo, deps.config())) return allow();
  const namespace = req.namespace ?? claim.metadata.namespace ?? '';
  const name = req.name ?? claim.metadata.name ?? '';
  const volumeName = claim.spec?.volumeName;
  if (typeof volumeName !== 'string' || volumeName === '') {
    if (req.operation !== 'CREATE') return allow();
    const className = claim.spec?.storageClassName;
    const [volumes, storageClass] = await Promise.all([
      deps.client.listAll<Volume>(Resources.persistentVolumes),
      className ? deps.client.get<StorageClass>(Resources.storageClasses, className) : undefined,
    ]);
    return claimBindingVerdict(namespace, name, claim, volumes.items, storageClass);
  }
  const previous = (req.oldObject as Claim | undefined)?.spec?.volumeName;
  if (req.operation === 'UPDATE' && previous === volumeName) return allow();
  const volume = await deps.client.get<Volume>(Resources.persistentVolumes, volumeName);
  return claimVolumeVerdict(namespace, name, volumeName, volume);
}
