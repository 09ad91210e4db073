// Proves the test Velero is the real thing: a resource-only backup of a namespace lands in the bucket,
// and a restore brings deleted objects back with their data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PatchType } from '../../src/kube/client.ts';
import { type KubeObject, Resources, type ResourceType } from '../../src/kube/resources.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { startTestVelero, type TestVelero, veleroStartTimeoutMs } from '../harness/velero.ts';

const Types = {
  services: { group: '', version: 'v1', plural: 'services', kind: 'Service', namespaced: true },
  pvcs: {
    group: '',
    version: 'v1',
    plural: 'persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    namespaced: true,
  },
  deployments: { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', namespaced: true },
} satisfies Record<string, ResourceType>;

interface WithData extends KubeObject {
  data?: Record<string, string>;
}
interface Service extends KubeObject {
  spec: { ports: { name: string; port: number; targetPort: number }[]; selector: Record<string, string> };
}
interface Deployment extends KubeObject {
  spec: { replicas: number; template: { spec: { containers: { image: string }[] } } };
}
interface Pvc extends KubeObject {
  spec: { resources: { requests: Record<string, string> } };
}

describe('Velero', () => {
  let cluster: TestCluster;
  let velero: TestVelero;

  beforeAll(async () => {
    cluster = await TestCluster.connect();
    velero = await startTestVelero(cluster);
  }, veleroStartTimeoutMs);

  afterAll(async () => {
    await cluster?.cleanup();
    await velero?.stop();
  });

  it('backs up a namespace to the bucket and restores its deleted objects', async () => {
    const admin = cluster.admin;
    const ns = await cluster.namespace('app');
    const labels = { app: 'shop' };
    await admin.create(Resources.configMaps, {
      metadata: { name: 'settings', namespace: ns },
      data: { 'app.properties': 'color=blue\nsize=3\n' },
    } as KubeObject);
    await admin.create(Resources.secrets, {
      metadata: { name: 'db', namespace: ns },
      type: 'Opaque',
      data: { password: Buffer.from('s3cr3t').toString('base64') },
    } as KubeObject);
    await admin.create(Types.services, {
      metadata: { name: 'shop', namespace: ns, labels },
      spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    } as KubeObject);
    await admin.create(Types.deployments, {
      metadata: { name: 'shop', namespace: ns, labels },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: 'shop', image: 'registry.example/shop:1.2.3' }] },
        },
      },
    } as KubeObject);
    // Stays Pending (nothing provisions volumes here), which a resource-only backup does not mind.
    await admin.create(Types.pvcs, {
      metadata: { name: 'data', namespace: ns },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } as KubeObject);

    const name = cluster.unique('backup');
    const started = Date.now();
    const backup = await velero.backup(name, {
      includedNamespaces: [ns],
      snapshotVolumes: false,
      defaultVolumesToFsBackup: false,
      storageLocation: velero.storageLocation,
    });
    expect(backup.status?.phase, JSON.stringify(backup.status)).toBe('Completed');
    expect(backup.status?.errors ?? 0).toBe(0);
    const backupMs = Date.now() - started;

    const keys = (await velero.listObjects(`backups/${name}/`)).map((o) => o.key);
    expect(keys).toEqual(
      expect.arrayContaining([
        `backups/${name}/${name}.tar.gz`,
        `backups/${name}/${name}-logs.gz`,
        `backups/${name}/velero-backup.json`,
      ]),
    );

    await admin.delete(Resources.configMaps, 'settings', ns);
    await admin.delete(Resources.secrets, 'db', ns);
    await admin.delete(Types.services, 'shop', ns);
    await admin.delete(Types.deployments, 'shop', ns);
    await admin.delete(Types.pvcs, 'data', ns);
    // kube-controller-manager here runs no PVC protection controller to lift its finalizer.
    await admin
      .patch(Types.pvcs, 'data', ns, { metadata: { finalizers: null } }, PatchType.merge)
      .catch(() => {});
    await eventually(async () => (await admin.get(Types.pvcs, 'data', ns)) === undefined, {
      what: 'PVC gone',
      intervalMs: 50,
    });
    for (const [type, object] of [
      [Resources.configMaps, 'settings'],
      [Resources.secrets, 'db'],
      [Types.services, 'shop'],
      [Types.deployments, 'shop'],
    ] as const) {
      expect(await admin.get(type, object, ns)).toBeUndefined();
    }

    const restoreStarted = Date.now();
    const restore = await velero.restore(cluster.unique('restore'), {
      backupName: name,
      includedNamespaces: [ns],
    });
    expect(restore.status?.phase, JSON.stringify(restore.status)).toBe('Completed');
    expect(restore.status?.errors ?? 0).toBe(0);
    const restoreMs = Date.now() - restoreStarted;

    const settings = await admin.get<WithData>(Resources.configMaps, 'settings', ns);
    expect(settings?.data).toEqual({ 'app.properties': 'color=blue\nsize=3\n' });
    const secret = await admin.get<WithData>(Resources.secrets, 'db', ns);
    expect(Buffer.from(secret?.data?.password ?? '', 'base64').toString()).toBe('s3cr3t');
    const service = await admin.get<Service>(Types.services, 'shop', ns);
    expect(service?.spec?.ports).toMatchObject([{ name: 'http', port: 80, targetPort: 8080 }]);
    expect(service?.spec?.selector).toEqual(labels);
    const deployment = await admin.get<Deployment>(Types.deployments, 'shop', ns);
    expect(deployment?.spec?.replicas).toBe(2);
    expect(deployment?.spec?.template.spec.containers[0]?.image).toBe('registry.example/shop:1.2.3');
    const pvc = await admin.get<Pvc>(Types.pvcs, 'data', ns);
    expect(pvc?.spec?.resources).toEqual({ requests: { storage: '1Gi' } });
    // Restored objects carry Velero's labels naming their backup and restore.
    expect(settings?.metadata.labels?.['velero.io/backup-name']).toBe(name);
    console.log(`[velero] backup completed in ${backupMs} ms, restore in ${restoreMs} ms`);
  });
});
