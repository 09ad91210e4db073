// Starts a real Velero against a cluster: the S3 server (gofakes3 on a directory) as its object store,
// Velero's CRDs as the Velero binary prints them, the objects `velero install` would create (namespace,
// credentials Secret, `velero` Deployment, default BackupStorageLocation) and `velero server` as a
// local process. There is no kubelet here, so the Deployment never runs: Velero reads it for images.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, link, mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { type BackupStorageLocation, VeleroResources } from '../../src/crds/velero.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { installCrds } from '../../src/kube/crds.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { freePort } from '../../src/ports.ts';
import type { Progress } from '../controlplane/build.ts';
import { type GroupProcess, spawnGroup } from '../controlplane/process-group.ts';
import { ensureVeleroBinaries, type VeleroBinaries } from './build.ts';
import { removeVeleroPod, veleroDeployment, veleroPodLog, veleroPodObjects, veleroPodState } from './pod.ts';
import { listObjects, type S3Object } from './s3-list.ts';
import { credentialsFile, parseCredentials, type S3Credentials, type SignInput, s3Fetch } from './s3-sign.ts';

export interface VeleroOptions {
  /** Admin kubeconfig: Velero backs up and restores anything, as it does with its cluster-admin binding. */
  kubeconfigPath: string;
  /** Velero's namespace (its Backups, Restores and BackupStorageLocations live there). Default `velero`. */
  namespace?: string;
  /** Holds the object store's data, credentials and logs. */
  dir: string;
  /** Default `velero`. */
  bucket?: string;
  /**
   * How often Velero re-validates its storage locations and syncs backups from object storage
   * (`--store-validation-frequency`, `--backup-sync-period`). Default `5s`, so tests see changes fast.
   */
  syncPeriod?: string;
  /**
   * Whether Velero runs tenantkit's restore guard plugin (default true). Only tests turn it off, to see
   * that tenantkit refuses tenant restores on a Velero without it.
   */
  restoreGuard?: boolean;
  /**
   * How many backups Velero runs at once (`--concurrent-backups`, new in v1.18; Velero's default is 1).
   * Backups of namespaces that overlap still wait for each other.
   */
  concurrentBackups?: number;
  /**
   * Test failpoints of the Velero server process (devenv/go/velero/failpoints/): `postProcessingDelay`
   * (a Go duration) makes Velero's tracker race happen to every backup, so that a finished Backup stays
   * counted as running and its deletion is refused "still in progress".
   */
  failpoints?: { postProcessingDelay?: string };
  /**
   * Runs Velero as a Deployment on the local node (devenv/node/launch.ts) from this image,
   * already imported into the node's containerd, instead of as a local process; the S3 server then
   * listens on `address` (the node's address), which Pods reach. Velero's log is copied to `logFile` when
   * it stops. With `kubeletDir` (kubelet's root directory), Velero's node-agent runs there too, for
   * file-system backups of Pods' volumes.
   */
  onNode?: { image: string; address: string; kubeletDir?: string };
  progress?: Progress;
}

export interface Velero {
  namespace: string;
  bucket: string;
  /** The S3 endpoint, as in the default BackupStorageLocation's `s3Url`. */
  s3Url: string;
  /**
   * Velero's keys for the store (random per `dir`; in the Secret `credentialsSecret`). The store refuses
   * requests that are not signed with a key it was given (AWS Signature Version 4).
   */
  credentials: S3Credentials;
  /** A request to the store signed with Velero's keys; `path` is `/<bucket>[/<key>]`, unencoded. */
  s3Fetch(request: Omit<SignInput, 'endpoint'>): Promise<Response>;
  /**
   * Gives the store one more key (e.g. the one a tenant's own storage location names), with full access
   * like Velero's: the store checks who signed, not which bucket a key may use.
   */
  addKey(credentials: S3Credentials): Promise<void>;
  /** The default BackupStorageLocation's name. */
  storageLocation: string;
  /** The Secret (key `cloud`, AWS credentials file format) the BackupStorageLocation uses. */
  credentialsSecret: string;
  binaries: VeleroBinaries;
  /** `velero server`'s log (on the node: written when Velero stops). */
  logFile: string;
  /** The objects in the bucket whose key starts with `prefix` (e.g. `backups/<name>/`). */
  listObjects(prefix?: string): Promise<S3Object[]>;
  /**
   * What `kubectl rollout restart deployment/velero` does to a Velero on a node, for the local process:
   * the server (and its plugin processes) stopped and started again with the same flags, the log appended
   * to. Resolves once the new server runs. Not for Velero on the node.
   */
  restartServer(): Promise<void>;
  /** Stops Velero (with its plugin processes) and the S3 server; resolves once every process exited. */
  stop(): Promise<void>;
}

const fieldManager = 'tenantkit-velero';

/** Velero's CRDs exactly as this Velero build installs them (`velero install --crds-only`). */
export async function veleroCrds(velero: string): Promise<KubeObject[]> {
  const args = ['install', '--crds-only', '--dry-run', '-o', 'json'];
  const { stdout } = await promisify(execFile)(velero, args, { maxBuffer: 64 * 1024 * 1024 });
  const list = JSON.parse(stdout) as { items: (KubeObject & { status?: unknown })[] };
  // The printed objects carry an empty status and a null creationTimestamp: neither is ours to apply.
  return list.items.map(({ status: _status, ...crd }) => {
    const { creationTimestamp: _created, ...metadata } = crd.metadata;
    return { ...crd, metadata };
  });
}

interface Watched {
  name: string;
  process: GroupProcess;
  logFile: string;
}

/** Polls `probe` until it returns a value; fails early, with its log's tail, if a watched process exits. */
async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  watched: Watched[],
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let gone: (Watched & { code: number }) | undefined;
  for (const w of watched) {
    void w.process.exited.then((code) => {
      gone ??= { ...w, code };
    });
  }
  let last = '';
  for (;;) {
    if (gone) {
      const tail = (await readFile(gone.logFile, 'utf8').catch(() => '')).slice(-3000);
      throw new Error(
        `${gone.name} exited with code ${gone.code} while waiting for ${what}; log tail (${gone.logFile}):\n${tail}`,
      );
    }
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      throw new Error(`${what} not reached after ${timeoutMs} ms${last ? ` (last: ${last})` : ''}`);
    }
    await sleep(100);
  }
}

/** A plugin folder in `dir` with every built plugin but tenantkit's restore guard (linked, else copied). */
async function pluginsWithout(pluginDir: string, dir: string): Promise<string> {
  const target = join(dir, 'plugins-without-restore-guard');
  await mkdir(target, { recursive: true });
  for (const name of await readdir(pluginDir)) {
    if (name === 'tenantkit-restore-guard' || existsSync(join(target, name))) continue;
    await link(join(pluginDir, name), join(target, name)).catch(() =>
      copyFile(join(pluginDir, name), join(target, name)),
    );
  }
  return target;
}

/** Velero's keys for the store, random per dir (a restart reuses them). */
interface StoreKeys {
  /** Velero's credentials file (AWS format), also what the BackupStorageLocation's Secret holds. */
  credentials: string;
  credentialsPath: string;
  keys: S3Credentials;
  /** The store's own file of accepted keys: Velero's, and those added for tenants' locations (addKey). */
  storeKeys: string;
}

async function storeKeys(dir: string): Promise<StoreKeys> {
  const credentialsPath = join(dir, 'credentials');
  const credentials = existsSync(credentialsPath)
    ? await readFile(credentialsPath, 'utf8')
    : credentialsFile({
        accessKeyId: `TK${randomBytes(8).toString('hex').toUpperCase()}`,
        secretAccessKey: randomBytes(30).toString('base64url'),
      });
  await writeFile(credentialsPath, credentials, { mode: 0o600 });
  const storeKeys = join(dir, 's3-keys');
  if (!existsSync(storeKeys)) await writeFile(storeKeys, credentials, { mode: 0o600 });
  return { credentials, credentialsPath, keys: parseCredentials(credentials), storeKeys };
}

/** The S3 server on `host` (the node's address when Velero runs there), once it answers signed requests. */
async function startStore(
  binaries: VeleroBinaries,
  dir: string,
  host: string,
  bucket: string,
  keys: StoreKeys,
): Promise<{ process: GroupProcess; url: string; watched: Watched }> {
  const port = await freePort();
  const url = `http://${host}:${port}`;
  const logFile = join(dir, 's3server.log');
  const args = ['--listen', `${host}:${port}`, '--dir', join(dir, 's3'), '--bucket', bucket];
  const s3 = spawnGroup(binaries.s3server, [...args, '--credentials-file', keys.storeKeys], { logFile });
  const watched = { name: 's3server', process: s3, logFile };
  try {
    await waitFor(
      `the S3 server on ${url}`,
      async () => {
        await listObjects(url, keys.keys, bucket, 'no-such-prefix/');
        return true;
      },
      [watched],
      30_000,
    );
  } catch (err) {
    await s3.stop();
    throw err;
  }
  return { process: s3, url, watched };
}

/**
 * The object store alone, with keys of its own in `dir` (its files under `dir/s3`): for tests of the
 * store itself. `stop()` ends its process.
 */
export async function startObjectStore(
  dir: string,
  bucket: string,
  host = '127.0.0.1',
): Promise<{ url: string; credentials: S3Credentials; stop(): Promise<void> }> {
  const binaries = await ensureVeleroBinaries();
  await mkdir(join(dir, 's3'), { recursive: true });
  const keys = await storeKeys(dir);
  const store = await startStore(binaries, dir, host, bucket, keys);
  return { url: store.url, credentials: keys.keys, stop: () => store.process.stop() };
}

/**
 * What `velero install` creates before the server: the namespace, the credentials Secret with the store's
 * keys, and the kopia repositories' password. Velero makes that password's Secret with a password built
 * into Velero (the same in every installation) when it is missing, so anyone who can read the bucket could
 * decrypt the volume data; here it is random, kept in `dir` so that a restart can still read the repositories.
 */
async function applyVeleroSecrets(
  client: KubeClient,
  namespace: string,
  credentialsSecret: string,
  keys: StoreKeys,
  dir: string,
): Promise<void> {
  const apply = { fieldManager, force: true };
  await client.apply(Resources.namespaces, { metadata: { name: namespace } }, apply);
  await client.apply(
    Resources.secrets,
    {
      metadata: { name: credentialsSecret, namespace, labels: { component: 'velero' } },
      type: 'Opaque',
      data: { cloud: Buffer.from(keys.credentials).toString('base64') },
    } as KubeObject,
    apply,
  );
  const repoPasswordFile = join(dir, 'repository-password');
  const repoPassword = existsSync(repoPasswordFile)
    ? await readFile(repoPasswordFile, 'utf8')
    : randomBytes(24).toString('base64url');
  await writeFile(repoPasswordFile, repoPassword, { mode: 0o600 });
  await client.apply(
    Resources.secrets,
    {
      metadata: { name: 'velero-repo-credentials', namespace, labels: { component: 'velero' } },
      type: 'Opaque',
      data: { 'repository-password': Buffer.from(repoPassword).toString('base64') },
    } as KubeObject,
    apply,
  );
}

/**
 * Velero's Deployment: on the node, the one `velero install` makes (with its node-agent when kubelet's
 * directory is known); otherwise scaled to zero, never run (Velero is a local process), read by restores
 * for the image of their helper containers.
 */
async function applyVeleroDeployment(
  client: KubeClient,
  pod: { namespace: string; credentialsSecret: string; serverArgs: string[] },
  onNode: VeleroOptions['onNode'],
  veleroVersion: string,
): Promise<void> {
  const apply = { fieldManager, force: true };
  if (onNode) {
    const spec = {
      ...pod,
      image: onNode.image,
      ...(onNode.kubeletDir ? { kubeletDir: onNode.kubeletDir } : {}),
    };
    for (const { type, object } of veleroPodObjects(spec)) await client.apply(type, object, apply);
    return;
  }
  const image = `velero/velero:${veleroVersion}`;
  await client.apply(Resources.deployments, veleroDeployment({ ...pod, image, replicas: 0 }), apply);
}

/**
 * The default BackupStorageLocation: the store's bucket, with the server's own credentials file
 * (AWS_SHARED_CREDENTIALS_FILE, the credentials Secret mounted on the node), as `velero install` makes it.
 * Not `spec.credential`: Velero v1.18 rewrites (truncates, then writes) a location's credentials file on
 * every use, and a backup that reads it at that moment finds no keys and fails ("no EC2 IMDS role found");
 * CI met it once, with the store validated every 5 s.
 */
async function applyDefaultLocation(
  client: KubeClient,
  name: string,
  namespace: string,
  bucket: string,
  s3Url: string,
): Promise<void> {
  const location: BackupStorageLocation = {
    metadata: { name, namespace, labels: { component: 'velero' } },
    spec: {
      provider: 'aws',
      default: true,
      objectStorage: { bucket },
      config: { region: 'minio', s3ForcePathStyle: 'true', s3Url },
    },
  };
  await client.apply(VeleroResources.backupStorageLocations, location, { fieldManager, force: true });
}

/**
 * `velero server` as a local process, in a minimal environment: no AWS or kubeconfig settings of the caller
 * leak in, and Velero's home, temporary files (it writes BSL credentials there) and default credentials stay
 * in `dir`. Plugins inherit the environment: tenantkit's restore guard talks to the API server as Velero does
 * (in a cluster, through Velero's service account).
 */
async function startVeleroProcess(
  binaries: VeleroBinaries,
  options: VeleroOptions,
  serverArgs: string[],
  pluginDir: string,
  keys: StoreKeys,
  logFile: string,
): Promise<GroupProcess> {
  const metricsPort = await freePort();
  const args = [
    'server',
    ...serverArgs,
    `--kubeconfig=${options.kubeconfigPath}`,
    `--plugin-dir=${pluginDir}`,
    `--metrics-address=127.0.0.1:${metricsPort}`,
  ];
  return spawnGroup(binaries.velero, args, {
    logFile,
    cwd: options.dir,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: join(options.dir, 'home'),
      TMPDIR: join(options.dir, 'tmp'),
      AWS_SHARED_CREDENTIALS_FILE: keys.credentialsPath,
      KUBECONFIG: options.kubeconfigPath,
      AWS_EC2_METADATA_DISABLED: 'true',
      ...(options.failpoints?.postProcessingDelay
        ? { TENANTKIT_FAILPOINT_POST_PROCESSING_DELAY: options.failpoints.postProcessingDelay }
        : {}),
    },
  });
}

/** Stops Velero on the node: its Pods' logs are kept in `dir` first, then its objects go. */
function nodeVeleroStopper(
  client: KubeClient,
  namespace: string,
  dir: string,
  logFile: string,
  withAgent: boolean,
): { stop(): Promise<void> } {
  return {
    stop: async () => {
      await writeFile(logFile, await veleroPodLog(client, namespace)).catch(() => {});
      if (withAgent) {
        const agentLog = await veleroPodLog(client, namespace, 'role=node-agent');
        await writeFile(join(dir, 'node-agent.log'), agentLog).catch(() => {});
      }
      await removeVeleroPod(client, namespace);
    },
  };
}

/** Waits for the location to be validated Available by this run (a reused dir may hold an older validation). */
async function waitLocationAvailable(
  client: KubeClient,
  name: string,
  namespace: string,
  since: number,
  watched: Watched[],
  onNode: boolean,
): Promise<void> {
  await waitFor(
    `BackupStorageLocation ${namespace}/${name} Available`,
    async () => {
      const bsl = await client.get<BackupStorageLocation>(
        VeleroResources.backupStorageLocations,
        name,
        namespace,
      );
      const validated = Date.parse(bsl?.status?.lastValidationTime ?? '') >= since;
      if (validated && bsl?.status?.phase === 'Available') return bsl;
      const pod = onNode ? `; ${await veleroPodState(client, namespace)}` : '';
      throw new Error(`phase ${bsl?.status?.phase ?? '(none)'}: ${bsl?.status?.message ?? ''}${pod}`);
    },
    watched,
    onNode ? 120_000 : 60_000,
  );
}

/** Gives the store one more key, replacing its key file at once (the store rereads it when it changes). */
async function addStoreKey(storeKeys: string, key: S3Credentials): Promise<void> {
  const known = await readFile(storeKeys, 'utf8');
  if (known.includes(`aws_access_key_id = ${key.accessKeyId}\n`)) return;
  const profile = credentialsFile(key).replace('[default]', `[key-${key.accessKeyId}]`);
  await writeFile(`${storeKeys}.new`, `${known}${profile}`, { mode: 0o600 });
  await rename(`${storeKeys}.new`, storeKeys);
}

export async function startVelero(options: VeleroOptions): Promise<Velero> {
  const progress = options.progress ?? (() => {});
  const namespace = options.namespace ?? 'velero';
  const bucket = options.bucket ?? 'velero';
  const syncPeriod = options.syncPeriod ?? '5s';
  const { dir, onNode } = options;
  if (onNode && options.restoreGuard === false) {
    throw new Error(
      'Velero on the node always runs the plugins of its image (restoreGuard: false is for a local process)',
    );
  }
  const binaries = await ensureVeleroBinaries(progress);
  const client = KubeClient.fromKubeconfig({ path: options.kubeconfigPath });
  for (const sub of ['s3', 'home', 'tmp']) await mkdir(join(dir, sub), { recursive: true });
  const pluginDir =
    options.restoreGuard === false ? await pluginsWithout(binaries.pluginDir, dir) : binaries.pluginDir;

  /** What stop() ends: the processes started here, or Velero's Deployment on the node. */
  const started: { stop(): Promise<void> }[] = [];
  const stopAll = async () => {
    await Promise.all(started.splice(0).map((p) => p.stop()));
  };
  let restartServer = async (): Promise<void> => {
    throw new Error('restartServer is for the local Velero process; on the node, delete its Pod');
  };
  try {
    const keys = await storeKeys(dir);
    const store = await startStore(binaries, dir, onNode?.address ?? '127.0.0.1', bucket, keys);
    started.push(store.process);
    await installCrds(client, await veleroCrds(binaries.velero));
    const credentialsSecret = 'cloud-credentials';
    await applyVeleroSecrets(client, namespace, credentialsSecret, keys, dir);
    const serverArgs = [
      `--namespace=${namespace}`,
      // An empty address turns the pprof server off.
      '--profiler-address=',
      `--store-validation-frequency=${syncPeriod}`,
      `--backup-sync-period=${syncPeriod}`,
      // The default uploader of file-system backups (run by the node-agent, on a node).
      '--uploader-type=kopia',
      '--log-format=text',
      ...(options.concurrentBackups ? [`--concurrent-backups=${options.concurrentBackups}`] : []),
    ];
    await applyVeleroDeployment(
      client,
      { namespace, credentialsSecret, serverArgs },
      onNode,
      binaries.veleroVersion,
    );
    const storageLocation = 'default';
    await applyDefaultLocation(client, storageLocation, namespace, bucket, store.url);

    const logFile = join(dir, 'velero.log');
    const watched: Watched[] = [store.watched];
    const since = Math.floor(Date.now() / 1000) * 1000;
    if (onNode) {
      const agent = onNode.kubeletDir ? ', its node-agent as DaemonSet node-agent' : '';
      progress(`Velero ${binaries.veleroVersion} runs as Deployment ${namespace}/velero on the node${agent}`);
      started.push(nodeVeleroStopper(client, namespace, dir, logFile, Boolean(onNode.kubeletDir)));
    } else {
      progress(`starting Velero ${binaries.veleroVersion} in namespace ${namespace} (log: ${logFile})`);
      const velero = await startVeleroProcess(binaries, options, serverArgs, pluginDir, keys, logFile);
      started.push(velero);
      watched.push({ name: 'velero server', process: velero, logFile });
      restartServer = async () => {
        const running = started.findIndex((p) =>
          watched.some((w) => w.process === p && w.name === 'velero server'),
        );
        if (running < 0) throw new Error('the Velero server is not running');
        const [old] = started.splice(running, 1);
        await old!.stop();
        const again = await startVeleroProcess(binaries, options, serverArgs, pluginDir, keys, logFile);
        started.push(again);
        const entry = watched.find((w) => w.name === 'velero server');
        if (entry) entry.process = again;
        progress(`restarted the Velero server in namespace ${namespace}`);
      };
    }
    await waitLocationAvailable(client, storageLocation, namespace, since, watched, Boolean(onNode));

    const s3Url = store.url;
    return {
      namespace,
      bucket,
      s3Url,
      credentials: keys.keys,
      s3Fetch: (request) => s3Fetch(keys.keys, { ...request, endpoint: s3Url }),
      addKey: (key) => addStoreKey(keys.storeKeys, key),
      storageLocation,
      credentialsSecret,
      binaries,
      logFile,
      listObjects: (prefix = '') => listObjects(s3Url, keys.keys, bucket, prefix),
      restartServer: () => restartServer(),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
