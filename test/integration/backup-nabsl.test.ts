// NonAdminBackupStorageLocation end to end, as a tenant, through the real API server and a real Velero
// writing to a real S3 store (a second bucket of the test's S3 server, the tenant's own): the location
// becomes a Velero BSL with a copy of the tenant's Secret and a prefix under the namespace; a tenant's
// NonAdminBackup stored there restores with a NonAdminRestore; admin approval gates the BSL; deleting the
// location removes everything tenantkit made; escapes (credential files, other namespaces' Secrets,
// prefixes, default, enforced fields, other tenants' locations) are refused with what to fix.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listObjects } from '../../devenv/velero/s3-list.ts';
import { Annotations, Labels, managedLabels, NabslFinalizer } from '../../src/backup/model.ts';
import { nacObjectName } from '../../src/backup/velero/names.ts';
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  type NonAdminBackupStorageLocation,
  NonAdminBackupStorageLocationCrd,
  type NonAdminBackupStorageLocationRequest,
  NonAdminBackupStorageLocationRequestCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../../src/crds/backup.ts';
import { type BackupStorageLocation, VeleroResources } from '../../src/crds/velero.ts';
import { type KubeClient, PatchType } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { appendToTarGz } from '../fixtures/tar.ts';
import {
  type BackupEnvironment,
  condition,
  refusedObject,
  settledBackup,
  settledRestore,
  startBackupEnvironment,
  veleroQueueMs,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
const nabslType = NonAdminBackupStorageLocationCrd.type;
const requestType = NonAdminBackupStorageLocationRequestCrd.type;
const nabType = NonAdminBackupCrd.type;
const narType = NonAdminRestoreCrd.type;
/** The tenant's own bucket on the test's S3 server (the admin's default location uses another). */
const tenantBucket = 'tenant-bucket';

// Set by beforeAll: Velero and the capability, and two tenants with their namespaces (alice's "shop",
// mallory's "mallory").
let env: BackupEnvironment;
let ns: string;
let otherNs: string;
let tenant: KubeClient;
let other: KubeClient;

type Secret = KubeObject & { data?: Record<string, string> };
type Nabsl = NonAdminBackupStorageLocation;
type Request = NonAdminBackupStorageLocationRequest;

const b64 = (text: string) => Buffer.from(text).toString('base64');
const awsCredentials = (key: string) =>
  `[default]\naws_access_key_id = ${key}\naws_secret_access_key = tenant-secret-${key}\n`;

/** A location spec in the tenant's bucket, with the S3 server's settings. */
const locationSpec = (extra: { prefix?: string; secret?: string; config?: Record<string, string> } = {}) => ({
  provider: 'aws',
  objectStorage: { bucket: tenantBucket, ...(extra.prefix !== undefined ? { prefix: extra.prefix } : {}) },
  credential: { name: extra.secret ?? 's3-creds', key: 'cloud' },
  config: { region: 'minio', s3ForcePathStyle: 'true', s3Url: env.velero.s3Url, ...extra.config },
});

async function createLocation(name: string, spec: Record<string, unknown>, client = tenant, namespace = ns) {
  return client.create(nabslType, {
    metadata: { name, namespace },
    spec: { backupStorageLocationSpec: spec },
  } as KubeObject);
}

const nabsl = (name: string, namespace = ns) => cluster.admin.get<Nabsl>(nabslType, name, namespace);
const bsl = (name: string) =>
  cluster.admin.get<BackupStorageLocation>(
    VeleroResources.backupStorageLocations,
    name,
    env.velero.namespace,
  );
const secretCopy = (name: string) => cluster.admin.get<Secret>(Resources.secrets, name, env.velero.namespace);
const request = (name: string) => cluster.admin.get<Request>(requestType, name, env.velero.namespace);

/** The NABSL once its NACUUID is in status. */
async function uuidOf(name: string, namespace = ns): Promise<string> {
  return eventually(
    async () => (await nabsl(name, namespace))?.status?.veleroBackupStorageLocation?.nacuuid,
    {
      what: `NACUUID of NonAdminBackupStorageLocation ${namespace}/${name}`,
    },
  );
}

async function available(name: string): Promise<Nabsl> {
  return eventually(
    async () => {
      const o = await nabsl(name);
      if (o?.status?.veleroBackupStorageLocation?.status?.phase === 'Available') return o;
      throw new Error(`status ${JSON.stringify(o?.status)}`);
    },
    { timeoutMs: 60_000, what: `NonAdminBackupStorageLocation ${ns}/${name} Available` },
  );
}

/** The tenant's NonAdminRestore `name` of its backup in its own bucket (`to-own-bucket`), once completed. */
async function restoredFromOwnBucket(name: string): Promise<void> {
  await tenant.create(narType, {
    metadata: { name, namespace: ns },
    spec: { restoreSpec: { backupName: 'to-own-bucket' } },
  } as KubeObject);
  const restored = await settledRestore(cluster, ns, name);
  expect(restored.status?.veleroRestore?.status?.phase).toBe('Completed');
}

/** The NABSL once the controller refused it (phase BackingOff). */
const backingOff = (name: string) => refusedObject<Nabsl>(cluster, nabslType, ns, name);

/** The error a tenant's create gets back (or undefined when it was allowed). */
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: Error) => err.message,
  );

beforeAll(async () => {
  env = await startBackupEnvironment(cluster);
  // The S3 server creates only Velero's bucket at start; the tenant's own bucket is made like any bucket.
  const made = await env.velero.s3Fetch({ method: 'PUT', path: `/${tenantBucket}` });
  // The store answers only keys it was given: those the tenant's location uses in these tests.
  for (const key of ['first', 'second', 'messy', 'third', 'fourth'])
    await env.velero.addKey({ accessKeyId: key, secretAccessKey: `tenant-secret-${key}` });
  expect(made.ok, await made.text()).toBe(true);
  // Tenants administer their namespaces through the default admin role, nothing more.
  ({ namespace: ns, tenant } = await env.tenantNamespace('shop'));
  ({ namespace: otherNs, tenant: other } = await env.tenantNamespace('mallory', 'mallory'));
  await tenant.create(Resources.secrets, {
    metadata: { name: 's3-creds', namespace: ns },
    data: { cloud: b64(awsCredentials('first')) },
  } as KubeObject);
}, veleroStartTimeoutMs);

// While the controllers still run to lift their finalizers, so that no namespace stays Terminating.
afterAll(() => env?.stop());

describe('NonAdminBackupStorageLocation', { timeout: 2 * veleroQueueMs + 60_000 }, () => {
  let uuid: string;

  it('becomes an Available Velero BSL with a copy of the Secret and the prefix under the namespace', async () => {
    const started = Date.now();
    await createLocation('mine', locationSpec({ prefix: 'nightly' }));
    uuid = await uuidOf('mine');
    expect(uuid).toMatch(new RegExp(`^${ns}-mine-[0-9a-f-]{36}$`));
    const ready = await available('mine');
    console.log(`[figures] NABSL created -> Velero BSL Available: ${Date.now() - started} ms`);
    expect(ready.status?.phase).toBe('Created');
    expect(ready.metadata.finalizers).toContain(NabslFinalizer);
    expect(condition(ready, 'ClusterAdminApproved')).toMatchObject({ status: 'True' });
    expect(condition(ready, 'SecretSynced')).toMatchObject({ status: 'True' });

    const made = await bsl(uuid);
    expect(made?.spec).toMatchObject({
      provider: 'aws',
      default: false,
      objectStorage: { bucket: tenantBucket, prefix: `${ns}/nightly` },
      credential: { name: uuid, key: 'cloud' },
    });
    expect(made?.metadata.labels?.[Labels.nabslUuid]).toBe(uuid);
    expect(made?.metadata.annotations?.[Annotations.nabslNamespace]).toBe(ns);
    const copy = await secretCopy(uuid);
    expect(copy?.data).toEqual({ cloud: b64(awsCredentials('first')) });
    expect(copy?.metadata.labels?.[Labels.nabslUuid]).toBe(uuid);
    expect(copy?.metadata.annotations?.[Annotations.nabslName]).toBe('mine');
  });

  it("backs up into the tenant's bucket under the forced prefix, and restores from there", async () => {
    await tenant.create(Resources.configMaps, {
      metadata: { name: 'settings', namespace: ns },
      data: { color: 'blue' },
    } as KubeObject);
    await tenant.create(nabType, {
      metadata: { name: 'to-own-bucket', namespace: ns },
      spec: { backupSpec: { storageLocation: 'mine' } },
    } as KubeObject);
    const done = await settledBackup(cluster, ns, 'to-own-bucket');
    expect(done.status?.veleroBackup?.status?.phase).toBe('Completed');
    const name = done.status!.veleroBackup!.name!;
    expect(done.status?.veleroBackup?.spec?.storageLocation).toBe(uuid);
    const stored = await listObjects(
      env.velero.s3Url,
      env.velero.credentials,
      tenantBucket,
      `${ns}/nightly/backups/${name}/`,
    );
    expect(stored.length).toBeGreaterThan(0);
    // Nothing of it in the admin's bucket.
    expect(await env.velero.listObjects(`backups/${name}/`)).toEqual([]);

    await tenant.delete(Resources.configMaps, 'settings', ns);
    await restoredFromOwnBucket('from-own-bucket');
    const back = await cluster.admin.get<KubeObject & { data?: Record<string, string> }>(
      Resources.configMaps,
      'settings',
      ns,
    );
    expect(back?.data).toEqual({ color: 'blue' });
  });

  it('restores from a forged bucket only what the tenant could create itself', async () => {
    // The tenant writes its own bucket: it adds to the backup's contents an admin-only ResourceQuota and
    // LimitRange, and a Secret it may create anyway, then restores that backup.
    const name = (await settledBackup(cluster, ns, 'to-own-bucket')).status!.veleroBackup!.name!;
    const key = `/${tenantBucket}/${ns}/nightly/backups/${name}/${name}.tar.gz`;
    const original = Buffer.from(
      await (await env.velero.s3Fetch({ method: 'GET', path: key })).arrayBuffer(),
    );
    const item = (kind: string, itemName: string, rest: object) =>
      JSON.stringify({ apiVersion: 'v1', kind, metadata: { name: itemName, namespace: ns }, ...rest });
    const forged: Record<string, string> = {};
    for (const [resource, kind, itemName, rest] of [
      ['resourcequotas', 'ResourceQuota', 'forged-quota', { spec: { hard: { pods: '1000' } } }],
      [
        'limitranges',
        'LimitRange',
        'forged-limits',
        { spec: { limits: [{ type: 'Container', max: { cpu: '64' } }] } },
      ],
      ['secrets', 'Secret', 'forged-secret', { stringData: { a: 'b' } }],
    ] as const) {
      for (const dir of [`resources/${resource}`, `resources/${resource}/v1-preferredversion`]) {
        forged[`${dir}/namespaces/${ns}/${itemName}.json`] = item(kind, itemName, rest);
      }
    }
    const put = await env.velero.s3Fetch({ method: 'PUT', path: key, body: appendToTarGz(original, forged) });
    expect(put.ok, await put.text()).toBe(true);

    await restoredFromOwnBucket('from-forged-bucket');
    expect(await cluster.admin.get(Resources.resourceQuotas, 'forged-quota', ns)).toBeUndefined();
    expect(await cluster.admin.get(Resources.limitRanges, 'forged-limits', ns)).toBeUndefined();
    expect(await cluster.admin.get(Resources.secrets, 'forged-secret', ns)).toBeDefined();
    const reported = await eventually(
      async () =>
        (await cluster.admin.get<NonAdminRestore>(narType, 'from-forged-bucket', ns))?.status?.refusedItems,
      { what: 'refusals reported' },
    );
    const byName = new Map(reported.items?.map((i) => [`${i.kind}/${i.name}`, i]));
    expect(byName.get('ResourceQuota/forged-quota')).toMatchObject({ verb: 'create', reason: 'Forbidden' });
    expect(byName.get('LimitRange/forged-limits')).toMatchObject({ verb: 'create', reason: 'Forbidden' });
    expect(byName.has('Secret/forged-secret')).toBe(false);
  });

  it("keeps the Secret copy equal to the tenant's Secret", async () => {
    await tenant.patch(Resources.secrets, 's3-creds', ns, { data: { cloud: b64(awsCredentials('second')) } });
    // Secrets are not watched (no list/watch of Secrets for tenantkit): a change of the NABSL, or the
    // periodic re-read, brings the new content.
    await tenant.patch(nabslType, 'mine', ns, { metadata: { annotations: { resync: String(Date.now()) } } });
    await eventually(async () => (await secretCopy(uuid))?.data?.cloud === b64(awsCredentials('second')), {
      what: 'Secret copy updated',
    });
  });

  it('gives Velero only a file tenantkit writes: the static keys of the profile, never the tenant bytes', async () => {
    // Valid, but written the ways an INI reader may take differently: BOM, CRLF, ":" separators,
    // comments, other settings and profiles. Velero gets the canonical file only.
    const messy =
      '\uFEFF# my keys\r\n[default]\r\nregion = eu-west-1\r\naws_access_key_id: messy\r\n; the secret\r\naws_secret_access_key = tenant-secret-messy\r\n[other]\r\nrole_arn = arn:aws:iam::1:role/x\r\n';
    await tenant.patch(Resources.secrets, 's3-creds', ns, { data: { cloud: b64(messy) } });
    await tenant.patch(nabslType, 'mine', ns, { metadata: { annotations: { resync: String(Date.now()) } } });
    await eventually(async () => (await secretCopy(uuid))?.data?.cloud === b64(awsCredentials('messy')), {
      what: 'canonical Secret copy',
    });
    expect(Object.keys((await secretCopy(uuid))?.data ?? {})).toEqual(['cloud']);
    expect((await bsl(uuid))?.spec.config).toMatchObject({ profile: 'default' });

    // The file that made the AWS SDK run a script inside Velero's plugin (and, without
    // credential_process, fall back to Velero's own identity): refused, and Velero stops using the copy.
    const exploit =
      '[default]\naws_access_key_id = #x\naws_secret_access_key = #y\ncredential_process: /tmp/pwn.sh';
    await tenant.patch(Resources.secrets, 's3-creds', ns, { data: { cloud: b64(exploit) } });
    await tenant.patch(nabslType, 'mine', ns, { metadata: { annotations: { resync: String(Date.now()) } } });
    const refused = await backingOff('mine');
    const message = condition(refused, 'SecretSynced')?.message ?? '';
    expect(message).toContain("sets credential_process, which runs a command on Velero's machine");
    expect(message).toContain('aws_access_key_id of profile [default] (line 2) contains "#" or ";"');
    await eventually(async () => (await bsl(uuid)) === undefined && (await secretCopy(uuid)) === undefined, {
      what: 'BSL and Secret copy removed',
    });
    await tenant.patch(Resources.secrets, 's3-creds', ns, { data: { cloud: b64(awsCredentials('second')) } });
    await tenant.patch(nabslType, 'mine', ns, { metadata: { annotations: { resync: String(Date.now()) } } });
    await available('mine');
    expect((await secretCopy(uuid))?.data).toEqual({ cloud: b64(awsCredentials('second')) });
  });

  it('stops using the location when its Secret turns bad, and resumes when it is fixed', async () => {
    await tenant.patch(Resources.secrets, 's3-creds', ns, {
      data: {
        cloud: b64(`${awsCredentials('third')}credential_process = /bin/sh -c 'cat /credentials/cloud'\n`),
      },
    });
    await tenant.patch(nabslType, 'mine', ns, { metadata: { annotations: { resync: String(Date.now()) } } });
    const refused = await backingOff('mine');
    expect(condition(refused, 'SecretSynced')?.message).toContain(
      "sets credential_process, which runs a command on Velero's machine",
    );
    await eventually(async () => (await bsl(uuid)) === undefined && (await secretCopy(uuid)) === undefined, {
      what: 'BSL and Secret copy removed',
    });

    await tenant.patch(Resources.secrets, 's3-creds', ns, { data: { cloud: b64(awsCredentials('fourth')) } });
    await tenant.patch(nabslType, 'mine', ns, { metadata: { annotations: { resync: String(Date.now()) } } });
    await available('mine');
    expect((await secretCopy(uuid))?.data?.cloud).toBe(b64(awsCredentials('fourth')));
  });

  it('finishes the work of a controller killed between steps, without duplicates', async () => {
    await env.running.stopControllers();
    await createLocation('resumed', locationSpec({ prefix: 'resumed' }));
    // As if a previous controller wrote the NACUUID and copied an older Secret, then died.
    const id = nacObjectName(ns, 'resumed');
    await cluster.admin.patch(
      nabslType,
      'resumed',
      ns,
      { status: { veleroBackupStorageLocation: { nacuuid: id, name: id, namespace: env.velero.namespace } } },
      PatchType.merge,
      'status',
    );
    await cluster.admin.create(Resources.secrets, {
      metadata: {
        name: id,
        namespace: env.velero.namespace,
        labels: { ...managedLabels, [Labels.nabslUuid]: id },
        annotations: { [Annotations.nabslName]: 'resumed', [Annotations.nabslNamespace]: ns },
      },
      data: { cloud: b64(awsCredentials('stale')) },
    } as KubeObject);
    env.running.startControllers();
    const done = await available('resumed');
    expect(done.status?.veleroBackupStorageLocation?.nacuuid).toBe(id);
    expect((await secretCopy(id))?.data?.cloud).toBe(b64(awsCredentials('fourth')));
    const made = await cluster.admin.list<BackupStorageLocation>(VeleroResources.backupStorageLocations, {
      namespace: env.velero.namespace,
      labelSelector: `${Labels.nabslUuid}=${id}`,
    });
    expect(made.items.map((b) => b.metadata.name)).toEqual([id]);
    const all = await cluster.admin.list<BackupStorageLocation>(VeleroResources.backupStorageLocations, {
      namespace: env.velero.namespace,
    });
    const forResumed = all.items.filter((b) => b.metadata.annotations?.[Annotations.nabslName] === 'resumed');
    expect(forResumed).toHaveLength(1);
  });

  it('writes the NACUUID once: a step 1 on a stale cache fails and is retried, not written twice', async () => {
    // As if an earlier reconcile wrote a NACUUID that this one's cache has not seen yet: injected
    // between the controller's read and its own step-1 write.
    const earlier = nacObjectName(ns, 'raced');
    const client = env.running.controllerClient;
    const original = client.request.bind(client);
    let injected = false;
    client.request = (async (method, path, params) => {
      const body = params?.body as { status?: Nabsl['status'] } | undefined;
      if (
        !injected &&
        method === 'PATCH' &&
        path.endsWith(`/namespaces/${ns}/nonadminbackupstoragelocations/raced/status`) &&
        body?.status?.veleroBackupStorageLocation?.nacuuid
      ) {
        injected = true;
        await cluster.admin.patch(
          nabslType,
          'raced',
          ns,
          {
            status: {
              veleroBackupStorageLocation: {
                nacuuid: earlier,
                name: earlier,
                namespace: env.velero.namespace,
              },
            },
          },
          PatchType.merge,
          'status',
        );
      }
      return original(method, path, params);
    }) as typeof client.request;
    try {
      await createLocation('raced', locationSpec({ prefix: 'raced' }));
      await eventually(async () => injected, { what: 'step 1 write of raced' });
      const done = await eventually(
        async () => {
          const o = await nabsl('raced');
          return o?.status?.phase === 'Created' ? o : undefined;
        },
        { what: 'raced Created' },
      );
      expect(done.status?.veleroBackupStorageLocation?.nacuuid).toBe(earlier);
    } finally {
      client.request = original;
    }
    const all = await cluster.admin.list<BackupStorageLocation>(VeleroResources.backupStorageLocations, {
      namespace: env.velero.namespace,
    });
    const forRaced = all.items.filter(
      (b) =>
        b.metadata.annotations?.[Annotations.nabslName] === 'raced' &&
        b.metadata.annotations?.[Annotations.nabslNamespace] === ns,
    );
    expect(forRaced.map((b) => b.metadata.name)).toEqual([earlier]);
    await tenant.delete(nabslType, 'raced', ns);
    await eventually(async () => (await nabsl('raced')) === undefined && (await bsl(earlier)) === undefined, {
      what: 'raced gone',
    });
  });

  it("never touches Velero's or anyone's objects that a forged status names, and says why", async () => {
    // A forged status (e.g. restored through velero.io/restore-status), set here by the admin.
    await env.running.stopControllers();
    // Velero's own credentials Secret (the test Velero's; made here if it has none).
    const veleroSecret = 'cloud-credentials';
    const admin = cluster.admin;
    const ownSecret = !(await admin.get<Secret>(Resources.secrets, veleroSecret, env.velero.namespace));
    if (ownSecret) {
      await admin.create(Resources.secrets, {
        metadata: { name: veleroSecret, namespace: env.velero.namespace },
        data: { cloud: b64('[default]\naws_access_key_id = velero\naws_secret_access_key = velero-own\n') },
      } as KubeObject);
    }
    // Under a NACUUID of the right shape: a Secret and a BSL that tenantkit did not make.
    const taken = nacObjectName(ns, 'forged-taken');
    await admin.create(Resources.secrets, {
      metadata: { name: taken, namespace: env.velero.namespace, labels: { [Labels.nabslUuid]: taken } },
      data: { cloud: b64('admin data') },
    } as KubeObject);
    await admin.create(VeleroResources.backupStorageLocations, {
      metadata: { name: taken, namespace: env.velero.namespace },
      spec: {
        provider: 'aws',
        objectStorage: { bucket: tenantBucket, prefix: 'admin' },
        accessMode: 'ReadOnly',
      },
    } as KubeObject);
    // Another tenant's BSL, as tenantkit made it (labels and all), whose NACUUID this location's status
    // claims: same shape for this location, but its origin names the other one. (Its location names it
    // in status too, so that garbage collection keeps it.)
    const others = nacObjectName(ns, 'forged-others');
    await createLocation('theirs', locationSpec({ prefix: 'theirs' }), other, otherNs);
    await admin.patch(
      nabslType,
      'theirs',
      otherNs,
      {
        status: {
          veleroBackupStorageLocation: { nacuuid: others, name: others, namespace: env.velero.namespace },
        },
      },
      PatchType.merge,
      'status',
    );
    await admin.create(VeleroResources.backupStorageLocations, {
      metadata: {
        name: others,
        namespace: env.velero.namespace,
        labels: { ...managedLabels, [Labels.nabslUuid]: others },
        annotations: { [Annotations.nabslNamespace]: otherNs, [Annotations.nabslName]: 'theirs' },
      },
      spec: {
        provider: 'aws',
        objectStorage: { bucket: tenantBucket, prefix: `${otherNs}/theirs` },
        accessMode: 'ReadOnly',
      },
    } as KubeObject);
    const forged: Record<string, string> = {
      'forged-secret': veleroSecret,
      'forged-bsl': env.velero.storageLocation,
      'forged-taken': taken,
      'forged-others': others,
    };
    for (const [name, nacuuid] of Object.entries(forged)) {
      await createLocation(name, locationSpec({ prefix: name }));
      await admin.patch(
        nabslType,
        name,
        ns,
        // Even the namespace is forged: tenantkit uses its policy's.
        { status: { veleroBackupStorageLocation: { nacuuid, name: nacuuid, namespace: 'kube-system' } } },
        PatchType.merge,
        'status',
      );
    }
    const snapshot = async () => {
      const secrets = await Promise.all(
        [veleroSecret, taken].map((n) => admin.get<Secret>(Resources.secrets, n, env.velero.namespace)),
      );
      const bsls = await Promise.all([env.velero.storageLocation, taken, others].map((n) => bsl(n)));
      return {
        secrets: secrets.map((o) => [
          o?.metadata.uid,
          o?.metadata.resourceVersion,
          o?.metadata.labels,
          o?.data,
        ]),
        // Velero itself writes BSL status: spec, labels and identity only.
        bsls: bsls.map((o) => [o?.metadata.uid, o?.metadata.labels, o?.spec]),
      };
    };
    const before = await snapshot();
    expect(before.secrets.every(([uid]) => uid !== undefined)).toBe(true);
    expect(before.bsls.every(([uid]) => uid !== undefined)).toBe(true);
    env.running.startControllers();
    // Once the controller has judged every location (whatever it decided), nothing was touched.
    await eventually(
      async () => {
        const phases = await Promise.all(
          Object.keys(forged).map(async (n) => (await nabsl(n))?.status?.phase),
        );
        return phases.every((p) => p === 'BackingOff' || p === 'Created');
      },
      { what: 'forged locations judged' },
    );
    expect(await snapshot()).toEqual(before);

    for (const name of ['forged-secret', 'forged-bsl']) {
      const refused = await backingOff(name);
      expect(condition(refused, 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidNACUUID' });
      expect(condition(refused, 'Accepted')?.message).toContain(
        `status.veleroBackupStorageLocation.nacuuid "${forged[name]}" was not written by tenantkit for this location`,
      );
    }
    const taken1 = await backingOff('forged-taken');
    expect(condition(taken1, 'SecretSynced')).toMatchObject({ status: 'False', reason: 'ForeignObject' });
    expect(condition(taken1, 'SecretSynced')?.message).toContain(
      `Secret ${env.velero.namespace}/${taken} exists but tenantkit did not make it for this location`,
    );
    expect(taken1.status?.veleroBackupStorageLocation?.namespace).toBe(env.velero.namespace);
    const others1 = await backingOff('forged-others');
    expect(condition(others1, 'BackupStorageLocationSynced')).toMatchObject({
      status: 'False',
      reason: 'ForeignObject',
    });
    expect(condition(others1, 'BackupStorageLocationSynced')?.message).toContain(
      `BackupStorageLocation ${env.velero.namespace}/${others} exists but tenantkit did not make it for this location`,
    );
    // The Secret copy it made on the way is removed again: nothing of it may be used with that BSL.
    await eventually(async () => (await secretCopy(others)) === undefined, { what: 'copy removed' });
    expect(await snapshot()).toEqual(before);

    // Deleting the locations leaves those objects alone too.
    for (const name of Object.keys(forged)) await tenant.delete(nabslType, name, ns);
    await eventually(
      async () => (await Promise.all(Object.keys(forged).map((n) => nabsl(n)))).every((o) => o === undefined),
      { what: 'forged locations deleted' },
    );
    expect(await snapshot()).toEqual(before);
    await admin.delete(Resources.secrets, taken, env.velero.namespace);
    if (ownSecret) await admin.delete(Resources.secrets, veleroSecret, env.velero.namespace);
    for (const n of [taken, others])
      await admin.delete(VeleroResources.backupStorageLocations, n, env.velero.namespace);
    await other.delete(nabslType, 'theirs', otherNs);
  });

  it('refuses a NonAdminBackup naming a location that is not of its namespace', async () => {
    // Another tenant names alice's location by its name, and by its Velero name.
    for (const location of ['mine', uuid]) {
      const message = await refusal(
        other.create(nabType, {
          metadata: { name: cluster.unique('steal'), namespace: otherNs },
          spec: { backupSpec: { storageLocation: location } },
        } as KubeObject),
      );
      expect(message).toContain(
        `spec.backupSpec.storageLocation "${location}" is not a NonAdminBackupStorageLocation of namespace ${otherNs}`,
      );
    }
    // Velero's default location, by its Velero name, is not a tenant's to name either.
    expect(
      await refusal(
        tenant.create(nabType, {
          metadata: { name: 'to-default', namespace: ns },
          spec: { backupSpec: { storageLocation: env.velero.storageLocation } },
        } as KubeObject),
      ),
    ).toContain('is not a NonAdminBackupStorageLocation of namespace');
  });

  it("keeps tenants out of each other's locations and out of Velero's namespace", async () => {
    await expect(other.get(nabslType, 'mine', ns)).rejects.toThrow(/forbidden/i);
    await expect(other.list(nabslType, { namespace: ns })).rejects.toThrow(/forbidden/i);
    await expect(
      other.patch(nabslType, 'mine', ns, { spec: { backupStorageLocationSpec: { default: true } } }),
    ).rejects.toThrow(/forbidden/i);
    await expect(tenant.get(Resources.secrets, uuid, env.velero.namespace)).rejects.toThrow(/forbidden/i);
    await expect(tenant.list(requestType, { namespace: env.velero.namespace })).rejects.toThrow(/forbidden/i);
    await expect(
      tenant.get(VeleroResources.backupStorageLocations, uuid, env.velero.namespace),
    ).rejects.toThrow(/forbidden/i);
  });

  it('refuses prefix escapes, default: true, file-reading settings and enforced overrides at admission', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [locationSpec({ prefix: `../${otherNs}` }), 'may not contain "." or ".." segments'],
      [locationSpec({ prefix: '/abs' }), 'may not start with "/"'],
      [{ ...locationSpec(), default: true }, 'default may not be true'],
      [
        locationSpec({ config: { credentialsFile: '/credentials/cloud' } }),
        "config.credentialsFile is not allowed: it reads a file on Velero's machine",
      ],
      [locationSpec({ config: { enableSharedConfig: 'true' } }), 'config.enableSharedConfig is not allowed'],
      [{ ...locationSpec(), credential: undefined }, 'credential is required'],
      // Own keys only: Object.prototype members are not settings.
      [
        locationSpec({ config: JSON.parse('{"constructor": "x"}') }),
        'config.constructor is not a setting tenants may use',
      ],
      [locationSpec({ config: { toString: 'x' } }), 'config.toString is not a setting tenants may use'],
    ];
    for (const [spec, expected] of cases) {
      const name = cluster.unique('escape');
      expect(await refusal(createLocation(name, spec)), expected).toContain(expected);
      expect(await nabsl(name)).toBeUndefined();
    }
    // An admin pins the endpoint too: a tenant's s3Url can point anywhere Velero can reach.
    await env.setPolicy({
      enforceBSLSpec: { config: { region: 'minio', s3ForcePathStyle: 'true', s3Url: env.velero.s3Url } },
    });
    try {
      const message = await eventually(() =>
        refusal(
          createLocation(cluster.unique('override'), locationSpec({ config: { region: 'us-east-1' } })),
        ),
      );
      expect(message).toContain(
        'NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.region field value is enforced by admin user, can not override it',
      );
      expect(
        await refusal(
          createLocation(
            cluster.unique('endpoint'),
            locationSpec({ config: { s3Url: 'http://169.254.169.254' } }),
          ),
        ),
      ).toContain(
        'NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.s3Url field value is enforced by admin user, can not override it',
      );
    } finally {
      await env.setPolicy({});
    }
  });

  it('refuses credentials that point the AWS SDK at files of Velero, and Secrets of other namespaces', async () => {
    await tenant.create(Resources.secrets, {
      metadata: { name: 'web-identity', namespace: ns },
      data: {
        cloud: b64(
          '[default]\nrole_arn = arn:aws:iam::123456789012:role/velero\nweb_identity_token_file = /var/run/secrets/kubernetes.io/serviceaccount/token\n',
        ),
      },
    } as KubeObject);
    await createLocation('web-identity', locationSpec({ secret: 'web-identity' }));
    const refused = await backingOff('web-identity');
    expect(condition(refused, 'SecretSynced')).toMatchObject({
      status: 'False',
      reason: 'InvalidCredential',
    });
    expect(condition(refused, 'SecretSynced')?.message).toContain(
      "sets web_identity_token_file, which reads a token file on Velero's machine",
    );

    // A Secret that exists only in another tenant's namespace: a location reads its own namespace only.
    await other.create(Resources.secrets, {
      metadata: { name: 'mallory-creds', namespace: otherNs },
      data: { cloud: b64(awsCredentials('mallory')) },
    } as KubeObject);
    await createLocation('borrowed', locationSpec({ secret: 'mallory-creds' }));
    const borrowed = await backingOff('borrowed');
    expect(condition(borrowed, 'SecretSynced')?.message).toContain(
      `Secret mallory-creds does not exist in namespace ${ns}`,
    );

    for (const name of ['web-identity', 'borrowed']) {
      const id = await uuidOf(name);
      expect(await bsl(id)).toBeUndefined();
      expect(await secretCopy(id)).toBeUndefined();
    }
  });

  it('checks again in the controller: a policy changed after creation is applied, or takes the location out', async () => {
    // A field the admin enforces later is filled into the existing BSL.
    await env.setPolicy({ enforceBSLSpec: { accessMode: 'ReadOnly' } });
    await eventually(async () => (await bsl(uuid))?.spec.accessMode === 'ReadOnly', {
      what: 'enforced accessMode filled in',
    });
    // A value the tenant's location contradicts: refused, and Velero stops using it.
    await env.setPolicy({ enforceBSLSpec: { config: { region: 'elsewhere' } } });
    const refused = await backingOff('mine');
    expect(condition(refused, 'Accepted')).toMatchObject({
      status: 'False',
      reason: 'InvalidStorageLocationSpec',
    });
    expect(condition(refused, 'Accepted')?.message).toContain(
      'NonAdminBackupStorageLocation spec.backupStorageLocationSpec.config.region field value is enforced by admin user, can not override it',
    );
    await eventually(async () => (await bsl(uuid)) === undefined && (await secretCopy(uuid)) === undefined, {
      what: 'BSL and Secret copy removed',
    });
    await env.setPolicy({});
    await available('mine');
  });
});

describe('NonAdminBackupStorageLocation approval', { timeout: veleroQueueMs + 60_000 }, () => {
  let uuid: string;
  const decide = (name: string, approvalDecision: string) =>
    cluster.admin.patch(requestType, name, env.velero.namespace, { spec: { approvalDecision } });

  it('waits for an admin: a pending request in Velero namespace, no BSL, and NonAdminBackups wait', async () => {
    await env.setPolicy({ requireApprovalForBSL: true });
    await eventually(
      async () => {
        await createLocation('gated', locationSpec({ prefix: 'gated' }));
        return true;
      },
      { what: 'location created' },
    );
    uuid = await uuidOf('gated');
    const pending = await eventually(
      async () => {
        const r = await request(uuid);
        return r?.status?.nonAdminBackupStorageLocation ? r : undefined;
      },
      { what: 'approval request' },
    );
    expect(pending.spec?.approvalDecision).toBe('pending');
    expect(pending.status?.phase).toBe('Pending');
    expect(pending.status?.nonAdminBackupStorageLocation).toMatchObject({
      nacuuid: uuid,
      name: 'gated',
      namespace: ns,
      requestedSpec: { objectStorage: { bucket: tenantBucket, prefix: `${ns}/gated` }, default: false },
    });
    const waiting = await eventually(async () => {
      const o = await nabsl('gated');
      return condition(o, 'ClusterAdminApproved') ? o : undefined;
    });
    expect(condition(waiting, 'ClusterAdminApproved')).toMatchObject({
      status: 'Unknown',
      reason: 'Pending',
    });
    expect(waiting.status?.phase).toBe('New');
    expect(await bsl(uuid)).toBeUndefined();
    expect(await secretCopy(uuid)).toBeUndefined();

    await tenant.create(nabType, {
      metadata: { name: 'to-gated', namespace: ns },
      spec: { backupSpec: { storageLocation: 'gated' } },
    } as KubeObject);
    const held = await eventually(async () => {
      const o = await cluster.admin.get<NonAdminBackup>(nabType, 'to-gated', ns);
      return o?.status?.conditions?.find((c) => c.reason === 'StorageLocationNotReady') ? o : undefined;
    });
    expect(condition(held, 'Queued')?.message).toContain('NonAdminBackupStorageLocation gated is not ready');
  });

  it('creates the BSL once approved, and the waiting NonAdminBackup goes to it', async () => {
    await decide(uuid, 'approve');
    const approved = await eventually(async () => {
      const o = await nabsl('gated');
      return condition(o, 'ClusterAdminApproved')?.status === 'True' ? o : undefined;
    });
    expect(approved.status?.phase).toBe('Created');
    expect((await bsl(uuid))?.spec.objectStorage.prefix).toBe(`${ns}/gated`);
    expect((await request(uuid))?.status?.phase).toBe('Approved');
    const nab = await eventually(async () => {
      const o = await cluster.admin.get<NonAdminBackup>(nabType, 'to-gated', ns);
      return o?.status?.veleroBackup?.spec ? o : undefined;
    });
    expect(nab.status?.veleroBackup?.spec?.storageLocation).toBe(uuid);
  });

  it('asks again when the tenant changes an approved location, and the BSL waits for it', async () => {
    await tenant.patch(nabslType, 'gated', ns, {
      spec: { backupStorageLocationSpec: { objectStorage: { bucket: 'someone-elses', prefix: 'gated' } } },
    });
    const again = await eventually(async () => {
      const r = await request(uuid);
      return r?.status?.nonAdminBackupStorageLocation?.requestedSpec.objectStorage.bucket === 'someone-elses'
        ? r
        : undefined;
    });
    expect(again.spec?.approvalDecision).toBe('pending');
    expect(again.status?.phase).toBe('Pending');
    await eventually(async () => (await bsl(uuid)) === undefined, {
      what: 'BSL removed until approved again',
    });
    // The BSL goes first, then the status says why: wait for the status, not just the removal.
    await eventually(
      async () => condition(await nabsl('gated'), 'ClusterAdminApproved')?.status === 'Unknown',
      { what: 'ClusterAdminApproved=Unknown' },
    );
  });

  it('removes the BSL and the Secret copy when the admin rejects, and tells the tenant', async () => {
    await tenant.patch(nabslType, 'gated', ns, {
      spec: { backupStorageLocationSpec: { objectStorage: { bucket: tenantBucket, prefix: 'gated' } } },
    });
    await eventually(async () => {
      const r = await request(uuid);
      return r?.status?.nonAdminBackupStorageLocation?.requestedSpec.objectStorage.bucket === tenantBucket;
    });
    await decide(uuid, 'approve');
    await eventually(async () => (await bsl(uuid)) !== undefined && (await secretCopy(uuid)) !== undefined, {
      what: 'BSL and Secret copy back',
    });
    // Revoked: approve, then reject.
    await decide(uuid, 'reject');
    const rejected = await backingOff('gated');
    expect(condition(rejected, 'ClusterAdminApproved')).toMatchObject({
      status: 'False',
      reason: 'Rejected',
    });
    expect(condition(rejected, 'ClusterAdminApproved')?.message).toContain(
      'a cluster admin rejected this location',
    );
    await eventually(async () => (await bsl(uuid)) === undefined && (await secretCopy(uuid)) === undefined, {
      what: 'BSL and Secret copy gone',
    });
    expect((await request(uuid))?.status?.phase).toBe('Rejected');
  });

  it('removes the BSL, the Secret copy and the request when the tenant deletes the location', async () => {
    await decide(uuid, 'approve');
    await eventually(async () => (await bsl(uuid)) !== undefined, { what: 'BSL back' });
    await tenant.delete(nabslType, 'gated', ns);
    await eventually(
      async () =>
        (await nabsl('gated')) === undefined &&
        (await bsl(uuid)) === undefined &&
        (await secretCopy(uuid)) === undefined &&
        (await request(uuid)) === undefined,
      { what: 'NABSL, BSL, Secret copy and request gone' },
    );
    await env.setPolicy({});
  });
});
