// The shared setup of the backup capability's integration tests: a real Velero, the capability running
// under its own identities, the admin's NonAdminBackupConfig, and tenants (users with the default `admin`
// role in their namespace) who act through the real API server. Also the waits those tests repeat: a
// NonAdminBackup or NonAdminRestore until Velero finished it, outlasting Velero's queue recheck.
import { randomBytes } from 'node:crypto';
import type { VeleroOptions } from '../../devenv/velero/launch.ts';
import { veleroPodLog } from '../../devenv/velero/pod.ts';
import { credentialsFile } from '../../devenv/velero/s3-sign.ts';
import { backup } from '../../src/backup/index.ts';
import type { Capability } from '../../src/capability.ts';
import {
  type NonAdminBackup,
  type NonAdminBackupConfig,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
  NonAdminBackupStorageLocationCrd,
  NonAdminBackupStorageLocationRequestCrd,
  NonAdminDownloadRequestCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
  NonAdminScheduleCrd,
} from '../../src/crds/backup.ts';
import { type Backup, finishedPhases, type Restore, VeleroResources } from '../../src/crds/velero.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources, type ResourceType, resourcePath } from '../../src/kube/resources.ts';
import { eventually, type TestCluster } from './cluster.ts';
import { type RunningCapability, runCapability } from './components.ts';
import { startTestVelero, type TestVelero, testVeleroIn } from './velero.ts';

/**
 * How long a wait on Velero may take: Velero v1.18 now and then leaves a new Backup Queued until its
 * queue's one-minute recheck (its backup_queue_controller: the watch that should dequeue the next Backup
 * when one finishes fires while the finished one still counts as running), and a wait must outlast that,
 * sometimes more than once in a row (seen: a first backup still waiting after 150 s in a full run).
 */
export const veleroQueueMs = 240_000;

/**
 * Waits until the NonAdminBackup `name` is gone after its `spec.deleteBackup` (Velero deleted its data and
 * Backup). Velero v1.18 may keep a finished backup counted as running (a race between its backup and
 * finalizer controllers, seen on a busy machine) and refuse its deletion until it restarts: the NAB then
 * says so (reason VeleroHoldsBackupAsRunning). tenantkit first hands the Backup back to Velero's finalizer,
 * which ends it; where it cannot, the NAB asks for a restart and this does what the admin would, once;
 * tenantkit's next request, within 30 s, goes through. A timeout says where the deletion stands, as
 * the NAB's status and as Velero tell it (its DeleteBackupRequests and its log lines naming the backup).
 */
export async function nabDeletedWithData(
  cluster: TestCluster,
  velero: TestVelero,
  name: string,
  namespace: string,
): Promise<void> {
  let backupName: string | undefined;
  let restarted = false;
  try {
    await eventually(
      async () => {
        const left = await cluster.admin.get<NonAdminBackup>(NonAdminBackupCrd.type, name, namespace);
        if (!left) return true;
        backupName = left.status?.veleroBackup?.name ?? backupName;
        const deleting = left.status?.conditions?.find((c) => c.type === 'Deleting');
        const handedBack = deleting?.message?.includes("handed it back to Velero's finalizer");
        if (deleting?.reason === 'VeleroHoldsBackupAsRunning' && !handedBack && !restarted) {
          if (!deleting.message?.includes('rollout restart deployment/velero')) {
            throw new Error(`the NAB does not say what ends it: ${deleting.message}`);
          }
          restarted = true;
          await velero.restartServer();
        }
        throw new Error(`still there, status ${JSON.stringify(left.status)}`);
      },
      { timeoutMs: veleroQueueMs, what: `NonAdminBackup ${namespace}/${name} and its data gone` },
    );
  } catch (err) {
    const requests = backupName
      ? (
          await cluster.admin.list<KubeObject & { status?: unknown }>(VeleroResources.deleteBackupRequests, {
            namespace: velero.namespace,
            labelSelector: `velero.io/backup-name=${backupName}`,
          })
        ).items.map((r) => `${r.metadata.name}: ${JSON.stringify(r.status)}`)
      : [];
    const log = backupName ? await velero.logLines(backupName) : [];
    throw new Error(
      `${(err as Error).message}\nVelero's DeleteBackupRequests for ${backupName ?? '(no backup named)'}: ${requests.join('; ') || 'none'}\nVelero's log lines naming it:\n${log.join('\n')}`,
    );
  }
}

/** The Helm value that names Velero's namespace, for the capability's rules there. */
export const veleroNamespaceValue = 'backup.veleroNamespace';

/** spec.nonAdmin of the NonAdminBackupConfig. */
export type NonAdminPolicy = NonNullable<NonAdminBackupConfig['spec']['nonAdmin']>;

const apply = { fieldManager: 'tenantkit-backup-test', force: true };

/**
 * The tenant kinds in the order stop() deletes them: what makes backups or reads them before the
 * backups, the storage locations they may live in last.
 */
const tenantKinds: ResourceType[] = [
  NonAdminScheduleCrd.type,
  NonAdminDownloadRequestCrd.type,
  NonAdminRestoreCrd.type,
  NonAdminBackupCrd.type,
  NonAdminBackupStorageLocationCrd.type,
];

/** Applies the admin's NonAdminBackupConfig "cluster" with `nonAdmin` (enabled unless it says otherwise). */
export async function applyBackupPolicy(cluster: TestCluster, nonAdmin: NonAdminPolicy): Promise<void> {
  await cluster.admin.apply(
    NonAdminBackupConfigCrd.type,
    {
      metadata: { name: 'cluster' },
      spec: { nonAdmin: { enable: true, ...nonAdmin } },
    } as NonAdminBackupConfig,
    apply,
  );
}

/**
 * Installs the ClusterRoles the chart gives tenants and waits until kube-controller-manager aggregated
 * them into `admin`, so that a namespace's admins may use every tenant kind.
 */
export async function installTenantRoles(cluster: TestCluster): Promise<void> {
  for (const role of backup.userClusterRoles!())
    await cluster.admin.apply(Resources.clusterRoles, role, apply);
  for (const type of tenantKinds) await cluster.aggregated('admin', type.plural);
}

/** A new user holding the default `admin` role in `namespace`, as a tenant administering it. */
export async function tenantIn(
  cluster: TestCluster,
  namespace: string,
  userPrefix = 'alice',
): Promise<KubeClient> {
  const tenant = await cluster.user(cluster.unique(userPrefix));
  await cluster.grant({ kind: 'User', name: tenant.userName }, { clusterRole: 'admin' }, namespace);
  return tenant;
}

export interface BackupEnvironmentOptions {
  /** What runs (default: the whole backup capability), always under the whole capability's rules. */
  capability?: Capability;
  /** Policy fields this file always wants; every setPolicy() keeps them unless it names them itself. */
  policy?: NonAdminPolicy;
  /** Whether start applies the policy (default true); false leaves the first one to the tests. */
  applyPolicyAtStart?: boolean;
  /** How the test Velero runs (default: as Velero's defaults, one backup at a time). */
  velero?: Pick<VeleroOptions, 'concurrentBackups' | 'failpoints'>;
}

export interface BackupEnvironment {
  velero: TestVelero;
  running: RunningCapability;
  /** Applies the policy: enabled, on Velero's namespace, the file's policy, then `nonAdmin`. */
  setPolicy(nonAdmin?: NonAdminPolicy): Promise<void>;
  /** A fresh namespace whose tenant objects stop() removes while the controllers still run. */
  namespace(prefix: string): Promise<string>;
  /** Such a namespace with a new user holding `admin` in it (see {@link tenantIn}). */
  tenantNamespace(prefix: string, userPrefix?: string): Promise<{ namespace: string; tenant: KubeClient }>;
  /**
   * For afterAll: removes the tenant objects of the namespaces above while the controllers still run to
   * lift their finalizers (so that no namespace stays Terminating), with backup sync off first (so that
   * none comes back from its Backup); then everything registered with cluster.defer(), then Velero.
   */
  stop(): Promise<void>;
}

/**
 * Starts Velero and the capability, installs the tenant roles and applies the policy. For beforeAll,
 * with veleroStartTimeoutMs; pair it with `afterAll(() => env?.stop())`. If it fails halfway, it undoes
 * what it did.
 */
export async function startBackupEnvironment(
  cluster: TestCluster,
  options: BackupEnvironmentOptions = {},
): Promise<BackupEnvironment> {
  const velero = await startTestVelero(cluster, options.velero);
  const namespaces: string[] = [];
  const setPolicy = (nonAdmin: NonAdminPolicy = {}) =>
    applyBackupPolicy(cluster, { veleroNamespace: velero.namespace, ...options.policy, ...nonAdmin });

  async function removeTenantObjects() {
    if (namespaces.length === 0) return;
    await setPolicy({ backupSyncPeriod: '0' }).catch(() => {});
    for (const namespace of namespaces) {
      for (const type of tenantKinds) {
        await cluster.admin.request('DELETE', resourcePath(type, namespace)).catch(() => {});
      }
    }
    await eventually(
      async () => {
        for (const namespace of namespaces) {
          for (const type of tenantKinds) {
            if ((await cluster.admin.list(type, { namespace })).items.length > 0) return false;
          }
        }
        return true;
      },
      { timeoutMs: 30_000, what: 'tenant objects gone' },
    ).catch((err) => console.warn(err));
  }

  const stop = async () => {
    await removeTenantObjects();
    await cluster.cleanup();
    await velero.stop();
  };

  try {
    await installTenantRoles(cluster);
    const running = await runCapability(cluster, options.capability ?? backup, {
      namespaces: { [veleroNamespaceValue]: velero.namespace },
    });
    // Registered after the controllers' stop, so that it runs before it.
    cluster.defer(() => cluster.admin.delete(NonAdminBackupConfigCrd.type, 'cluster'));
    if (options.applyPolicyAtStart ?? true) await setPolicy();
    const namespace = async (prefix: string) => {
      const name = await cluster.namespace(prefix);
      namespaces.push(name);
      return name;
    };
    return {
      velero,
      running,
      setPolicy,
      namespace,
      async tenantNamespace(prefix, userPrefix) {
        const name = await namespace(prefix);
        return { namespace: name, tenant: await tenantIn(cluster, name, userPrefix) };
      },
      stop,
    };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}

/** A condition of an object's status by type. */
export function condition<C extends { type: string }>(
  object: { status?: { conditions?: readonly C[] } } | undefined,
  type: string,
): C | undefined {
  return object?.status?.conditions?.find((c) => c.type === type);
}

/**
 * A tenant object (of any of the tenant kinds) once its controller refused it: phase BackingOff, with
 * conditions that say why.
 */
export function refusedObject<T extends KubeObject & { status?: { phase?: string } }>(
  cluster: TestCluster,
  type: ResourceType,
  namespace: string,
  name: string,
): Promise<T> {
  return eventually(
    async () => {
      const o = await cluster.admin.get<T>(type, name, namespace);
      return o?.status?.phase === 'BackingOff' ? o : undefined;
    },
    { what: `${type.kind} ${namespace}/${name} BackingOff` },
  );
}

const isFinished = (phase: string | undefined) =>
  phase !== undefined && (finishedPhases as readonly string[]).includes(phase);

/**
 * Waits until a NonAdminBackup or NonAdminRestore settled: refused by the controller (BackingOff), or
 * its Velero object reached a finished phase.
 */
async function settled<T extends NonAdminBackup | NonAdminRestore>(
  cluster: TestCluster,
  type: ResourceType,
  namespace: string,
  name: string,
  veleroPhase: (o: T) => string | undefined,
  timeoutMs: number,
): Promise<T> {
  try {
    return await eventually(
      async () => {
        const o = await cluster.admin.get<T>(type, name, namespace);
        return o && (o.status?.phase === 'BackingOff' || isFinished(veleroPhase(o))) ? o : undefined;
      },
      { timeoutMs, what: `${type.kind} ${namespace}/${name} settled` },
    );
  } catch (err) {
    // Not settled in time: where Velero left it (a CI run once saw a first backup wait over 225 s).
    const o = await cluster.admin.get<T>(type, name, namespace).catch(() => undefined);
    const ref = (o?.status as { veleroBackup?: VeleroRef; veleroRestore?: VeleroRef } | undefined) ?? {};
    const kind = type.kind === NonAdminBackupCrd.type.kind ? 'backup' : 'restore';
    const story = await veleroStory(cluster, kind, ref.veleroBackup ?? ref.veleroRestore, true);
    throw new Error(`${(err as Error).message}${story}`);
  }
}

type VeleroRef = { name?: string; namespace?: string };

/** A NonAdminBackup once refused (BackingOff) or its Velero Backup finished. */
export function settledBackup(
  cluster: TestCluster,
  namespace: string,
  name: string,
  timeoutMs = veleroQueueMs,
): Promise<NonAdminBackup> {
  return settled<NonAdminBackup>(
    cluster,
    NonAdminBackupCrd.type,
    namespace,
    name,
    (o) => o.status?.veleroBackup?.status?.phase,
    timeoutMs,
  );
}

/** A NonAdminRestore once refused (BackingOff) or its Velero Restore finished. */
export function settledRestore(
  cluster: TestCluster,
  namespace: string,
  name: string,
  timeoutMs = veleroQueueMs,
): Promise<NonAdminRestore> {
  return settled<NonAdminRestore>(
    cluster,
    NonAdminRestoreCrd.type,
    namespace,
    name,
    (o) => o.status?.veleroRestore?.status?.phase,
    timeoutMs,
  );
}

/** What a settled object came to, for a failure message that says why it did not complete. */
const outcome = (o: NonAdminBackup | NonAdminRestore, veleroPhase: string | undefined) =>
  `phase ${o.status?.phase}, Velero phase ${veleroPhase}, conditions ${JSON.stringify(o.status?.conditions)}`;

/**
 * What Velero says about a Backup or Restore that did not complete: its failure reason and counts, the
 * file-system volume copies behind it, and (where Velero runs as Pods) their restarts and the server's
 * log lines that name it. The run's clean-up removes Velero's logs, so a failure message is all that is
 * left of them.
 */
async function veleroStory(
  cluster: TestCluster,
  kind: 'backup' | 'restore',
  ref: VeleroRef | undefined,
  /** Also Velero's queue (each unfinished one's phase and position) and its every log line naming it. */
  waiting = false,
): Promise<string> {
  if (!ref?.name || !ref.namespace) return '';
  const { name, namespace } = ref;
  const admin = cluster.admin;
  const lines: string[] = [];
  const type = kind === 'backup' ? VeleroResources.backups : VeleroResources.restores;
  const object = await admin.get<Backup | Restore>(type, name, namespace).catch(() => undefined);
  const { phase, failureReason, errors, warnings, validationErrors } = object?.status ?? {};
  lines.push(
    `Velero ${kind} ${namespace}/${name}: ${JSON.stringify({ phase, failureReason, errors, warnings, validationErrors })}`,
  );
  const volumes = kind === 'backup' ? VeleroResources.podVolumeBackups : VeleroResources.podVolumeRestores;
  const copies = await admin
    .list<KubeObject & { status?: { phase?: string; message?: string } }>(volumes, {
      namespace,
      labelSelector: `velero.io/${kind}-name=${name}`,
    })
    .catch(() => ({ items: [] }));
  for (const c of copies.items)
    lines.push(`  ${volumes.kind} ${c.metadata.name}: ${c.status?.phase} ${c.status?.message ?? ''}`);
  const pods = await admin
    .list<
      KubeObject & {
        status?: { containerStatuses?: { name: string; restartCount: number; lastState?: unknown }[] };
      }
    >(Resources.pods, { namespace })
    .catch(() => ({ items: [] }));
  for (const pod of pods.items) {
    for (const c of pod.status?.containerStatuses ?? [])
      if (c.restartCount > 0)
        lines.push(
          `  Pod ${pod.metadata.name}/${c.name} restarted ${c.restartCount}x, last ${JSON.stringify(c.lastState)}`,
        );
  }
  if (waiting) {
    const all = await admin.list<Backup | Restore>(type, { namespace }).catch(() => ({ items: [] }));
    const queue = all.items
      .filter((o) => !isFinished(o.status?.phase))
      .map(
        (o) =>
          `${o.metadata.name} ${o.status?.phase ?? 'New'} ${(o.status as { queuePosition?: number })?.queuePosition ?? ''}`,
      );
    lines.push(`  Velero's unfinished ${kind}s: ${queue.join('; ') || 'none'}`);
  }
  const local = testVeleroIn(namespace);
  const log = local ? (await local.logLines(name)).join('\n') : await veleroPodLog(admin, namespace);
  const level = waiting ? /./ : /level=(error|warning)/;
  const mentions = log.split('\n').filter((l) => l.includes(name) && level.test(l));
  if (mentions.length)
    lines.push(
      `  Velero server log, ${waiting ? 'lines' : 'errors and warnings'} naming it:`,
      ...mentions.slice(-15).map((l) => `    ${l}`),
    );
  return `\n${lines.join('\n')}`;
}

/** A NonAdminBackup once its Velero Backup completed; fails as soon as it settled otherwise. */
export async function completedBackup(
  cluster: TestCluster,
  namespace: string,
  name: string,
): Promise<NonAdminBackup> {
  const nab = await settledBackup(cluster, namespace, name);
  const phase = nab.status?.veleroBackup?.status?.phase;
  if (phase !== 'Completed') {
    const story = await veleroStory(cluster, 'backup', nab.status?.veleroBackup);
    throw new Error(`NonAdminBackup ${namespace}/${name}: ${outcome(nab, phase)}${story}`);
  }
  return nab;
}

/** A NonAdminRestore once its Velero Restore completed; fails as soon as it settled otherwise. */
export async function completedRestore(
  cluster: TestCluster,
  namespace: string,
  name: string,
): Promise<NonAdminRestore> {
  const nar = await settledRestore(cluster, namespace, name);
  const phase = nar.status?.veleroRestore?.status?.phase;
  if (phase !== 'Completed') {
    const story = await veleroStory(cluster, 'restore', nar.status?.veleroRestore);
    throw new Error(`NonAdminRestore ${namespace}/${name}: ${outcome(nar, phase)}${story}`);
  }
  return nar;
}

/**
 * A tenant's own storage location `name` in `bucket` of the test's S3 server (made first if missing),
 * with the credential Secret `s3-creds` the tenant writes for it: a key of the namespace's own, random,
 * that the store is given (it refuses requests signed with any other).
 */
export async function ownLocation(
  env: BackupEnvironment,
  client: KubeClient,
  namespace: string,
  bucket: string,
  name = 'own',
): Promise<void> {
  const made = await env.velero.s3Fetch({ method: 'PUT', path: `/${bucket}` });
  if (!made.ok && made.status !== 409)
    throw new Error(`bucket ${bucket}: ${made.status} ${await made.text()}`);
  const key = {
    accessKeyId: `${namespace}-${randomBytes(4).toString('hex')}`,
    secretAccessKey: randomBytes(24).toString('base64url'),
  };
  await env.velero.addKey(key);
  await client.create(Resources.secrets, {
    metadata: { name: 's3-creds', namespace },
    stringData: { cloud: credentialsFile(key) },
  } as KubeObject);
  await client.create(NonAdminBackupStorageLocationCrd.type, {
    metadata: { name, namespace },
    spec: {
      backupStorageLocationSpec: {
        provider: 'aws',
        objectStorage: { bucket },
        credential: { name: 's3-creds', key: 'cloud' },
        config: { region: 'minio', s3ForcePathStyle: 'true', s3Url: env.velero.s3Url },
      },
    },
  } as KubeObject);
}

/**
 * `ownLocation`, then approved as an admin decides: once the location's request in Velero's namespace
 * shows its spec (tenantkit puts a decision taken before that back to pending, so that an approval never
 * covers a spec the admin did not see). Resolves with the request's name (the location's NACUUID).
 */
export async function approvedOwnLocation(
  env: BackupEnvironment,
  cluster: TestCluster,
  client: KubeClient,
  namespace: string,
  bucket: string,
  name = 'own',
): Promise<string> {
  await ownLocation(env, client, namespace, bucket, name);
  const uuid = await eventually(
    async () => {
      const o = await cluster.admin.get<
        KubeObject & { status?: { veleroBackupStorageLocation?: { nacuuid?: string } } }
      >(NonAdminBackupStorageLocationCrd.type, name, namespace);
      return o?.status?.veleroBackupStorageLocation?.nacuuid;
    },
    { timeoutMs: 60_000, what: `NACUUID of NonAdminBackupStorageLocation ${namespace}/${name}` },
  );
  await eventually(
    async () => {
      const request = await cluster.admin.get<
        KubeObject & { status?: { phase?: string; nonAdminBackupStorageLocation?: unknown } }
      >(NonAdminBackupStorageLocationRequestCrd.type, uuid, env.velero.namespace);
      return (
        request?.status?.phase === 'Pending' && request.status.nonAdminBackupStorageLocation !== undefined
      );
    },
    { what: 'the request shows the location to approve' },
  );
  await cluster.admin.patch(NonAdminBackupStorageLocationRequestCrd.type, uuid, env.velero.namespace, {
    spec: { approvalDecision: 'approve' },
  });
  return uuid;
}
