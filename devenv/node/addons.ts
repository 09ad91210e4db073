// What a cluster with a node runs in it besides tenantkit, installed by the node launcher once the node is
// Ready, as Pods like on any cluster: cluster DNS (CoreDNS, as kube-dns at 10.96.0.10) and the default
// StorageClass `local-path` with its dynamic provisioner (rancher's local-path-provisioner).
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';

export const clusterDNS = '10.96.0.10';
export const clusterDomain = 'cluster.local';

export type AddonObject = { type: (typeof Resources)[keyof typeof Resources]; object: KubeObject };

const namespace = 'kube-system';
const name = 'coredns';
const labels = { 'k8s-app': 'kube-dns' };
const apply = { fieldManager: 'tenantkit-node', force: true };

/** Port 53 inside the Pod would need NET_BIND_SERVICE; the Service maps 53 to this one instead. */
const dnsPort = 1053;

const corefile = `.:${dnsPort} {
    errors
    health :8080
    ready :8181
    kubernetes ${clusterDomain} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    reload
    loadbalance
}
`;

/** CoreDNS's objects: its identity and read-only rights, the Corefile, the Deployment and the kube-dns Service. */
export function corednsObjects(
  image: string,
): { type: (typeof Resources)[keyof typeof Resources]; object: KubeObject }[] {
  const readOnly = ['list', 'watch'];
  return [
    { type: Resources.serviceAccounts, object: { metadata: { name, namespace } } },
    {
      type: Resources.clusterRoles,
      object: {
        metadata: { name: 'tenantkit-node:coredns' },
        rules: [
          { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: readOnly },
          { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: readOnly },
        ],
      } as KubeObject,
    },
    {
      type: Resources.clusterRoleBindings,
      object: {
        metadata: { name: 'tenantkit-node:coredns' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'tenantkit-node:coredns',
        },
        subjects: [{ kind: 'ServiceAccount', name, namespace }],
      } as KubeObject,
    },
    {
      type: Resources.configMaps,
      object: { metadata: { name, namespace }, data: { Corefile: corefile } } as KubeObject,
    },
    {
      type: Resources.deployments,
      object: {
        metadata: { name, namespace, labels },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              serviceAccountName: name,
              priorityClassName: 'system-cluster-critical',
              // Cluster DNS cannot resolve through itself.
              dnsPolicy: 'Default',
              securityContext: {
                runAsNonRoot: true,
                runAsUser: 65532,
                seccompProfile: { type: 'RuntimeDefault' },
              },
              containers: [
                {
                  name,
                  image,
                  imagePullPolicy: 'IfNotPresent',
                  args: ['-conf', '/etc/coredns/Corefile'],
                  ports: [
                    { name: 'dns', containerPort: dnsPort, protocol: 'UDP' },
                    { name: 'dns-tcp', containerPort: dnsPort, protocol: 'TCP' },
                  ],
                  readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
                  livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
                  resources: { requests: { cpu: '50m', memory: '40Mi' }, limits: { memory: '128Mi' } },
                  securityContext: {
                    allowPrivilegeEscalation: false,
                    readOnlyRootFilesystem: true,
                    capabilities: { drop: ['ALL'] },
                  },
                  volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
                },
              ],
              volumes: [{ name: 'config', configMap: { name } }],
            },
          },
        },
      } as KubeObject,
    },
    {
      type: Resources.services,
      object: {
        metadata: { name: 'kube-dns', namespace, labels },
        spec: {
          clusterIP: clusterDNS,
          selector: labels,
          ports: [
            { name: 'dns', port: 53, targetPort: dnsPort, protocol: 'UDP' },
            { name: 'dns-tcp', port: 53, targetPort: dnsPort, protocol: 'TCP' },
          ],
        },
      } as KubeObject,
    },
  ];
}

const storage = 'local-path-storage';
const provisioner = 'local-path-provisioner';
export const defaultStorageClass = 'local-path';

/**
 * local-path-provisioner's objects: it makes each volume a folder under `volumesDir` on the node, through a
 * helper Pod that runs the workload image's volume helper (no shell in these images).
 */
export function localPathObjects(image: string, helperImage: string, volumesDir: string): AddonObject[] {
  const account = provisioner;
  const subject = [{ kind: 'ServiceAccount', name: account, namespace: storage }];
  const roleRef = (kind: string) => ({
    apiGroup: 'rbac.authorization.k8s.io',
    kind,
    name: `tenantkit-node:${provisioner}`,
  });
  const read = ['get', 'list', 'watch'];
  const config = {
    nodePathMap: [{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: [volumesDir] }],
    setupCommand: '/tk-workload',
    teardownCommand: '/tk-workload',
  };
  // The helper makes and removes folders on the node as root; nothing else runs with this template.
  const helperPod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'helper-pod' },
    spec: {
      containers: [
        {
          name: 'helper-pod',
          image: helperImage,
          imagePullPolicy: 'IfNotPresent',
          securityContext: { runAsUser: 0, runAsNonRoot: false },
        },
      ],
    },
  };
  const labels = { app: provisioner };
  return [
    { type: Resources.namespaces, object: { metadata: { name: storage } } },
    { type: Resources.serviceAccounts, object: { metadata: { name: account, namespace: storage } } },
    {
      type: Resources.roles,
      object: {
        metadata: { name: `tenantkit-node:${provisioner}`, namespace: storage },
        rules: [
          { apiGroups: [''], resources: ['pods'], verbs: [...read, 'create', 'patch', 'update', 'delete'] },
        ],
      } as KubeObject,
    },
    {
      type: Resources.roleBindings,
      object: {
        metadata: { name: `tenantkit-node:${provisioner}`, namespace: storage },
        roleRef: roleRef('Role'),
        subjects: subject,
      } as KubeObject,
    },
    {
      type: Resources.clusterRoles,
      object: {
        metadata: { name: `tenantkit-node:${provisioner}` },
        rules: [
          {
            apiGroups: [''],
            resources: ['nodes', 'persistentvolumeclaims', 'configmaps', 'pods', 'pods/log'],
            verbs: read,
          },
          {
            apiGroups: [''],
            resources: ['persistentvolumes'],
            verbs: [...read, 'create', 'patch', 'update', 'delete'],
          },
          { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
          { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: read },
        ],
      } as KubeObject,
    },
    {
      type: Resources.clusterRoleBindings,
      object: {
        metadata: { name: `tenantkit-node:${provisioner}` },
        roleRef: roleRef('ClusterRole'),
        subjects: subject,
      } as KubeObject,
    },
    {
      type: Resources.configMaps,
      object: {
        metadata: { name: 'local-path-config', namespace: storage },
        data: {
          'config.json': JSON.stringify(config, null, 2),
          'helperPod.yaml': JSON.stringify(helperPod, null, 2),
        },
      } as KubeObject,
    },
    {
      type: Resources.deployments,
      object: {
        metadata: { name: provisioner, namespace: storage, labels },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              serviceAccountName: account,
              securityContext: {
                runAsNonRoot: true,
                runAsUser: 65532,
                seccompProfile: { type: 'RuntimeDefault' },
              },
              containers: [
                {
                  name: provisioner,
                  image,
                  imagePullPolicy: 'IfNotPresent',
                  args: [
                    'start',
                    '--config=/etc/config/config.json',
                    `--namespace=${storage}`,
                    `--service-account-name=${account}`,
                    '--configmap-name=local-path-config',
                    `--helper-image=${helperImage}`,
                  ],
                  env: [{ name: 'CONFIG_MOUNT_PATH', value: '/etc/config/' }],
                  resources: { requests: { cpu: '20m', memory: '32Mi' }, limits: { memory: '128Mi' } },
                  securityContext: {
                    allowPrivilegeEscalation: false,
                    readOnlyRootFilesystem: true,
                    capabilities: { drop: ['ALL'] },
                  },
                  volumeMounts: [{ name: 'config', mountPath: '/etc/config/', readOnly: true }],
                },
              ],
              volumes: [{ name: 'config', configMap: { name: 'local-path-config' } }],
            },
          },
        },
      } as KubeObject,
    },
    {
      type: Resources.storageClasses,
      object: {
        metadata: {
          name: defaultStorageClass,
          annotations: {
            'storageclass.kubernetes.io/is-default-class': 'true',
            // `local` PersistentVolumes, not hostPath ones: kubelet mounts a local volume into the Pod's
            // volumes directory, where Velero's node-agent reads it for a file-system backup (it skips
            // hostPath volumes).
            defaultVolumeType: 'local',
          },
        },
        provisioner: 'rancher.io/local-path',
        volumeBindingMode: 'WaitForFirstConsumer',
        reclaimPolicy: 'Delete',
      } as KubeObject,
    },
  ];
}

/**
 * Applies the add-ons and resolves once each of their Deployments has a ready replica; a timeout names
 * the Deployment and how to look at it.
 */
export async function installAddons(
  admin: KubeClient,
  objects: AddonObject[],
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // A namespace of the add-ons still ending (the previous node's stop deleted it; the namespace
  // controller finishes a moment later) takes no new objects: wait until it is gone.
  for (const { object } of objects.filter((o) => o.type === Resources.namespaces)) {
    const name = object.metadata.name ?? '';
    while ((await admin.get(Resources.namespaces, name))?.metadata.deletionTimestamp) {
      if (Date.now() > deadline)
        throw new Error(`namespace ${name} still terminating after ${timeoutMs / 1000} s`);
      await sleep(200);
    }
  }
  for (const { type, object } of objects) await admin.apply(type, object, apply);
  for (const { object } of objects.filter((o) => o.type === Resources.deployments)) {
    const { name: deployment = '', namespace: ns } = object.metadata;
    for (;;) {
      const current = await admin.get<KubeObject & { status?: { readyReplicas?: number } }>(
        Resources.deployments,
        deployment,
        ns,
      );
      if ((current?.status?.readyReplicas ?? 0) >= 1) break;
      if (Date.now() > deadline) {
        throw new Error(
          `${deployment} not ready after ${timeoutMs / 1000} s: kubectl -n ${ns} describe deployment ${deployment}`,
        );
      }
      await sleep(200);
    }
  }
}

/** Deletes the add-ons (newest first) and waits, while kubelet still runs, until their Pods are gone. */
export async function uninstallAddons(
  admin: KubeClient,
  objects: AddonObject[],
  timeoutMs = 30_000,
): Promise<void> {
  for (const { type, object } of [...objects].reverse()) {
    await admin.delete(type, object.metadata.name ?? '', object.metadata.namespace).catch(() => {});
  }
  const deadline = Date.now() + timeoutMs;
  for (const { object } of objects.filter((o) => o.type === Resources.deployments)) {
    const selector = (object as KubeObject & { spec: { selector: { matchLabels: Record<string, string> } } })
      .spec.selector.matchLabels;
    const labelSelector = Object.entries(selector)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    while (Date.now() < deadline) {
      const pods = await admin.list(Resources.pods, { namespace: object.metadata.namespace, labelSelector });
      if (pods.items.length === 0) break;
      await sleep(200);
    }
  }
}
