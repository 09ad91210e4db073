// tenantkit installed as an admin installs it, for the e2e files: the images built here and imported into
// the local node's containerd, Velero running on the node as `velero install` runs it (its object store on
// the node's address), the chart installed with `helm install --wait`, and the admin's NonAdminBackupConfig
// turning non-admin backup on. Everything goes at the file's end with stopInstalled (the file's cleanups
// first, last-in first-out: the uninstall, then Velero; then the node, which must leave the machine as it
// found it).

import {
  type BuiltImage,
  ensurePostgresImage,
  ensureTenantkitImage,
  ensureVeleroImage,
} from '../../devenv/images/build.ts';
import type { LocalNode } from '../../devenv/node/launch.ts';
import { NonAdminBackupConfigCrd } from '../../src/crds/backup.ts';
import { applyBackupPolicy } from './backup.ts';
import { type InstalledChart, imageValues, installChart } from './chart.ts';
import type { TestCluster } from './cluster.ts';
import { startTestNode, stopTestNode } from './node.ts';
import { startTestVelero, type TestVelero } from './velero.ts';

export interface Installed {
  node: LocalNode;
  velero: TestVelero;
  chart: InstalledChart;
}

/** For beforeAll (allow about 20 minutes on a cold cache: the images and Velero are built first). */
export async function installTenantkit(
  cluster: TestCluster,
  progress: (line: string) => void,
): Promise<Installed> {
  const image = await ensureTenantkitImage({ progress });
  const postgres = await ensurePostgresImage({ progress });
  const veleroImage = await ensureVeleroImage({ progress });
  // With its NetworkPolicy enforcer: the chart's policies and the organizations' isolation hold for real.
  const node = await startTestNode(cluster, { networkPolicies: true });
  try {
    return await onNode(cluster, node, image, postgres, veleroImage, progress);
  } catch (err) {
    // afterAll never sees this node: stop it here, so that the machine is put back.
    await stopTestNode(cluster, node).catch(() => {});
    throw err;
  }
}

async function onNode(
  cluster: TestCluster,
  node: LocalNode,
  image: BuiltImage,
  postgres: BuiltImage,
  veleroImage: BuiltImage,
  progress: (line: string) => void,
): Promise<Installed> {
  for (const built of [image, postgres, veleroImage]) await node.importImage(built);
  const db = imageValues(postgres);
  // Velero's namespace exists before tenantkit is installed (the chart puts Roles there); it stops after
  // the uninstall (cleanups run last-in first-out).
  const velero = await startTestVelero(cluster, {
    onNode: { image: veleroImage.ref, address: node.ip, kubeletDir: node.kubeletDir },
  });
  cluster.defer(() => velero.stop());
  const started = Date.now();
  const chart = await installChart(
    cluster,
    {
      ...imageValues(image),
      'backup.veleroNamespace': velero.namespace,
      // One API replica is enough here (two cores run every Pod of the release); the rest as shipped.
      'search.replicas': '1',
      'search.database.bundled.image.repository': db['image.repository']!,
      'search.database.bundled.image.tag': db['image.tag']!,
    },
    progress,
  );
  progress(`helm install --wait finished in ${Date.now() - started} ms`);
  await applyBackupPolicy(cluster, { veleroNamespace: velero.namespace });
  cluster.defer(() => cluster.admin.delete(NonAdminBackupConfigCrd.type, 'cluster'));
  return { node, velero, chart };
}

/** For afterAll: the file's cleanups, then the node (see stopTestNode). */
export const stopInstalled = (cluster: TestCluster | undefined, installed: Installed | undefined) =>
  stopTestNode(cluster, installed?.node);
