// Where clients find the search service: a ConfigMap in kube-public (URL and the CA that signs the
// service's certificate) that every authenticated user may read, the way kube-public/cluster-info works.
import type { KubeClient } from '../../kube/client.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { SearchEndpointConfigMap } from './client.ts';

export function endpointObjects(
  url: string,
  caPem: string,
): { type: keyof typeof Resources; object: KubeObject }[] {
  const { namespace, name } = SearchEndpointConfigMap;
  const roleRef = { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name };
  return [
    {
      type: 'configMaps',
      object: { metadata: { name, namespace }, data: { url, 'ca.crt': caPem } } as KubeObject,
    },
    {
      type: 'roles',
      object: {
        metadata: { name, namespace },
        rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: [name], verbs: ['get'] }],
      } as KubeObject,
    },
    {
      type: 'roleBindings',
      object: {
        metadata: { name, namespace },
        roleRef,
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' }],
      } as KubeObject,
    },
  ];
}

export async function publishEndpoint(client: KubeClient, url: string, caPem: string, fieldManager: string) {
  for (const { type, object } of endpointObjects(url, caPem)) {
    await client.apply(Resources[type], object, { fieldManager, force: true });
  }
}
