// The tenant's volume data restored while Velero is hit: she deletes her store (its Deployment and its
// claim), restores it from her volume backup with a NonAdminRestore (Velero's node-agent writes the claim's
// files back), and the end is checked byte for byte against the sums her store printed before the first
// fault. A restore Velero drops must end Failed or PartiallyFailed with Velero's reason in her status; she
// then removes what it left and restores again, and that must bring her files back.
import { setTimeout as sleep } from 'node:timers/promises';
import { type NonAdminRestore, NonAdminRestoreCrd } from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import { ApiError } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { storeSums } from '../node.ts';
import { settledEnd } from './checks.ts';
import type { FaultWork, RestoreCrashPoint, World } from './model.ts';

const gone = (err: unknown) => {
  if (!(err instanceof ApiError && err.status === 404)) throw err;
};

/**
 * Her store removed by her: its Deployment (its ReplicaSets and Pods with it), any Pod a dropped restore
 * left, and its claim; resolves once none of them is left.
 */
export async function removeStore(world: World, timeoutMs = 120_000): Promise<void> {
  const { tenant, home } = world;
  await tenant.delete(Resources.deployments, 'store', home).catch(gone);
  await tenant.delete(Resources.persistentVolumeClaims, 'data', home).catch(gone);
  for (const deadline = Date.now() + timeoutMs; ; await sleep(250)) {
    const left: string[] = [];
    for (const type of [Resources.replicaSets, Resources.pods]) {
      for (const o of (await tenant.list(type, { namespace: home, labelSelector: 'app=store' })).items) {
        left.push(`${type.kind} ${o.metadata.name}`);
        // A Pod (ReplicaSet) a dropped restore made may belong to nothing that is being deleted.
        if (!o.metadata.deletionTimestamp) await tenant.delete(type, o.metadata.name!, home).catch(gone);
      }
    }
    if (await tenant.get(Resources.persistentVolumeClaims, 'data', home)) left.push('claim data');
    if (!left.length) return;
    if (Date.now() > deadline)
      throw new Error(`her store not gone after ${timeoutMs / 1000} s: ${left.join(', ')}`);
  }
}

/** Her NonAdminRestore `name` of her volume backup into her namespace. */
export async function restoreStore(world: World, name: string): Promise<void> {
  await world.tenant.create(NonAdminRestoreCrd.type, {
    metadata: { name, namespace: world.home },
    spec: { restoreSpec: { backupName: world.volumeBackup } },
  } as KubeObject);
}

interface VolumeRestore extends KubeObject {
  status?: { phase?: string; progress?: { bytesDone?: number; totalBytes?: number } };
}

/** The PodVolumeRestores Velero made for the Restore `restore`: their phases and bytes, one line. */
export async function volumeRestoresOf(world: World, restore: string): Promise<VolumeRestore[]> {
  const all = await world.admin.list<VolumeRestore>(VeleroResources.podVolumeRestores, {
    namespace: world.veleroNamespace,
  });
  return all.items.filter((p) =>
    p.metadata.ownerReferences?.some((o) => o.kind === 'Restore' && o.name === restore),
  );
}

export const describeVolumeRestores = (pvrs: VolumeRestore[]) =>
  pvrs.length
    ? pvrs
        .map(
          (p) =>
            `PodVolumeRestore ${p.status?.phase ?? 'New'} ${p.status?.progress?.bytesDone ?? 0}/${p.status?.progress?.totalBytes ?? '?'} B`,
        )
        .join(', ')
    : 'no PodVolumeRestore yet';

/** A PodVolumeRestore's phases in the order Velero's node-agent moves it through them. */
export const volumeRestoreStages = ['New', 'Accepted', 'Prepared', 'InProgress', 'Completed'] as const;

const stageOf = (p: VolumeRestore) => {
  const at = volumeRestoreStages.indexOf((p.status?.phase || 'New') as (typeof volumeRestoreStages)[number]);
  // Failed, Canceled: as far as it goes.
  return at < 0 ? volumeRestoreStages.length : at;
};

/**
 * Waits until Velero runs her restore `name` and its PodVolumeRestore has reached `point` (made, taken by
 * the node-agent, its data mover Pod made, or writing her files). Resolves with the Velero Restore's name, or undefined when the
 * restore ended before (then nothing was in flight to hit).
 */
export async function runningRestore(
  world: World,
  name: string,
  point: RestoreCrashPoint,
  timeoutMs = 120_000,
): Promise<string | undefined> {
  const withPod = point === 'Pod made';
  const wanted = volumeRestoreStages.indexOf(withPod ? 'Accepted' : point);
  for (const deadline = Date.now() + timeoutMs; ; await sleep(25)) {
    const nar = await world.admin.get<NonAdminRestore>(NonAdminRestoreCrd.type, name, world.home);
    const restore = nar?.status?.veleroRestore?.name;
    if (restore) {
      const live = await world.admin.get<KubeObject & { status?: { phase?: string } }>(
        VeleroResources.restores,
        restore,
        world.veleroNamespace,
      );
      const phase = live?.status?.phase;
      if (phase && !['New', 'InProgress'].includes(phase)) return undefined;
      const pvrs = phase === 'InProgress' ? await volumeRestoresOf(world, restore) : [];
      if (!withPod && pvrs.some((p) => stageOf(p) >= wanted)) return restore;
      // Past Accepted is too late for the Pod's moment, but still in flight: kill there.
      if (withPod && pvrs.some((p) => stageOf(p) > wanted)) return restore;
      for (const p of withPod ? pvrs.filter((p) => stageOf(p) === wanted) : []) {
        if (await world.admin.get(Resources.pods, p.metadata.name!, world.veleroNamespace)) return restore;
      }
    }
    if (Date.now() > deadline)
      throw new Error(`NonAdminRestore ${name} not run by Velero within ${timeoutMs / 1000} s`);
  }
}

/** Why her store does not hold exactly the files it held before the first fault, or undefined. */
async function storeProblem(world: World, timeoutMs: number): Promise<string | undefined> {
  const sums = await Promise.race([
    storeSums(world.admin, world.home),
    sleep(timeoutMs).then(() => undefined),
  ]);
  if (sums === undefined) return `her restored store printed no checksums within ${timeoutMs / 1000} s`;
  if (sums === world.volumeSums) return undefined;
  const want = new Set(world.volumeSums?.split('\n'));
  const differing = sums.split('\n').filter((l) => !want.has(l));
  return `her restored store's files differ from what she backed up: ${differing.length} of ${want.size} lines (${differing.slice(0, 2).join('; ')})`;
}

/** A restore of her store ended: Completed with her files back, or (`mayFail`) failed with Velero's reason. */
async function restoreEnd(
  world: World,
  name: string,
  mayFail: boolean,
  timeoutMs: number,
): Promise<{ problem?: string; failed?: string }> {
  const end = await settledEnd(world, 'restore', name, mayFail, timeoutMs);
  if (end.problem || end.failed) return end;
  const problem = await storeProblem(world, 120_000);
  return problem ? { problem: `NonAdminRestore ${name} Completed, but ${problem}` } : {};
}

/**
 * The end of her restore `name` that a fault hit: right when it completed with her files, or when it
 * failed with Velero's reason and her second try (after she removed what the first left) completed with
 * them.
 */
export async function settleStoreRestore(world: World, name: string, timeoutMs: number): Promise<FaultWork> {
  const work: FaultWork = { restores: [name], wrong: [], failedWithReason: 0, retriesCompleted: 0, seen: [] };
  const first = await restoreEnd(world, name, true, timeoutMs);
  if (first.problem) {
    work.wrong.push(first.problem);
    return work;
  }
  if (!first.failed) {
    work.seen.push('volume restore: Completed, every file back');
    return work;
  }
  work.failedWithReason++;
  work.seen.push(
    `volume restore: ${first.failed.replace(/\b[a-z0-9-]+-[0-9a-f]{8}-[0-9a-f-]{27}\b/g, '<restore>')}`,
  );
  const retry = `${name}-retry`;
  work.restores.push(retry);
  try {
    await removeStore(world);
    await restoreStore(world, retry);
  } catch (err) {
    work.wrong.push(`retry of ${name}: ${(err as Error).message}`);
    return work;
  }
  const second = await restoreEnd(world, retry, false, timeoutMs);
  if (second.problem) work.wrong.push(`retry after a failure: ${second.problem}`);
  else work.retriesCompleted++;
  return work;
}
