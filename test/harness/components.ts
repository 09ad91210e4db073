// Runs tenantkit components in the test process under their own least-privilege identities: the
// ClusterRoles come from the same rules the Helm chart renders, so a missing permission fails a test.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { baseControllerRules, type Capability, type CapabilityContext } from '../../src/capabilities.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { Manager } from '../../src/kube/manager.ts';
import { Resources } from '../../src/kube/resources.ts';
import { eventually, type TestCluster } from './cluster.ts';
import { startTestWebhooks, type TestWebhooks } from './webhooks.ts';

export const componentUser = (component: string) =>
  `system:serviceaccount:tenantkit-system:tenantkit-${component}`;

/** A kubeconfig file for a component identity holding exactly `rules` (cluster-wide). */
export async function componentKubeconfig(
  cluster: TestCluster,
  component: string,
  rules: unknown[],
): Promise<string> {
  const name = `tenantkit-test-${component}`;
  await cluster.grant({ kind: 'User', name: componentUser(component) }, { rules, name });
  const path = join(cluster.dir, `${name}.kubeconfig`);
  await writeFile(path, await cluster.userKubeconfig(componentUser(component)), { mode: 0o600 });
  return path;
}

/** A Role in `namespace` with `rules`, bound to a component identity (what the chart's Roles do). */
async function grantInNamespace(
  cluster: TestCluster,
  namespace: string,
  component: string,
  rules: unknown[],
) {
  await cluster.admin.apply(
    Resources.namespaces,
    { metadata: { name: namespace } },
    { fieldManager: 'tenantkit-test' },
  );
  await cluster.grant(
    { kind: 'User', name: componentUser(component) },
    { rules, name: `tenantkit-test-${component}` },
    namespace,
  );
}

export interface RunningCapability {
  controllers: Manager;
  controllerClient: KubeClient;
  controllerKubeconfig: string;
  webhooks: TestWebhooks;
  stopControllers(): Promise<void>;
  startControllers(): void;
}

/**
 * Grants a capability's controllers their rules for the namespace named by `namespaceValue` in
 * `namespace` (what the chart's Role there does); e.g. again when a test moves Velero's namespace.
 */
export async function grantControllerNamespace(
  cluster: TestCluster,
  capability: Capability,
  namespaceValue: string,
  namespace: string,
): Promise<void> {
  const rules = (capability.controllerNamespacedRules ?? [])
    .filter((r) => r.namespaceValue === namespaceValue)
    .flatMap((r) => r.rules);
  if (rules.length > 0) await grantInNamespace(cluster, namespace, `${capability.name}-controllers`, rules);
}

export interface RunOptions {
  /** The namespace for each Helm value a capability's namespaced rules name, e.g. Velero's. */
  namespaces?: Record<string, string>;
}

/** Starts a capability's controllers and webhooks in-process, each as its own identity. */
export async function runCapability(
  cluster: TestCluster,
  capability: Capability,
  options: RunOptions = {},
): Promise<RunningCapability> {
  const controllerKubeconfig = await componentKubeconfig(cluster, `${capability.name}-controllers`, [
    ...baseControllerRules,
    ...capability.controllerRules,
  ]);
  for (const { namespaceValue } of capability.controllerNamespacedRules ?? []) {
    const namespace = options.namespaces?.[namespaceValue];
    // No silent cluster-wide fallback: that would hide a rule missing from the Role the chart renders.
    if (!namespace)
      throw new Error(`runCapability(${capability.name}) needs options.namespaces['${namespaceValue}']`);
    await grantControllerNamespace(cluster, capability, namespaceValue, namespace);
  }
  const webhookKubeconfig = await componentKubeconfig(
    cluster,
    `${capability.name}-webhooks`,
    capability.webhookRules,
  );
  if (capability.webhookNamespacedRules?.length) {
    await grantInNamespace(
      cluster,
      'tenantkit-system',
      `${capability.name}-webhooks`,
      capability.webhookNamespacedRules,
    );
  }
  const webhookClient = KubeClient.fromKubeconfig({ path: webhookKubeconfig });
  const webhookManager = new Manager({
    client: webhookClient,
    logger: silentLogger,
    component: 'test-webhooks',
  });
  const webhookCtx: CapabilityContext = {
    client: webhookClient,
    manager: webhookManager,
    namespace: 'tenantkit-system',
  };
  const definitions = (await capability.webhooks?.(webhookCtx)) ?? [];
  const webhookStop = new AbortController();
  const webhookRun = webhookManager.start(webhookStop.signal);
  await eventually(() => webhookManager.hasSynced(), { what: 'webhook caches synced' });
  const webhooks = await startTestWebhooks(cluster, definitions);
  cluster.defer(async () => {
    webhookStop.abort();
    await webhookRun;
  });

  const controllerClient = KubeClient.fromKubeconfig({ path: controllerKubeconfig });
  let stop = new AbortController();
  let run: Promise<void> = Promise.resolve();
  const make = async () => {
    const manager = new Manager({
      client: controllerClient,
      logger: silentLogger,
      component: 'test-controllers',
    });
    await capability.controllers?.({ client: controllerClient, manager, namespace: 'tenantkit-system' });
    return manager;
  };
  const running: RunningCapability = {
    controllers: await make(),
    controllerClient,
    controllerKubeconfig,
    webhooks,
    startControllers() {
      stop = new AbortController();
      run = running.controllers.start(stop.signal);
    },
    async stopControllers() {
      stop.abort();
      await run;
      running.controllers = await make();
    },
  };
  running.startControllers();
  cluster.defer(() => running.stopControllers());
  return running;
}
