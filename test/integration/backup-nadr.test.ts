// NonAdminDownloadRequest end to end, as a tenant, through the real API server and a real Velero writing
// to a real S3 store: a tenant asks for the log and resource list of its own NonAdminBackup and the log of
// its own NonAdminRestore by their names, fetches Velero's presigned URL with plain HTTP and reads the
// gzip'd file. Names of another namespace's backups resolve to nothing; deleting a request deletes its
// Velero DownloadRequest; an expired one is removed with its DownloadRequest.
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadFile } from '../../src/backup/cli/download.ts';
import { Annotations, Labels, NadrFinalizer } from '../../src/backup/model.ts';
import { nacObjectName } from '../../src/backup/velero/names.ts';
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  type NonAdminDownloadRequest,
  NonAdminDownloadRequestCrd,
  NonAdminRestoreCrd,
} from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import { type KubeClient, PatchType } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import {
  type BackupEnvironment,
  condition,
  settledBackup,
  settledRestore,
  startBackupEnvironment,
  veleroQueueMs,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

type DownloadRequest = KubeObject & {
  spec: { target: { kind: string; name: string } };
  status?: { phase?: string; downloadURL?: string; expiration?: string };
};

const cluster = await TestCluster.connect();
let env: BackupEnvironment;
let ns: string;
let otherNs: string;
let tenant: KubeClient;
const nabType = NonAdminBackupCrd.type;
const narType = NonAdminRestoreCrd.type;
const nadrType = NonAdminDownloadRequestCrd.type;

/** The Velero DownloadRequest's name (and NACUUID label) for a request, as the controller derives it. */
const drName = (o: NonAdminDownloadRequest) => nacObjectName(ns, o.metadata.name!, o.metadata.uid!);
const nadr = (name: string) => cluster.admin.get<NonAdminDownloadRequest>(nadrType, name, ns);
const downloadRequests = async () =>
  (
    await cluster.admin.list<DownloadRequest>(VeleroResources.downloadRequests, {
      namespace: env.velero.namespace,
    })
  ).items;

/** The tenant's request, once its URL is ready (as the tenant reads it). */
async function requestFile(name: string, kind: string, target: string): Promise<NonAdminDownloadRequest> {
  await tenant.create(nadrType, {
    metadata: { name, namespace: ns },
    spec: { target: { kind, name: target } },
  } as KubeObject);
  return eventually(
    async () => {
      const o = await tenant.get<NonAdminDownloadRequest>(nadrType, name, ns);
      return o?.status?.velero?.status?.downloadURL ? o : undefined;
    },
    { timeoutMs: 60_000, what: `NonAdminDownloadRequest ${name} processed` },
  );
}

/** What a tenant does with the URL: a plain GET (no Kubernetes credentials), then gunzip. */
async function fetchFile(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status, url).toBe(200);
  const body = Buffer.from(await response.arrayBuffer());
  // Velero stores these files gzip'd; a store that sends Content-Encoding: gzip is decoded by fetch already.
  return (body[0] === 0x1f && body[1] === 0x8b ? gunzipSync(body) : body).toString('utf8');
}

beforeAll(async () => {
  env = await startBackupEnvironment(cluster);
  ({ namespace: ns, tenant } = await env.tenantNamespace('shop'));
  otherNs = await env.namespace('victim');
}, veleroStartTimeoutMs);

afterAll(() => env?.stop());

describe('NonAdminDownloadRequest', { timeout: veleroQueueMs + 60_000 }, () => {
  let nightly: NonAdminBackup;

  it("serves a tenant its own backup's log and resource list through Velero's presigned URL", async () => {
    await tenant.create(Resources.configMaps, {
      metadata: { name: 'settings', namespace: ns },
      data: { color: 'blue' },
    } as KubeObject);
    await tenant.create(nabType, {
      metadata: { name: 'nightly', namespace: ns },
      spec: { backupSpec: {} },
    } as KubeObject);
    nightly = await settledBackup(cluster, ns, 'nightly');
    expect(nightly.status?.veleroBackup?.status?.phase).toBe('Completed');
    const veleroBackup = nightly.status!.veleroBackup!.name!;

    const started = Date.now();
    const log = await requestFile('log', 'BackupLog', 'nightly');
    const urlMs = Date.now() - started;
    expect(log.status?.phase).toBe('Created');
    expect(log.metadata.finalizers).toContain(NadrFinalizer);
    expect(condition(log, 'Accepted')).toMatchObject({
      status: 'True',
      reason: 'TargetResolved',
      observedGeneration: log.metadata.generation,
    });
    expect(condition(log, 'Processed')).toMatchObject({ status: 'True', reason: 'DownloadURLReady' });
    expect(Date.parse(log.status!.velero!.status!.expiration!)).toBeGreaterThan(Date.now());

    // The Velero DownloadRequest: named and labelled by the NACUUID (namespace, name and the request's
    // UID), for the NAB's Velero Backup (the tenant wrote only the NAB's name); the only one for it.
    const uuid = drName(log);
    expect(uuid).toBe(`${ns}-log-${log.metadata.uid}`);
    expect(log.status?.velero).toMatchObject({ nacuuid: uuid, name: uuid, namespace: env.velero.namespace });
    const dr = await cluster.admin.get<DownloadRequest>(
      VeleroResources.downloadRequests,
      uuid,
      env.velero.namespace,
    );
    expect(dr?.spec.target).toEqual({ kind: 'BackupLog', name: veleroBackup });
    expect(
      (await downloadRequests()).filter((r) => r.metadata.annotations?.[Annotations.nadrName] === 'log'),
    ).toHaveLength(1);
    expect(dr?.metadata.labels).toMatchObject({
      [Labels.nadrUuid]: uuid,
      [Labels.managedBy]: 'tenantkit-backup',
      [Labels.oadp]: 'True',
    });
    expect(dr?.metadata.annotations).toMatchObject({
      [Annotations.nadrName]: 'log',
      [Annotations.nadrNamespace]: ns,
    });

    // The log is Velero's own, for this backup.
    const fetchStarted = Date.now();
    const text = await fetchFile(log.status!.velero!.status!.downloadURL!);
    const fetchMs = Date.now() - fetchStarted;
    const lines = text
      .split('\n')
      .filter((l) => l.includes(`backup=${env.velero.namespace}/${veleroBackup}`));
    expect(lines.length, text.slice(0, 2000)).toBeGreaterThan(3);
    expect(text).toMatch(/level=info msg=/);
    console.log(
      `[nadr] URL ready ${urlMs} ms after the request; log fetched in ${fetchMs} ms: ${text.length} bytes, ${lines.length} lines for this backup`,
    );

    // The resource list names the tenant's ConfigMap.
    const list = await requestFile('resources', 'BackupResourceList', 'nightly');
    const resources = JSON.parse(await fetchFile(list.status!.velero!.status!.downloadURL!)) as Record<
      string,
      string[]
    >;
    expect(resources['v1/ConfigMap']).toContain(`${ns}/settings`);
  });

  it("serves a restore's log by the NonAdminRestore's name", async () => {
    await tenant.create(narType, {
      metadata: { name: 'undo', namespace: ns },
      spec: { restoreSpec: { backupName: 'nightly' } },
    } as KubeObject);
    const undo = await settledRestore(cluster, ns, 'undo');
    const veleroRestore = undo.status!.veleroRestore!.name!;
    const log = await requestFile('restore-log', 'RestoreLog', 'undo');
    const dr = await cluster.admin.get<DownloadRequest>(
      VeleroResources.downloadRequests,
      drName(log),
      env.velero.namespace,
    );
    expect(dr?.spec.target).toEqual({ kind: 'RestoreLog', name: veleroRestore });
    const text = await fetchFile(log.status!.velero!.status!.downloadURL!);
    expect(text).toContain(`restore=${env.velero.namespace}/${veleroRestore}`);
  });

  it("refuses names of other namespaces' backups, unknown names and malformed targets, with a clear message and no DownloadRequest", async () => {
    // Another tenant's NonAdminBackup (it need not finish: its name is simply not this namespace's).
    await cluster.admin.create(nabType, {
      metadata: { name: 'secret-plans', namespace: otherNs },
      spec: { backupSpec: {} },
    } as KubeObject);
    await tenant.create(nadrType, {
      metadata: { name: 'theirs', namespace: ns },
      spec: { target: { kind: 'BackupLog', name: 'secret-plans' } },
    } as KubeObject);
    await tenant.create(nadrType, {
      metadata: { name: 'no-restore', namespace: ns },
      spec: { target: { kind: 'RestoreResults', name: 'nightly' } },
    } as KubeObject);
    for (const [name, message] of [
      ['theirs', `there is no NonAdminBackup "secret-plans" in namespace ${ns}`],
      // A restore kind names a NonAdminRestore: "nightly" is a backup here, not a restore.
      ['no-restore', `there is no NonAdminRestore "nightly" in namespace ${ns}`],
    ] as const) {
      const refused = await eventually(
        async () => {
          const o = await tenant.get<NonAdminDownloadRequest>(nadrType, name, ns);
          return o?.status?.phase === 'BackingOff' ? o : undefined;
        },
        { what: `${name} refused` },
      );
      expect(condition(refused, 'Accepted'), name).toMatchObject({
        status: 'False',
        reason: 'TargetNotFound',
      });
      expect(condition(refused, 'Accepted')?.message, name).toContain(message);
      expect(refused.status?.velero, name).toBeUndefined();
    }
    const events = await eventually(async () => {
      const list = await tenant.list<KubeObject & { reason?: string; regarding?: { name?: string } }>(
        Resources.events,
        { namespace: ns },
      );
      const found = list.items.filter((e) => e.reason === 'TargetNotFound').map((e) => e.regarding?.name);
      return found.includes('theirs') && found.includes('no-restore') ? found : undefined;
    });
    expect(events).toContain('theirs');
    const made = (await downloadRequests()).map((r) => r.metadata.annotations?.[Annotations.nadrName]);
    expect(made).not.toContain('theirs');
    expect(made).not.toContain('no-restore');

    // Malformed targets are refused at admission: the schema knows the kinds, the webhook wants a name.
    await expect(
      tenant.create(nadrType, {
        metadata: { name: 'bad-kind', namespace: ns },
        spec: { target: { kind: 'SecretKeys', name: 'nightly' } },
      } as KubeObject),
    ).rejects.toThrow(/spec\.target\.kind/);
    await expect(
      tenant.create(nadrType, {
        metadata: { name: 'no-name', namespace: ns },
        spec: { target: { kind: 'BackupLog', name: '' } },
      } as KubeObject),
    ).rejects.toThrow('spec.target.name is required: the name of a NonAdminBackup in this namespace');

    // And the other namespace is not the tenant's to ask in.
    await expect(
      tenant.create(nadrType, {
        metadata: { name: 'sneaky', namespace: otherNs },
        spec: { target: { kind: 'BackupLog', name: 'secret-plans' } },
      } as KubeObject),
    ).rejects.toThrow(/forbidden/i);
  });

  it('deleting a request deletes its Velero DownloadRequest', async () => {
    const log = await nadr('log');
    const name = drName(log!);
    expect(
      await cluster.admin.get(VeleroResources.downloadRequests, name, env.velero.namespace),
    ).toBeDefined();
    await tenant.delete(nadrType, 'log', ns);
    await eventually(
      async () =>
        (await nadr('log')) === undefined &&
        (await cluster.admin.get(VeleroResources.downloadRequests, name, env.velero.namespace)) === undefined,
      { what: 'NonAdminDownloadRequest log and its DownloadRequest gone' },
    );
  });

  it('removes an expired request together with its Velero DownloadRequest', async () => {
    const short = await requestFile('short', 'BackupLog', 'nightly');
    const name = drName(short);
    // Velero's DownloadRequest TTL is fixed at 10 minutes. The admin plays the clock: moving the
    // expiration into the past is what 10 minutes of waiting would do. (Velero, seeing it expired, may
    // delete its DownloadRequest first; the NonAdminDownloadRequest must go either way.)
    await cluster.admin.patch(VeleroResources.downloadRequests, name, env.velero.namespace, {
      status: { expiration: new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z') },
    });
    await eventually(
      async () =>
        (await nadr('short')) === undefined &&
        (await cluster.admin.get(VeleroResources.downloadRequests, name, env.velero.namespace)) === undefined,
      { what: 'expired NonAdminDownloadRequest and its DownloadRequest gone' },
    );
  });

  it('resumes after a crash at either step without a second DownloadRequest, and cleans up one deleted meanwhile', async () => {
    const veleroBackup = nightly.status!.veleroBackup!.name!;
    await env.running.stopControllers();
    const uuids: Record<string, string> = {};
    try {
      for (const name of ['after-uuid', 'after-create', 'deleted-while-down']) {
        await tenant.create(nadrType, {
          metadata: { name, namespace: ns },
          spec: { target: { kind: 'BackupLog', name: 'nightly' } },
        } as KubeObject);
        // What the controller had done when it stopped: finalizer and NACUUID in status...
        const uuid = drName((await nadr(name))!);
        uuids[name] = uuid;
        await cluster.admin.patch(nadrType, name, ns, { metadata: { finalizers: [NadrFinalizer] } });
        await cluster.admin.patch(
          nadrType,
          name,
          ns,
          {
            status: { phase: 'New', velero: { nacuuid: uuid, name: uuid, namespace: env.velero.namespace } },
          },
          PatchType.merge,
          'status',
        );
        // ...and for all but the first, the DownloadRequest too, before its status showed it.
        if (name === 'after-uuid') continue;
        await cluster.admin.create(VeleroResources.downloadRequests, {
          metadata: {
            name: uuid,
            namespace: env.velero.namespace,
            labels: {
              [Labels.managedBy]: 'tenantkit-backup',
              [Labels.oadp]: 'True',
              [Labels.nadrUuid]: uuid,
            },
            annotations: { [Annotations.nadrName]: name, [Annotations.nadrNamespace]: ns },
          },
          spec: { target: { kind: 'BackupLog', name: veleroBackup } },
        } as KubeObject);
      }
      // The tenant gives up on one while the controller is down: the finalizer keeps it until cleaned up.
      await tenant.delete(nadrType, 'deleted-while-down', ns);
    } finally {
      env.running.startControllers();
    }
    for (const name of ['after-uuid', 'after-create']) {
      await eventually(
        async () => {
          const o = await nadr(name);
          return o?.status?.velero?.status?.downloadURL ? o : undefined;
        },
        { what: `NonAdminDownloadRequest ${name} processed` },
      );
      const made = (await downloadRequests()).filter(
        (r) => r.metadata.annotations?.[Annotations.nadrName] === name,
      );
      expect(made.map((r) => r.metadata.name)).toEqual([uuids[name]]);
    }
    // Requests made before the restart, with their DownloadRequests, are untouched by it.
    for (const name of ['resources', 'restore-log']) {
      const o = await nadr(name);
      expect(o?.status?.velero?.status?.downloadURL, name).toBeDefined();
      expect(
        await cluster.admin.get(VeleroResources.downloadRequests, drName(o!), env.velero.namespace),
        name,
      ).toBeDefined();
    }
    await eventually(
      async () =>
        (await nadr('deleted-while-down')) === undefined &&
        (await cluster.admin.get(
          VeleroResources.downloadRequests,
          uuids['deleted-while-down']!,
          env.velero.namespace,
        )) === undefined,
      {
        what: 'NonAdminDownloadRequest deleted while the controller was down, and its DownloadRequest, gone',
      },
    );
  });

  it('waits for a backup that does not exist yet, and serves its log once it completed', async () => {
    await tenant.create(nadrType, {
      metadata: { name: 'early', namespace: ns },
      spec: { target: { kind: 'BackupResults', name: 'later' } },
    } as KubeObject);
    await eventually(async () => (await nadr('early'))?.status?.phase === 'BackingOff', {
      what: 'early waiting',
    });
    await tenant.create(nabType, {
      metadata: { name: 'later', namespace: ns },
      spec: { backupSpec: {} },
    } as KubeObject);
    const done = await eventually(
      async () => {
        const o = await nadr('early');
        return o?.status?.velero?.status?.downloadURL ? o : undefined;
      },
      { timeoutMs: veleroQueueMs, what: 'early processed once its backup completed' },
    );
    const results = JSON.parse(await fetchFile(done.status!.velero!.status!.downloadURL!)) as Record<
      string,
      unknown
    >;
    expect(Object.keys(results).sort()).toEqual(['errors', 'warnings']);
  });

  it('refuses the files of a backup that failed validation, saying there are none', async () => {
    // Velero refuses a resource that is both included and excluded, and writes no files for the backup.
    await tenant.create(nabType, {
      metadata: { name: 'contradiction', namespace: ns },
      spec: { backupSpec: { includedResources: ['configmaps'], excludedResources: ['configmaps'] } },
    } as KubeObject);
    const failed = await settledBackup(cluster, ns, 'contradiction');
    expect(failed.status?.veleroBackup?.status?.phase).toBe('FailedValidation');
    await tenant.create(nadrType, {
      metadata: { name: 'nothing', namespace: ns },
      spec: { target: { kind: 'BackupLog', name: 'contradiction' } },
    } as KubeObject);
    const refused = await eventually(
      async () => {
        const o = await nadr('nothing');
        return o?.status?.phase === 'BackingOff' ? o : undefined;
      },
      { what: 'nothing refused' },
    );
    expect(condition(refused, 'Accepted')).toMatchObject({
      status: 'False',
      reason: 'TargetFailedValidation',
    });
    expect(condition(refused, 'Accepted')?.message).toContain(
      'NonAdminBackup "contradiction" failed Velero\'s validation, so Velero wrote no files for it',
    );
    expect(refused.status?.velero).toBeUndefined();
  });

  it("says why a file Velero did not write is missing, and who can see the cause (the tenant's CLI)", async () => {
    // Velero's upload of a file fails when the store cannot take it (a full disk); the store then has no
    // such object. Made here by removing nightly's log from the real store, with Velero's own keys.
    const veleroBackup = nightly.status!.veleroBackup!.name!;
    const key = `backups/${veleroBackup}/${veleroBackup}-logs.gz`;
    expect((await env.velero.listObjects(key)).map((o) => o.key)).toEqual([key]);
    const removed = await env.velero.s3Fetch({ method: 'DELETE', path: `/${env.velero.bucket}/${key}` });
    expect(removed.ok, `DELETE ${key}: HTTP ${removed.status}`).toBe(true);
    expect(await env.velero.listObjects(key)).toEqual([]);
    await expect(downloadFile(tenant, ns, 'BackupLog', 'nightly')).rejects.toThrow(
      /BackupLog of nightly does not exist in object storage: Velero did not write it .*full or read-only store.*logs deploy\/velero/,
    );
  });
});
