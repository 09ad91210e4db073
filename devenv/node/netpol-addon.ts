// The local node's NetworkPolicy enforcer as a cluster add-on: kube-network-policies in kube-system on the
// host network (it writes the node's nftables rules and answers NFQUEUE verdicts, hence NET_ADMIN), with
// AdminNetworkPolicy and BaselineAdminNetworkPolicy on, read-only rights on what policies select, and the
// CRDs of those two kinds. Fail closed: while it is down, new connections to and from Pods wait in the
// queue and are dropped, never let through unchecked.
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import type { AddonObject } from './addons.ts';
import type { NetworkPolicyEnforcer } from './netpol-build.ts';

const namespace = 'kube-system';
const name = 'kube-network-policies';
const role = `tenantkit-node:${name}`;
const labels = { 'k8s-app': name };
/** Its metrics, on the node's loopback only (it shares the host's network). */
const metricsAddress = '127.0.0.1:29080';

/** `nriDir`: the folder of containerd's NRI socket, through which it learns Pods' addresses first-hand. */
export async function networkPolicyObjects(
  enforcer: NetworkPolicyEnforcer,
  nriDir: string,
): Promise<AddonObject[]> {
  const crds = await Promise.all(
    enforcer.crds.map(async (file) => ({
      type: Resources.customResourceDefinitions,
      object: parse(await readFile(file, 'utf8')) as KubeObject,
    })),
  );
  const readOnly = ['list', 'watch'];
  return [
    ...crds,
    { type: Resources.serviceAccounts, object: { metadata: { name, namespace } } },
    {
      type: Resources.clusterRoles,
      object: {
        metadata: { name: role },
        rules: [
          { apiGroups: [''], resources: ['pods', 'namespaces', 'nodes'], verbs: readOnly },
          { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: readOnly },
          {
            apiGroups: ['policy.networking.k8s.io'],
            resources: ['adminnetworkpolicies', 'baselineadminnetworkpolicies'],
            verbs: readOnly,
          },
        ],
      } as KubeObject,
    },
    {
      type: Resources.clusterRoleBindings,
      object: {
        metadata: { name: role },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ kind: 'ServiceAccount', name, namespace }],
      } as KubeObject,
    },
    {
      type: Resources.deployments,
      object: {
        metadata: { name, namespace, labels },
        spec: {
          replicas: 1,
          // One node: the old Pod's rules go before the new one writes its own.
          strategy: { type: 'Recreate' },
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              serviceAccountName: name,
              priorityClassName: 'system-node-critical',
              hostNetwork: true,
              containers: [
                {
                  name,
                  image: enforcer.image.ref,
                  imagePullPolicy: 'IfNotPresent',
                  args: [
                    '--hostname-override=$(NODE_NAME)',
                    '--admin-network-policy=true',
                    '--baseline-admin-network-policy=true',
                    // Pod addresses from containerd as each sandbox starts, not from the API server
                    // after the Pod may already have sent its first packets.
                    '--disable-nri=false',
                    // The DNS race it works around is fixed in kernels 6.12 and later.
                    '--netfilter-bug-1766-fix=false',
                    `--metrics-bind-address=${metricsAddress}`,
                    '--v=2',
                  ],
                  env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
                  securityContext: {
                    runAsUser: 0,
                    allowPrivilegeEscalation: false,
                    readOnlyRootFilesystem: true,
                    capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] },
                  },
                  resources: { requests: { cpu: '50m', memory: '50Mi' } },
                  volumeMounts: [{ name: 'nri', mountPath: '/var/run/nri' }],
                },
              ],
              volumes: [{ name: 'nri', hostPath: { path: nriDir, type: 'DirectoryOrCreate' } }],
            },
          },
        },
      } as KubeObject,
    },
  ];
}
