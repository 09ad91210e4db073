// The capabilities tenantkit runs. Each capability folder exposes one entry point; the runtime
// (src/kube, src/webhook) never imports them, only the CLI wires them together here.
import type { KubeClient } from '../kube/client.ts';
import type { Manager } from '../kube/manager.ts';
import { scopes } from '../scopes/index.ts';
import { tenancy } from '../tenancy/index.ts';
import type { WebhookDefinition } from '../webhook/registration.ts';

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

export interface Capability {
  name: string;
  /** Exactly what the controllers of this capability need; rendered into the Helm chart's RBAC. */
  controllerRules: PolicyRule[];
  /** Exactly what its webhooks need. */
  webhookRules: PolicyRule[];
  /** What its webhooks need only in the namespace tenantkit runs in (granted by a Role there). */
  webhookNamespacedRules?: PolicyRule[];
  /** Adds controllers to the manager. */
  controllers?(ctx: CapabilityContext): void;
  /** Admission webhooks this capability serves. */
  webhooks?(ctx: CapabilityContext): WebhookDefinition[];
}

export const capabilities: Capability[] = [scopes, tenancy];

/** What every controllers process needs whatever capabilities it runs (leases are granted by a Role). */
export const baseControllerRules: PolicyRule[] = [
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];

/** The capabilities named in a comma-separated list (all when the list is empty or absent). */
export function selectCapabilities(list: string | undefined): Capability[] {
  const names = (list ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  if (names.length === 0) return capabilities;
  const unknown = names.filter((n) => !capabilities.some((c) => c.name === n));
  if (unknown.length > 0) {
    throw new Error(
      `unknown capabilities: ${unknown.join(', ')}; known: ${capabilities.map((c) => c.name).join(', ')}`,
    );
  }
  return capabilities.filter((c) => names.includes(c.name));
}
