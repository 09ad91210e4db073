// Synthetic objects for the search benchmark, shaped like a real namespace's: Deployments owning
// ReplicaSets owning Pods (on one of 100 Nodes, mounting a ConfigMap and a Secret), Services selecting
// a Deployment's Pods, Ingresses routing to Services, PVCs, ServiceAccounts. Every 100th namespace runs
// a "kube-apiserver" app, which the keyword query looks for. Deterministic for a given namespace index.
import { HubCluster, type IndexedResource, type ResourceData } from '../src/search/model.ts';

const mix: [kind: string, plural: string, group: string | undefined, share: number][] = [
  ['Deployment', 'deployments', 'apps', 60],
  ['ReplicaSet', 'replicasets', 'apps', 120],
  ['Pod', 'pods', undefined, 360],
  ['Service', 'services', undefined, 60],
  ['ConfigMap', 'configmaps', undefined, 150],
  ['Secret', 'secrets', undefined, 100],
  ['ServiceAccount', 'serviceaccounts', undefined, 50],
  ['PersistentVolumeClaim', 'persistentvolumeclaims', undefined, 50],
  ['Ingress', 'ingresses', 'networking.k8s.io', 50],
];

/** `cluster`: whose objects they are (their uids' prefix; only the hub's carry `_hubClusterResource`). */
export function syntheticNamespace(
  namespace: string,
  index: number,
  count: number,
  cluster = HubCluster,
): IndexedResource[] {
  let seed = index * 7919 + 1;
  const random = () => {
    seed = (seed * 48271) % 2147483647;
    return seed / 2147483647;
  };
  const scale = count / 1000;
  const n = (share: number) => Math.max(1, Math.round(share * scale));
  const app = index % 100 === 0 ? 'kube-apiserver' : 'app';
  const out: IndexedResource[] = [];
  const uid = (kind: string, i: number) => `${cluster}/${namespace}-${kind}-${i}`;
  const base = (kind: string, plural: string, group: string | undefined, name: string): ResourceData => ({
    kind,
    kind_plural: plural,
    ...(group ? { apigroup: group } : {}),
    apiversion: 'v1',
    name,
    namespace,
    created: new Date(Date.UTC(2025, 0, 1) + Math.floor(random() * 300 * 86_400_000))
      .toISOString()
      .replace(/\.\d+Z$/, 'Z'),
    ...(cluster === HubCluster ? { _hubClusterResource: true } : {}),
  });
  const [deployments, replicaSets, pods, services, configMaps, secrets, accounts, claims, ingresses] =
    mix.map(([, , , s]) => n(s));
  const hash = (i: number) => (i * 2654435761 + index).toString(36).slice(-5);
  for (let d = 0; d < deployments!; d++) {
    out.push({
      uid: uid('deploy', d),
      data: {
        ...base('Deployment', 'deployments', 'apps', `${app}-${d}`),
        desired: 6,
        current: 6,
        ready: 6,
        available: 6,
        label: { app: `${app}-${d}` },
      },
      edges: [],
    });
  }
  for (let r = 0; r < replicaSets!; r++) {
    const d = r % deployments!;
    out.push({
      uid: uid('rs', r),
      data: {
        ...base('ReplicaSet', 'replicasets', 'apps', `${app}-${d}-${hash(r)}`),
        desired: 3,
        current: 3,
        label: { app: `${app}-${d}` },
      },
      edges: [{ type: 'ownedBy', uid: uid('deploy', d) }],
    });
  }
  for (let p = 0; p < pods!; p++) {
    const r = p % replicaSets!;
    const d = r % deployments!;
    const running = random() > 0.05;
    out.push({
      uid: uid('pod', p),
      data: {
        ...base('Pod', 'pods', undefined, `${app}-${d}-${hash(r)}-${hash(p * 31)}`),
        status: running ? 'Running' : 'CrashLoopBackOff',
        restarts: running ? 0 : Math.floor(random() * 40),
        container: ['main', 'sidecar'],
        image: [`registry.example.com/${app}:${1 + (d % 9)}`, 'registry.example.com/proxy:2'],
        hostIP: `10.0.${p % 100}.1`,
        podIP: `10.128.${index % 250}.${p % 250}`,
        label: { app: `${app}-${d}`, 'pod-template-hash': hash(r) },
      },
      edges: [
        { type: 'ownedBy', uid: uid('rs', r) },
        { type: 'runsOn', kind: 'Node', name: `node-${(index + p) % 100}` },
        { type: 'attachedTo', kind: 'ConfigMap', namespace, name: `config-${p % configMaps!}` },
      ],
    });
  }
  for (let s = 0; s < services!; s++) {
    out.push({
      uid: uid('svc', s),
      data: {
        ...base('Service', 'services', undefined, `${app}-${s}`),
        type: 'ClusterIP',
        clusterIP: `172.30.${index % 250}.${s}`,
        port: '8080/TCP',
      },
      edges: [{ type: 'usedBy', kind: 'Pod', namespace, selector: { app: `${app}-${s % deployments!}` } }],
    });
  }
  for (let c = 0; c < configMaps!; c++) {
    out.push({
      uid: uid('cm', c),
      data: base('ConfigMap', 'configmaps', undefined, `config-${c}`),
      edges: [],
    });
  }
  for (let s = 0; s < secrets!; s++) {
    out.push({
      uid: uid('secret', s),
      data: { ...base('Secret', 'secrets', undefined, `secret-${s}`), type: 'Opaque' },
      edges: [],
    });
  }
  for (let a = 0; a < accounts!; a++) {
    out.push({
      uid: uid('sa', a),
      data: base('ServiceAccount', 'serviceaccounts', undefined, `account-${a}`),
      edges: [],
    });
  }
  for (let c = 0; c < claims!; c++) {
    out.push({
      uid: uid('pvc', c),
      data: {
        ...base('PersistentVolumeClaim', 'persistentvolumeclaims', undefined, `data-${c}`),
        status: 'Bound',
        requestedStorage: '10Gi',
      },
      edges: [],
    });
  }
  for (let g = 0; g < ingresses!; g++) {
    out.push({
      uid: uid('ing', g),
      data: {
        ...base('Ingress', 'ingresses', 'networking.k8s.io', `route-${g}`),
        host: `r${g}.${namespace}.apps.example.com`,
      },
      edges: [{ type: 'usedBy', kind: 'Service', namespace, name: `${app}-${g % services!}` }],
    });
  }
  return out.slice(0, count);
}
