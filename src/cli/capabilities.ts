// The capabilities tenantkit runs. Each capability folder exposes one entry point; the runtime
// (src/kube, src/webhook) never imports them, only the CLI wires them together here.
import type { KubeClient } from '../kube/client.ts';
import type { Manager } from '../kube/manager.ts';
import type { WebhookDefinition } from '../webhook/registration.ts';

export interface CapabilityContext {
  client: KubeClient;
  manager: Manager;
  /** Namespace tenantkit runs in (leases, admin-side objects). */
  namespace: string;
}

export interface Capability {
  name: string;
  /** Adds controllers to the manager. */
  controllers?(ctx: CapabilityContext): void;
  /** Admission webhooks this capability serves. */
  webhooks?(ctx: CapabilityContext): WebhookDefinition[];
}

export const capabilities: Capability[] = [];
