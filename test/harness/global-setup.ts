// Starts one real control plane for the whole integration run, installs CRDs, and hands the
// connection details to test files (inject('cluster')). Stops it, and everything it started, at the end.
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
import { nodeSkipReason } from './node.ts';
import { prebuild } from './prebuild.ts';
import { veleroCrds } from './reference.ts';
import { writeWebhookClientAuth } from './webhook-client.ts';

export default async function setup(project: TestProject) {
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), 'tenantkit-test-'));
  // Every CRD, test-only ones included, is installed before kube-controller-manager starts, so the
  // garbage collector knows them all from its first discovery.
  const crds: KubeObject[] = [
    ...[...allCrds, SampleCrd, ProjectStandInCrd, ProjectRequestStandInCrd, UserStandInCrd].map(
      (d) => crdManifest(d) as unknown as KubeObject,
    ),
    crdManifest(ManagedClusterCrd) as unknown as KubeObject,
    ...(await veleroCrds()),
  ];
  // Where the local node can run, kube-apiserver listens on the node's address so that Pods reach it too.
  const network = nodeSkipReason ? undefined : await ensureNodeNetwork();
  // kube-apiserver presents a client certificate to webhooks; the test webhook servers require it.
  const webhookClient = await writeWebhookClientAuth(dir);
  const controlPlane = await startControlPlane({
    dir,
    ...(network ? { address: nodeIP } : {}),
    unsafeNoFsync: true,
    tokenUsers: testTokenUsers,
    apiserverFlags: webhookClient.apiserverFlags,
    progress: (line) => console.log(`[control plane] ${line}`),
    beforeControllers: (kubeconfig) => installCrds(KubeClient.fromKubeconfig({ yaml: kubeconfig }), crds),
  });
  console.log(
    `[control plane] ready with ${crds.length} CRDs in ${Date.now() - started} ms at ${controlPlane.server}`,
  );
  // TENANTKIT_PREBUILD=0 skips the background builds: a run of a few files that need none of them (a
  // developer's loop on a busy machine) then spends no CPU on Velero, the node or the images.
  const background =
    process.env.TENANTKIT_PREBUILD === '0'
      ? { stop() {} }
      : prebuild(!nodeSkipReason, (line) => console.log(line));
  project.provide('cluster', {
    dir,
    server: controlPlane.server,
    adminKubeconfigPath: controlPlane.adminKubeconfigPath,
    webhookClient: {
      caPem: webhookClient.caPem,
      certPem: webhookClient.certPem,
      keyPem: webhookClient.keyPem,
    },
  });
  return async () => {
    background.stop();
    await controlPlane.stop();
    await network?.release();
    await removeTree(dir);
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    cluster: {
      dir: string;
      server: string;
      adminKubeconfigPath: string;
      /** kube-apiserver's webhook client certificate and its CA (see webhook-client.ts). */
      webhookClient: { caPem: string; certPem: string; keyPem: string };
    };
  }
}
