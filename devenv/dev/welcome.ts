// What `tenantkit dev` prints once everything runs: where each part is and what to try first, as admin and
// as each example tenant.
import type { ControlPlane } from '../controlplane/launch.ts';
import type { LocalNode } from '../node/launch.ts';
import type { DevComponents } from './components.ts';
import { exampleTenants } from './seed.ts';

export interface WelcomeFacts {
  controlPlane: ControlPlane;
  node: LocalNode | undefined;
  components: DevComponents;
  capabilityCount: number;
  dir: string;
  logFile: string;
  logToTerminal: boolean;
}

export function welcome({
  controlPlane,
  node,
  components,
  capabilityCount,
  dir,
  logFile,
  logToTerminal,
}: WelcomeFacts): string {
  const tenants = exampleTenants
    .map(
      (t) =>
        `  ${t.name} (namespace ${t.namespace}): export KUBECONFIG=${controlPlane.tokenKubeconfigPath(t.name)}`,
    )
    .join('\n');
  const volumesHint = node
    ? `\n  (with "defaultVolumesToFsBackup": true in backupSpec, Velero's node-agent on ${node.name} also backs up the Pods' volumes file by file)`
    : '';
  return `
tenantkit dev is running (${capabilityCount} capabilities, webhooks on https://127.0.0.1:${components.webhookPort},
search on ${components.searchUrl}/searchapi/graphql).

Console: ${components.consoleUrl} (its certificate is from ${components.caFile}: trust that CA, or accept
         the browser's warning). Sign in as alice with the token this prints:
         kubectl --kubeconfig ${controlPlane.tokenKubeconfigPath('alice')} config view --raw -o jsonpath='{.users[0].user.token}'

Admin:   export KUBECONFIG=${controlPlane.adminKubeconfigPath}
Tenants:
${tenants}

Try first:
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl get pods            # allowed in team-a${
    node
      ? `
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl run hello --image=${node.workloadImage} --restart=Never -- sleep 30   # a real Pod on node ${node.name}; run-once, so it gets the namespace's deadline`
      : ''
  }
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl get pods -n team-b  # forbidden
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl create namespace alice-dev   # joins organization team-a
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl create namespace kube-mine   # denied: reserved name
  KUBECONFIG=${controlPlane.adminKubeconfigPath} kubectl get crds -l app.kubernetes.io/part-of=tenantkit
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} npx tenantkit search 'kind:ConfigMap'   # alice's objects only
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl apply -f - <<<'{"apiVersion":"oadp.openshift.io/v1alpha1","kind":"NonAdminBackup","metadata":{"name":"first"},"spec":{"backupSpec":{}}}'
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('alice')} kubectl get nab first    # Velero-Phase Completed: a real backup in ${dir}/velero${volumesHint}
  KUBECONFIG=${controlPlane.tokenKubeconfigPath('bob')} npx tenantkit search 'namespace:team-a'   # nothing: bob may not list there

Logs: ${logToTerminal ? 'JSON on this terminal' : `JSON in ${logFile}; warnings and errors show here (--log-to-terminal for all of it)`}.
Ctrl-C stops everything; the next run reuses ${dir}.
`;
}
