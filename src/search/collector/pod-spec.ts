// What a pod spec refers to by name: the config maps, secrets and claims it mounts or reads
// environment from. Pods declare these as `attachedTo`, workloads (through their pod template) as `uses`,
// the edge names of ACM's collector.
import type { EdgeRef } from '../model.ts';
import { asArray, asName, at } from './json.ts';

/** Kinds a pod spec can name, by how the index spells them. */
type Target = 'ConfigMap' | 'Secret' | 'PersistentVolumeClaim';

/**
 * References from `spec` to objects in `namespace`, each once: volumes (including projected sources),
 * `env[].valueFrom`, `envFrom` of every container (init and ephemeral too) and `imagePullSecrets`.
 * `podName` is set for pods only: generic ephemeral volumes create a claim named `<pod>-<volume>`.
 */
export function podSpecReferences(
  spec: unknown,
  namespace: string,
  type: string,
  podName?: string,
): EdgeRef[] {
  const seen = new Set<string>();
  const out: EdgeRef[] = [];
  const add = (kind: Target, name: string | undefined) => {
    if (!name || seen.has(`${kind}/${name}`)) return;
    seen.add(`${kind}/${name}`);
    out.push({ type, kind, namespace, name });
  };
  for (const volume of asArray(at(spec, 'volumes'))) {
    add('Secret', asName(at(volume, 'secret', 'secretName')));
    add('ConfigMap', asName(at(volume, 'configMap', 'name')));
    add('PersistentVolumeClaim', asName(at(volume, 'persistentVolumeClaim', 'claimName')));
    for (const source of asArray(at(volume, 'projected', 'sources'))) {
      add('Secret', asName(at(source, 'secret', 'name')));
      add('ConfigMap', asName(at(source, 'configMap', 'name')));
    }
    const volumeName = asName(at(volume, 'name'));
    if (podName && volumeName && at(volume, 'ephemeral') !== undefined) {
      add('PersistentVolumeClaim', `${podName}-${volumeName}`);
    }
  }
  const containers = [
    ...asArray(at(spec, 'initContainers')),
    ...asArray(at(spec, 'containers')),
    ...asArray(at(spec, 'ephemeralContainers')),
  ];
  for (const container of containers) {
    for (const env of asArray(at(container, 'env'))) {
      add('Secret', asName(at(env, 'valueFrom', 'secretKeyRef', 'name')));
      add('ConfigMap', asName(at(env, 'valueFrom', 'configMapKeyRef', 'name')));
    }
    for (const source of asArray(at(container, 'envFrom'))) {
      add('Secret', asName(at(source, 'secretRef', 'name')));
      add('ConfigMap', asName(at(source, 'configMapRef', 'name')));
    }
  }
  for (const pull of asArray(at(spec, 'imagePullSecrets'))) add('Secret', asName(at(pull, 'name')));
  return out;
}
