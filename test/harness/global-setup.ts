// Starts the integration run's real control planes (one per lane, test/harness/lanes.ts), installs CRDs,
// and hands the connection details to test files (clusterInfo() in cluster.ts). Stops them, and everything
// they started, at the end.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startControlPlane } from '../../devenv/controlplane/launch.ts';
import { removeTree } from '../../devenv/node/host.ts';
import { ensureNodeNetwork, nodeIP } from '../../devenv/node/network.ts';
import { allCrds } from '../../src/crds/index.ts';
import { crdManifest } from '../../src/crds/schema.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { installCrds } from '../../src/kube/crds.ts';
import type { KubeObject } from '../../src/kube/resources.ts';
import { ManagedClusterCrd } from '../fixtures/managed-cluster.ts';
import { ProjectRequestStandInCrd, ProjectStandInCrd, UserStandInCrd } from '../fixtures/openshift.ts';
import { SampleCrd } from '../fixtures/sample.ts';
import { testTokenUsers } from './cluster.ts';
import { lanes } from './lanes.ts';
import { nodeSkipReason } from './node.ts';
import { prebuild } from './prebuild.ts';
import { veleroCrds } from './reference.ts';
import { writeWebhookClientAuth } from './webhook-client.ts';

/** What one control plane hands to the test files of its lane. */
export interface ClusterInfo {
  dir: string;
  server: string;
  adminKubeconfigPath: string;
  /** kube-apiserver's webhook client certificate and its CA (see webhook-client.ts). */
  webhookClient: { caPem: string; certPem: string; keyPem: string };
}

interface Shared {
  /** One control plane per lane, started once for all the projects that use them. */
  clusters: Promise<ClusterInfo[]>;
  users: number;
  stop(): Promise<void>;
}

// vitest calls every project's global setup in the same process, each through its own module runner:
// the control planes are kept on globalThis so that the `integration` and `node` projects share them.
const key = Symbol.for('tenantkit.test.controlPlanes');
const registry = globalThis as unknown as Record<symbol, Shared | undefined>;

export default async function setup(project: TestProject) {
  registry[key] ??= startAll(lanes);
  const shared = registry[key]!;
  shared.users += 1;
  const clusters = await shared.clusters;
  // The node's files use the first control plane, whose address the node's Pods reach.
  const count = Math.min(clusters.length, project.config.maxWorkers ?? 1);
  project.provide('clusters', clusters.slice(0, Math.max(1, count)));
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    registry[key] = undefined;
    await shared.stop();
  };
}

function startAll(count: number): Shared {
  const started = Date.now();
  const stops: (() => Promise<unknown>)[] = [];
  const clusters = (async () => {
    // Where the local node can run, kube-apiserver listens on the node's address so that Pods reach it too.
    const network = nodeSkipReason ? undefined : await ensureNodeNetwork();
    if (network) stops.push(() => network.release());
    const planes = await Promise.all(
      Array.from({ length: count }, (_, lane) => startOne(lane, network ? nodeIP : undefined, stops)),
    );
    console.log(
      `[control plane] ${count} ready in ${Date.now() - started} ms at ${planes.map((p) => p.server).join(', ')}`,
    );
    // TENANTKIT_PREBUILD=0 skips the background builds: a run of a few files that need none of them (a
    // developer's loop on a busy machine) then spends no CPU on Velero, the node or the images.
    if (process.env.TENANTKIT_PREBUILD !== '0') {
      const background = prebuild(!nodeSkipReason, (line) => console.log(line));
      stops.push(async () => background.stop());
    }
    return planes;
  })();
  return {
    clusters,
    users: 0,
    async stop() {
      await clusters.catch(() => {});
      // Last started, first stopped: the builds, then the control planes, then the node's network.
      for (const stop of stops.reverse()) await stop().catch(() => {});
    },
  };
}

async function startOne(
  lane: number,
  address: string | undefined,
  stops: (() => Promise<unknown>)[],
): Promise<ClusterInfo> {
  const dir = await mkdtemp(join(tmpdir(), `tenantkit-test-${lane + 1}-`));
  // Every CRD, test-only ones included, is installed before kube-controller-manager starts, so the
  // garbage collector knows them all from its first discovery.
  const crds: KubeObject[] = [
    ...[...allCrds, SampleCrd, ProjectStandInCrd, ProjectRequestStandInCrd, UserStandInCrd].map(
      (d) => crdManifest(d) as unknown as KubeObject,
    ),
    crdManifest(ManagedClusterCrd) as unknown as KubeObject,
    ...(await veleroCrds()),
  ];
  // kube-apiserver presents a client certificate to webhooks; the test webhook servers require it.
  const webhookClient = await writeWebhookClientAuth(dir);
  const controlPlane = await startControlPlane({
    dir,
    ...(address ? { address } : {}),
    unsafeNoFsync: true,
    tokenUsers: testTokenUsers,
    apiserverFlags: webhookClient.apiserverFlags,
    progress: (line) => console.log(`[control plane ${lane + 1}] ${line}`),
    beforeControllers: (kubeconfig) => installCrds(KubeClient.fromKubeconfig({ yaml: kubeconfig }), crds),
  });
  stops.push(async () => {
    await controlPlane.stop();
    await removeTree(dir);
  });
  return {
    dir,
    server: controlPlane.server,
    adminKubeconfigPath: controlPlane.adminKubeconfigPath,
    webhookClient: {
      caPem: webhookClient.caPem,
      certPem: webhookClient.certPem,
      keyPem: webhookClient.keyPem,
    },
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The control planes of this project's lanes; a file uses `clusterInfo()`'s (cluster.ts). */
    clusters: ClusterInfo[];
  }
}
