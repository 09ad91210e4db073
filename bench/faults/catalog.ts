// The faults: each of the release's Pods killed (SIGKILL) or deleted, the controllers' leader killed the
// moment a NonAdminBackup's identity is written, the search database killed, and every webhook Pod gone.
// Each says how to tell that what it hit works again (a probe through it, as the tenant).
import { setTimeout as sleep } from 'node:timers/promises';
import { NabIdentityWritten } from '../../src/backup/model.ts';
import { NonAdminBackupCrd } from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import { ApiError } from '../../src/kube/client.ts';
import { failpointVariable } from '../../src/kube/failpoint.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { cacheDifference, indexDifference } from './checks.ts';
import { type Fault, type Injected, type Rng, restoreCrashPoints, type World } from './model.ts';
import { allReady, componentPods, type Ending, endPod, leaderPod, type Pod } from './pods.ts';
import {
  describeVolumeRestores,
  removeStore,
  restoreStore,
  runningRestore,
  settleStoreRestore,
  volumeRestoresOf,
} from './volumes.ts';
import { knownQuery, searchProblem } from './work.ts';

/** Polls `probe` until it resolves true; throws after `timeoutMs` saying `what`. */
async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`not recovered after ${timeoutMs / 1000} s: ${what}`);
    await sleep(100);
  }
}

let probes = 0;

/** The tenant's new namespace is bound to her organization (webhooks and controllers work). */
async function bindsNamespace(world: World): Promise<void> {
  const name = `${world.home}-probe-${probes++}`;
  await until('a new namespace admitted', async () => {
    await world.tenant
      .create(Resources.namespaces, {
        metadata: { name, labels: { [world.organizationLabel]: world.organization } },
      })
      // Made by an earlier try whose answer was lost.
      .catch((err: unknown) => {
        if (!(err instanceof ApiError && err.status === 409)) throw err;
      });
    return true;
  });
  await until(`namespace ${name} bound`, async () => {
    const bound = await world.admin.list(Resources.roleBindings, {
      namespace: name,
      labelSelector: 'app.kubernetes.io/managed-by=tenantkit-tenancy',
    });
    return bound.items.length > 0;
  });
  await world.admin.delete(Resources.namespaces, name).catch(() => {});
}

/** The tenant's namespace create is admitted (a dry run: nothing is kept). */
const admits = (world: World) =>
  until('a namespace admitted', async () => {
    await world.tenant.request('POST', '/api/v1/namespaces?dryRun=All', {
      body: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name: `${world.home}-dry-${probes++}`,
          labels: { [world.organizationLabel]: world.organization },
        },
      },
    });
    return true;
  });

/** The tenant's search answers exactly what she may see. */
const searchAnswers = (world: World) =>
  until('search answers the tenant', async () => {
    const reply = await world.search(knownQuery(world.home));
    const p = searchProblem(world, reply);
    return !p.refusal && !p.wrong;
  });

/** The index holds exactly the API server's objects again (within 30 s of the rest being back). */
async function indexConverged(world: World): Promise<number> {
  const { difference, lastCheckMs } = await indexDifference(world, 30_000);
  if (difference) throw new Error(`the index did not converge: ${difference}`);
  return lastCheckMs;
}

/**
 * Search's database back, then search answering, then the index equal to the API server, each step's
 * time since `from` said in one line: where a slow recovery's time went (the database's own restart, or
 * the index's resync after it).
 */
async function databaseBack(world: World, from: number): Promise<void> {
  const steps: string[] = [];
  const step = async (what: string, done: () => Promise<unknown>) => {
    await done();
    steps.push(`${what} ${((performance.now() - from) / 1000).toFixed(1)} s`);
  };
  let lastCheckMs = 0;
  await step('database ready', () => allReady(world, 'search-db'));
  await step('search answers', () => searchAnswers(world));
  await step('index equal', async () => {
    lastCheckMs = await indexConverged(world);
  });
  // The comparison lists every object from the API server: the index was equal within its last one.
  world.say(
    `    search's database back: ${steps.join(', ')} (by a comparison that took ${(lastCheckMs / 1000).toFixed(1)} s)`,
  );
}

/** A component's Pod ended one way; recovered when the component is all ready and `probe` passes. */
function podFault(
  component: string,
  how: Ending,
  options: {
    label?: string;
    guarantee: string;
    container?: string;
    victim?: (world: World, rng: Rng) => Promise<Pod>;
    probe: (world: World) => Promise<void>;
  },
): Fault {
  return {
    name: `${options.label ?? component} (${how})`,
    cheap: true,
    guarantee: options.guarantee,
    async inject(world, rng) {
      const pod = options.victim
        ? await options.victim(world, rng)
        : rng.pick(await componentPods(world, component));
      if (!pod) throw new Error(`no ${component} Pod to end`);
      const what = await endPod(world, pod, how, options.container);
      return {
        what,
        async recovered() {
          // A SIGKILLed container is restarted in place: wait until its Pod shows it again.
          await sleep(how === 'SIGKILL' ? 1_500 : 500);
          await allReady(world, component);
          await options.probe(world);
        },
      };
    },
  };
}

const controllersGuarantee =
  'a NonAdminBackup is handed to Velero exactly once and a new namespace is bound, whatever the moment the controllers leader dies';
const webhooksGuarantee =
  'with one webhook Pod gone the other admits; a refused request says why, and nothing is admitted unchecked';
const searchGuarantee =
  'a search is answered exactly, or refused with a status and a reason; never a partial or foreign answer';
const collectorGuarantee =
  "a restarted collector resyncs: the index holds exactly the API server's objects again, none stale";
const consoleGuarantee =
  "the console keeps nothing of a tenant's (her token stays in her page): a restarted Pod serves her next request as soon as it is ready";

const byHow = (how: Ending): Fault[] => [
  podFault('controllers', how, {
    label: 'controllers leader',
    guarantee: controllersGuarantee,
    victim: (world) => leaderPod(world),
    probe: bindsNamespace,
  }),
  podFault('webhooks', how, { guarantee: webhooksGuarantee, probe: admits }),
  podFault('search', how, { label: 'search API', guarantee: searchGuarantee, probe: searchAnswers }),
  podFault('search-collector', how, {
    label: 'collector',
    guarantee: collectorGuarantee,
    probe: async (world) => {
      await indexConverged(world);
    },
  }),
  podFault('console', how, { guarantee: consoleGuarantee, probe: async () => {} }),
];

/**
 * The controllers' leader SIGKILLed as soon as a NonAdminBackup's NACUUID shows in its status (step 1 of
 * the hand-over, before the Velero Backup is made): the window where a careless controller would make a
 * second Backup or none. `what` says whether the Backup existed already when the kill landed.
 */
const leaderAtIdentity: Fault = {
  name: 'controllers leader (SIGKILL at a NAB identity write)',
  cheap: false,
  guarantee: controllersGuarantee,
  // Step 2 follows step 1 within a watch event: without a pause between them the kill lands after the
  // Backup exists (all 20 rounds of session 31). Held open 3 s, it lands inside every time.
  controllersEnv: { [failpointVariable(NabIdentityWritten)]: '3000' },
  async inject(world, rng) {
    const leader = await leaderPod(world);
    const stop = new AbortController();
    // The moment a NACUUID first shows in a NAB: not any later change of a NAB that has one (the
    // controllers mirror older NABs' Velero Backups all the time; in session 32 one such change was taken
    // for the write, and the kill came after that NAB's Backup existed).
    const known = new Map<string, string | undefined>();
    const hit = new Promise<string>((resolve) => {
      void world.admin
        .watch<KubeObject & { status?: { veleroBackup?: { nacuuid?: string } } }>(
          NonAdminBackupCrd.type,
          { namespace: world.home, signal: stop.signal, timeoutSeconds: 120 },
          (event) => {
            const name = event.object?.metadata?.name ?? '';
            const uuid = event.object?.status?.veleroBackup?.nacuuid;
            const before = known.get(name);
            known.set(name, uuid);
            if (event.type === 'MODIFIED' && uuid && uuid !== before) resolve(uuid);
          },
        )
        .catch(() => {});
    });
    // The tenant's next NAB (made by the round's work) is the one: one is made every 2 s.
    const uuid = await Promise.race([hit, sleep(rng.between(10_000, 15_000)).then(() => '')]);
    const what = await endPod(world, leader, 'SIGKILL');
    stop.abort();
    const made = uuid
      ? await world.admin.get(VeleroResources.backups, uuid, world.veleroNamespace)
      : undefined;
    return {
      what: `${what}; ${!uuid ? 'no NAB identity was written in time' : made ? 'its Velero Backup already existed' : 'before its Velero Backup existed'}`,
      async recovered() {
        await sleep(1_500);
        await allReady(world, 'controllers');
        await bindsNamespace(world);
      },
    };
  },
};

/** search's database SIGKILLed (its volume stays): PostgreSQL recovers from its WAL and search resyncs. */
const databaseKilled: Fault = {
  name: 'search database (SIGKILL)',
  cheap: false,
  guarantee:
    "while its database is down, search answers 503 with the reason; once back, the index converges to exactly the API server's objects",
  async inject(world, rng) {
    const pod = rng.pick(await componentPods(world, 'search-db'));
    const what = await endPod(world, pod, 'SIGKILL');
    return {
      what,
      async recovered() {
        const from = performance.now();
        await sleep(1_500);
        await databaseBack(world, from);
      },
    };
  },
};

/** Every webhook Pod gone (scaled to 0) for a few seconds of the tenant's work, then scaled back. */
const webhooksGone: Fault = {
  name: 'webhooks, all replicas down',
  cheap: false,
  guarantee:
    "with no webhook serving, tenants are refused with a message (closed, never open); the cluster's own Pods still start; admission comes back by itself",
  async inject(world, rng): Promise<Injected> {
    const deployment = `${world.release}-webhooks`;
    const scale = (replicas: number) =>
      world.admin.patch(Resources.deployments, deployment, world.namespace, { spec: { replicas } });
    const replicas =
      (
        await world.admin.get<KubeObject & { spec: { replicas?: number } }>(
          Resources.deployments,
          deployment,
          world.namespace,
        )
      )?.spec.replicas ?? 2;
    await scale(0);
    // Gone from the API server, not only terminating: a terminating webhook Pod serves through its 5 s
    // preStop sleep (kube-proxy sends to terminating endpoints when no ready one is left). Until session
    // 32 the wait ended at termination, and the 2-5 s below fell inside that sleep: no request was refused.
    await until(
      'webhook Pods gone',
      async () => (await componentPods(world, 'webhooks', { terminating: true })).length === 0,
    );
    await sleep(rng.between(2_000, 5_000));
    await scale(replicas);
    return {
      what: `scaled ${deployment} to 0 until its Pods were gone, then back to ${replicas}`,
      async recovered() {
        await allReady(world, 'webhooks');
        await admits(world);
      },
    };
  },
};

/**
 * etcd and kube-apiserver stopped and started again on the same data, with the apiserver compacting
 * etcd's history every 10 s (the bench's flag): every watch of every component breaks, and resumes from
 * a version that is gone (410), so each informer must list again; nothing may be missed.
 */
const controlPlaneRestarted: Fault = {
  name: 'kube-apiserver and etcd restarted (history compacted)',
  cheap: false,
  // Velero's own calls fail while the API server is gone: a backup it ran then ends Failed, with its
  // reason, and the tenant's retry must complete.
  backupsMayFail: true,
  guarantee:
    'every informer resumes after the API server is back, listing again when its version was compacted away: nothing done before or after is missed',
  async inject(world) {
    if (!world.restartControlPlane) throw new Error('this run cannot restart the control plane');
    const started = performance.now();
    await world.restartControlPlane();
    return {
      what: `etcd and kube-apiserver stopped and started again (${((performance.now() - started) / 1000).toFixed(1)} s)`,
      async recovered() {
        for (const c of ['controllers', 'webhooks', 'search', 'search-collector']) await allReady(world, c);
        await bindsNamespace(world);
        await searchAnswers(world);
        await indexConverged(world);
        const caches = await cacheDifference(world, 30_000);
        if (caches) throw new Error(caches);
      },
    };
  },
};

/**
 * The node restarted as after a power cut: kubelet, kube-proxy, containerd and every container (all of
 * tenantkit's, Velero's, the database's and the tenant's Pods) killed at once, then the node started again
 * on the same disk. Every Pod must come back by itself and no tenant operation may be left stuck.
 */
const nodeRestarted: Fault = {
  name: 'node restarted (kubelet, containerd and every container killed)',
  cheap: false,
  // Velero's Pods die with the rest: a backup it ran then ends Failed, with its reason, and the
  // tenant's retry must complete.
  backupsMayFail: true,
  guarantee:
    'after a node restart every tenantkit Pod comes back by itself, and every tenant operation in flight ends completed, or failed with a reason and then completed on retry',
  async inject(world) {
    if (!world.restartNode) throw new Error('this run cannot restart the node');
    const started = performance.now();
    await world.restartNode();
    return {
      what: `kubelet, kube-proxy, containerd and every container killed; the node was Ready again after ${((performance.now() - started) / 1000).toFixed(1)} s`,
      async recovered() {
        for (const c of ['controllers', 'webhooks', 'search-db', 'search', 'search-collector', 'console'])
          await allReady(world, c);
        await veleroBack(world);
        await bindsNamespace(world);
        await admits(world);
        await searchAnswers(world);
        await indexConverged(world);
      },
    };
  },
};

/**
 * The disk of search's database (shared with the tenant's claim, as one node's disk is) or of Velero's
 * object store filled to its last byte for a few seconds of the tenant's work, then freed.
 */
const diskFull = (what: 'database' | 'store'): Fault => ({
  name: what === 'database' ? "search database's disk full" : "Velero's object store disk full",
  cheap: false,
  // Velero cannot write a backup into a full store: it ends Failed with its reason, and the retry
  // completes once there is space.
  backupsMayFail: what === 'store',
  guarantee:
    what === 'database'
      ? "while search's database cannot write, searches are answered from what is indexed or refused with a reason; nothing is corrupted, and once there is space the index converges to exactly the API server's objects"
      : "a backup Velero cannot write ends Failed with Velero's reason, its partial data removed with it; once there is space the tenant's next backup completes",
  async inject(world, rng) {
    if (!world.fillDisk) throw new Error('this run cannot fill disks');
    const full = await world.fillDisk(what);
    const heldMs = rng.between(5_000, 12_000);
    await sleep(heldMs);
    await full.release();
    return {
      what: `${(full.bytes / 2 ** 20).toFixed(0)} MiB written to fill it, freed after ${(heldMs / 1000).toFixed(1)} s`,
      async recovered() {
        if (what === 'store') {
          await veleroBack(world);
          // The store itself answers again: a listing of every backup's prefix (what Velero's deletes and
          // sync read), not an error for what a refused write left behind.
          if (world.bucket) {
            const bucket = world.bucket;
            await until('the object store lists its backups', async () => {
              await bucket('backups/');
              return true;
            });
          }
          return;
        }
        await databaseBack(world, performance.now());
      },
    };
  },
});

interface VeleroBackup extends KubeObject {
  status?: { phase?: string };
}

/** Velero's Pods (its server, its node-agent) ready again, and its storage location available. */
async function veleroBack(world: World): Promise<void> {
  await until('Velero and its node-agent ready', async () => {
    const pods = (
      await world.admin.list<Pod>(Resources.pods, {
        namespace: world.veleroNamespace,
        labelSelector: 'component=velero',
      })
    ).items.filter((p) => !p.metadata.deletionTimestamp);
    return pods.length >= 2 && pods.every((p) => p.status?.containerStatuses?.every((c) => c.ready));
  });
}

/** Velero's server Pod, or its node-agent's (on the one node). */
async function veleroPod(world: World, part: 'server' | 'node-agent'): Promise<Pod> {
  const pods = await world.admin.list<Pod>(Resources.pods, {
    namespace: world.veleroNamespace,
    labelSelector: part === 'server' ? 'deploy=velero' : 'name=node-agent',
  });
  const victim = pods.items.find((p) => !p.metadata.deletionTimestamp);
  if (!victim) throw new Error(`no Velero ${part} Pod`);
  return victim;
}

/**
 * Velero's server or its node-agent SIGKILLed while one of the tenant's file-system backups runs: Velero
 * marks a backup it finds InProgress at its start Failed, with its reason; the tenant sees that reason in
 * her NAB, and her retry completes.
 */
const veleroKilled = (part: 'server' | 'node-agent'): Fault => ({
  name: `Velero ${part} (SIGKILL during a backup)`,
  cheap: false,
  volumeBackups: true,
  backupsMayFail: true,
  guarantee:
    "a NonAdminBackup that Velero drops ends Failed with Velero's reason, its data and Velero objects are removed with it, and the tenant's next backup completes",
  async inject(world, rng) {
    let running: VeleroBackup | undefined;
    const deadline = Date.now() + 60_000;
    while (!running && Date.now() < deadline) {
      const backups = await world.admin.list<VeleroBackup>(VeleroResources.backups, {
        namespace: world.veleroNamespace,
      });
      running = backups.items.find((b) => b.status?.phase === 'InProgress');
      if (!running) await sleep(100);
    }
    await sleep(rng.between(0, 1_000));
    const victim = await veleroPod(world, part);
    const what = await endPod(world, victim, 'SIGKILL');
    return {
      what: `${what} ${running ? `while Backup ${running.metadata.name} ran` : '(no backup was running)'}`,
      async recovered() {
        await sleep(1_500);
        await veleroBack(world);
      },
    };
  },
});

/**
 * Velero's server or its node-agent SIGKILLed while it writes the tenant's files back: she deleted her
 * store, restores it from her volume backup, and the kill lands while its PodVolumeRestore runs. Velero
 * marks what it finds InProgress at its start Failed; she reads why in her NonAdminRestore, removes what
 * the dropped restore left, and restores again, which must bring back every byte.
 */
const veleroKilledInRestore = (part: 'server' | 'node-agent'): Fault => ({
  name: `Velero ${part} (SIGKILL during a volume restore)`,
  cheap: false,
  backupsMayFail: true,
  guarantee:
    "a NonAdminRestore of volume data that Velero drops ends Failed or PartiallyFailed with Velero's reason and counts, and the tenant's restore again brings back every byte",
  async inject(world, rng, round) {
    if (!world.volumeBackup || !world.volumeSums) throw new Error('this run has no volume backup to restore');
    const name = `${round}-vr`;
    await removeStore(world);
    await restoreStore(world, name);
    // Each round a crash point of the PodVolumeRestore: just made, taken by the node-agent, its data mover
    // Pod made, or writing (or the one the run was given: --restore-at).
    const stage = rng.pick(world.restoreCrashPoints ?? restoreCrashPoints);
    const restore = await runningRestore(world, name, stage);
    if (stage === 'New') await sleep(rng.between(0, 500));
    const pvrs = restore ? describeVolumeRestores(await volumeRestoresOf(world, restore)) : '';
    const victim = await veleroPod(world, part);
    const what = await endPod(world, victim, 'SIGKILL');
    return {
      what: `${what} ${restore ? `while Restore ${restore} ran (aimed at ${stage}: ${pvrs})` : `after NonAdminRestore ${name} had ended`}`,
      async recovered() {
        await sleep(1_500);
        await veleroBack(world);
      },
      settled: () => settleStoreRestore(world, name, 180_000),
    };
  },
});

export const faults: Fault[] = [
  ...byHow('SIGKILL'),
  ...byHow('delete'),
  leaderAtIdentity,
  databaseKilled,
  webhooksGone,
  controlPlaneRestarted,
  nodeRestarted,
  diskFull('database'),
  diskFull('store'),
  veleroKilled('server'),
  veleroKilled('node-agent'),
  veleroKilledInRestore('server'),
  veleroKilledInRestore('node-agent'),
];
