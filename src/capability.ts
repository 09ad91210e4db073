// The contract between tenantkit's runtime and its capabilities (scopes/, tenancy/, search/, backup/):
// what a capability declares (the RBAC its components need, the ClusterRoles it gives tenants) and how it
// plugs into a process (controllers on a manager, admission webhooks, components of its own). A
// capability uses the runtime (src/kube, src/webhook) and this contract, never another capability or the
// CLI; the CLI wires them together.
import type { KubeClient } from './kube/client.ts';
import type { Manager } from './kube/manager.ts';
import type { KubeObject } from './kube/resources.ts';
import type { WebhookDefinition } from './webhook/registration.ts';

export interface CapabilityContext {
  client: KubeClient;
  manager: Manager;
  /** Namespace tenantkit runs in (leases, admin-side objects). */
  namespace: string;
}

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/**
 * Rules that a capability's controllers need in one namespace only (e.g. writes in Velero's namespace),
 * granted there by a Role instead of cluster-wide. The namespace is a Helm value of the chart.
 */
export interface NamespacedRules {
  /** The Helm value naming the namespace, e.g. `backup.veleroNamespace` (values.yaml defines it). */
  namespaceValue: string;
  rules: PolicyRule[];
}

export interface Capability {
  name: string;
  /** Exactly what the controllers of this capability need; rendered into the Helm chart's RBAC. */
  controllerRules: PolicyRule[];
  /** What the controllers need only in a namespace named by configuration (granted by a Role there). */
  controllerNamespacedRules?: NamespacedRules[];
  /** Exactly what its webhooks need. */
  webhookRules: PolicyRule[];
  /** What its webhooks need only in the namespace tenantkit runs in (granted by a Role there). */
  webhookNamespacedRules?: PolicyRule[];
  /** Adds controllers to the manager. */
  controllers?(ctx: CapabilityContext): void;
  /** Admission webhooks this capability serves. */
  webhooks?(ctx: CapabilityContext): WebhookDefinition[];
  /**
   * Components the capability runs as processes of their own (not in the controllers or webhooks process),
   * each with its own ServiceAccount and exactly these rules; the chart names their ClusterRoles
   * `<release>-<name>`.
   */
  components?: { name: string; rules: PolicyRule[] }[];
  /** ClusterRoles that give tenants the capability (aggregated into admin/edit/view by their labels). */
  userClusterRoles?(): KubeObject[];
}
