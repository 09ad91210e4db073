// The contract between tenantkit's runtime and its capabilities (scopes/, tenancy/, search/, backup/):
// what a capability declares (the RBAC its components need, the ClusterRoles it gives tenants, the
// commands it adds to `tenantkit`, the console calls its pages make, what `tenantkit dev` seeds for it)
// and how it plugs into a process (controllers on a manager, admission webhooks, components of its own).
// A capability uses the runtime (src/kube, src/webhook, src/serving, src/crds) and this contract, never
// another capability or the CLI; the registry beside this file (capabilities.ts) lists them, and nothing
// else outside a capability's folder names it.
//
// A Capability object is light: every process imports all of them (to find a command, to build the
// console's allow-list), so its module holds declarations only, and the functions that run something
// (`controllers`, `webhooks`, a command's `run`, `devSeed`) load their own modules when called.
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
  /** Adds controllers to the manager (loading them). */
  controllers?(ctx: CapabilityContext): Promise<void>;
  /** Admission webhooks this capability serves (loading their reviews). */
  webhooks?(ctx: CapabilityContext): Promise<WebhookDefinition[]>;
  /**
   * Components the capability runs as processes of their own (not in the controllers or webhooks process),
   * each with its own ServiceAccount and exactly these rules; the chart names their ClusterRoles
   * `<release>-<name>`. `command` is the `tenantkit` command line that starts one (one of `commands`).
   */
  components?: { name: string; rules: PolicyRule[]; command: string }[];
  /** ClusterRoles that give tenants the capability (aggregated into admin/edit/view by their labels). */
  userClusterRoles?(): KubeObject[];
  /** The `tenantkit` commands it adds, by name (`tenantkit backup ...`); looked up by the CLI. */
  commands?: Record<string, Command>;
  /** The Kubernetes API calls its console pages make, which the console forwards as the signed-in user. */
  consoleCalls?: ConsoleCall[];
  /** What `tenantkit dev` puts in a new cluster for it, after the CRDs and before the components start. */
  devSeed?(ctx: DevSeedContext): Promise<void>;
  /**
   * Source files rendered from its model, by path from the repository root, which `npm run generate`
   * writes (a unit test fails when one is stale): e.g. names a Go plugin shares with the TypeScript.
   */
  generatedFiles?(): Promise<Record<string, string>>;
}

export interface Command {
  /** Its lines in `tenantkit help` (each line's first word after `tenantkit ` is the command). */
  usage: string;
  /** Runs it; `stop` gives the process's shutdown signal (SIGINT/SIGTERM), for commands that serve. */
  run(args: string[], stop: () => AbortSignal): Promise<void>;
}

/**
 * API calls the console forwards for a capability's pages: `methods` on the collection (`scope: 'collection'`)
 * or on one object (`'object'`, any name unless `name` is given) of one resource, in any namespace when
 * `namespaced`. The console never forwards anything else, and never a Secret whatever a capability says.
 */
export interface ConsoleCall {
  methods: ('GET' | 'POST' | 'PUT' | 'DELETE')[];
  resource: { group: string; version: string; plural: string };
  namespaced: boolean;
  scope: 'collection' | 'object';
  name?: string;
}

/** What `tenantkit dev` offers a capability's seed. */
export interface DevSeedContext {
  client: KubeClient;
  /** The field manager of dev's writes. */
  fieldManager: string;
  /** Velero's namespace in dev (backup's config points there). */
  veleroNamespace: string;
  /** The example tenants dev makes tokens for: each a user with one group, owning one namespace. */
  tenants: { name: string; groups: string[]; namespace: string }[];
}
