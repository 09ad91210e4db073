// Persistent volumes and claims, with ACM's property names; a bound claim is `boundTo` its volume.
import { parseQuantity } from '../../kube/quantity.ts';
import type { Derived, KindTransform } from './derived.ts';
import { asArray, asName, at, type JsonObject } from './json.ts';

const accessModes = (o: JsonObject) =>
  asArray(at(o, 'spec', 'accessModes')).filter((m): m is string => typeof m === 'string');

/** The volume source's name, as ACM's `type` property spells the common ones. */
const volumeTypes: [string, string][] = [
  ['hostPath', 'Hostpath'],
  ['local', 'LocalVolume'],
  ['nfs', 'NFS'],
  ['csi', 'CSI'],
  ['iscsi', 'iSCSI'],
  ['rbd', 'RBD'],
  ['glusterfs', 'Glusterfs'],
  ['gcePersistentDisk', 'GCEPersistentDisk'],
  ['awsElasticBlockStore', 'AWSElasticBlockStore'],
  ['vsphereVolume', 'vSphere'],
];

export const persistentVolume: KindTransform = (o) => {
  const properties: Derived['properties'] = {
    status: asName(at(o, 'status', 'phase')) ?? '',
    accessMode: accessModes(o),
  };
  const reclaimPolicy = asName(at(o, 'spec', 'persistentVolumeReclaimPolicy'));
  if (reclaimPolicy) properties.reclaimPolicy = reclaimPolicy;
  const capacity = asName(at(o, 'spec', 'capacity', 'storage'));
  if (capacity) properties.capacity = capacity;
  const storageClassName = asName(at(o, 'spec', 'storageClassName'));
  if (storageClassName) properties.storageClassName = storageClassName;
  const claimNamespace = asName(at(o, 'spec', 'claimRef', 'namespace'));
  const claimName = asName(at(o, 'spec', 'claimRef', 'name'));
  if (claimNamespace && claimName) properties.claimRef = `${claimNamespace}/${claimName}`;
  const type = volumeTypes.find(([field]) => at(o, 'spec', field) !== undefined);
  if (type) properties.type = type[1];
  const path = asName(at(o, 'spec', 'local', 'path')) ?? asName(at(o, 'spec', 'hostPath', 'path'));
  if (path) properties.path = path;
  return { properties, edges: [] };
};

export const persistentVolumeClaim: KindTransform = (o) => {
  const properties: Derived['properties'] = {
    status: asName(at(o, 'status', 'phase')) ?? '',
    accessMode: accessModes(o),
  };
  const volumeName = asName(at(o, 'spec', 'volumeName'));
  if (volumeName) properties.volumeName = volumeName;
  const storageClassName = asName(at(o, 'spec', 'storageClassName'));
  if (storageClassName) properties.storageClassName = storageClassName;
  const capacity = asName(at(o, 'status', 'capacity', 'storage'));
  if (capacity) properties.capacity = capacity;
  const request = asName(at(o, 'spec', 'resources', 'requests', 'storage'));
  if (request) {
    properties.request = request;
    const bytes = parseQuantity(request);
    if (bytes !== undefined) properties.requestedStorage = Math.round(bytes);
  }
  const volumeMode = asName(at(o, 'spec', 'volumeMode'));
  if (volumeMode) properties.volumeMode = volumeMode;
  return {
    properties,
    edges: volumeName ? [{ type: 'boundTo', kind: 'PersistentVolume', name: volumeName }] : [],
  };
};
