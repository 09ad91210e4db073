// tenantkit's Helm chart installed the way an admin installs it: `helm install` (helm built from Go modules,
// devenv/helm/build.ts) into the shared control plane with the local node, the image built here
// and imported into the node's containerd (there is no registry). Whatever the test does, the release's
// cluster-wide webhook configurations are gone when the file ends, so later files are never refused.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Helm, helmFor } from '../../devenv/helm/build.ts';
import { type BuiltImage, repoRoot } from '../../devenv/images/build.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import type { TestCluster } from './cluster.ts';

export const chartDir = join(repoRoot, 'deploy', 'helm', 'tenantkit');

export interface InstalledChart {
  release: string;
  namespace: string;
  /** Runs helm with the cluster's admin kubeconfig; resolves with its stdout. */
  helm: Helm;
  /** `helm upgrade` of the same chart with these values set on top of the install's. */
  upgrade(values: Record<string, string>): Promise<void>;
  uninstall(): Promise<void>;
}

/** The `--set` values that point the chart at an image built here. */
export function imageValues(image: BuiltImage): Record<string, string> {
  const colon = image.ref.lastIndexOf(':');
  return { 'image.repository': image.ref.slice(0, colon), 'image.tag': image.ref.slice(colon + 1) };
}

const setFlags = (values: Record<string, string>) =>
  Object.entries(values).flatMap(([k, v]) => ['--set', `${k}=${v}`]);

export async function installChart(
  cluster: TestCluster,
  values: Record<string, string>,
  progress: (line: string) => void = () => {},
): Promise<InstalledChart> {
  const release = cluster.unique('tk');
  const namespace = `${release}-system`;
  const helm = await helmFor(cluster.adminKubeconfigPath, join(cluster.dir, 'helm', release), progress);
  const removeWebhooks = async () => {
    await cluster.admin.delete(Resources.validatingWebhookConfigurations, release).catch(() => {});
    await cluster.admin.delete(Resources.mutatingWebhookConfigurations, release).catch(() => {});
  };
  // The chart's user-facing ClusterRoles have fixed names (tenantkit:search:user, …) that users bind to;
  // earlier test files of this shared cluster made them without Helm's ownership, which helm refuses to
  // adopt. They step aside for the release and come back after it (cleanups run last-in first-out: after
  // the uninstall below).
  const fixed = new Set(
    [
      ...(await readFile(join(chartDir, 'templates', 'generated-rbac.yaml'), 'utf8')).matchAll(
        /^ {2}name: (tenantkit:\S+)$/gm,
      ),
    ].map((m) => m[1]),
  );
  const shared = (await cluster.admin.list<KubeObject>(Resources.clusterRoles)).items.filter(
    (r) => fixed.has(r.metadata.name) && r.metadata.labels?.['app.kubernetes.io/managed-by'] !== 'Helm',
  );
  for (const role of shared) await cluster.admin.delete(Resources.clusterRoles, role.metadata.name!);
  cluster.defer(async () => {
    for (const role of shared) {
      const { name, labels, annotations } = role.metadata;
      await cluster.admin
        .create(Resources.clusterRoles, { ...role, metadata: { name, labels, annotations } } as KubeObject)
        .catch(() => {});
    }
  });
  cluster.defer(async () => {
    await helm(['uninstall', release, '-n', namespace, '--wait', '--timeout', '2m']).catch(() => {});
    await removeWebhooks();
    await cluster.admin.delete(Resources.namespaces, namespace).catch(() => {});
  });
  let current = { ...values };
  const base = ['--namespace', namespace, '--wait', '--timeout', '5m'];
  await helm(['install', release, chartDir, '--create-namespace', ...base, ...setFlags(current)]);
  return {
    release,
    namespace,
    helm,
    upgrade: async (more) => {
      current = { ...current, ...more };
      await helm(['upgrade', release, chartDir, ...base, ...setFlags(current)]);
    },
    uninstall: async () => {
      await helm(['uninstall', release, '-n', namespace, '--wait', '--timeout', '2m']);
    },
  };
}
