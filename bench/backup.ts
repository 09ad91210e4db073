// Benchmark: Velero queue positions of NonAdminBackups, and the cost of going through tenantkit.
// Parts a-c run on the local node (root) with a real Velero and its node-agent: ahead of the tenants,
// the admin's own file-system backups of two volumes (hold-1 of --hold-mib MiB, then hold-2 of a third of
// it) keep Velero busy for a time set by the data's size, so the tenants' Backups really wait in Velero's
// queue, and the head really finishes.
//  a. N NABs (default 1,000, in 10 namespaces) created at once while hold-1 runs: time until N Velero
//     Backups exist and every NAB is Created with status.queueInfo; API requests per NAB; CPU of this
//     process.
//  c. (before b, while hold-1 still runs) idle resync of every NAB (a full re-queue, a config change, a
//     controller restart): writes.
//  b. hold-1 finishes (Velero, once its volume is uploaded) and hold-2 starts: time until every NAB's
//     estimatedQueuePosition is current (one less), CPU, NAB status writes.
//  d. A real Velero (no node needed): backup + restore of a namespace of 500 ConfigMaps through tenantkit
//     vs directly.
//  e. The same Velero: a restore that writes all 500 ConfigMaps (deleted before each round) as a tenant,
//     every object checked by the restore guard as that tenant, vs the admin's own Velero Restore.
// The bench runs the controllers, not the webhooks: it writes the requester annotation on its
// NonAdminRestores itself, as the admission webhook would for user `bench-tenant` (namespace admin).
// Without the local node (not root), parts a-c are skipped with the reason.
//   node bench/backup.ts [--nabs 1000] [--hold-mib 3072] [--configmaps 500] [--rounds 5] [--skip-real]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalNode } from '../devenv/node/launch.ts';
import { startVelero } from '../devenv/velero/launch.ts';
import { registerNabController } from '../src/backup/controllers/backup/reconciler.ts';
import { registerNarController } from '../src/backup/controllers/restore/reconciler.ts';
import { RequesterAnnotation, requesterValue } from '../src/backup/model.ts';
import {
  type NonAdminBackup,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../src/crds/backup.ts';
import { type Backup, finishedPhases, type Restore, VeleroResources } from '../src/crds/velero.ts';
import { mapLimit } from '../src/kube/access.ts';
import { KubeClient } from '../src/kube/client.ts';
import { silentLogger } from '../src/kube/log.ts';
import { Manager } from '../src/kube/manager.ts';
import { type KubeObject, Resources, resourcePath } from '../src/kube/resources.ts';
import { benchArgs } from './args.ts';
import { deployStore, startBenchCluster, startVeleroOnNode, storeSums } from './node.ts';

const { values } = benchArgs('bench:backup', {
  nabs: { type: 'string', default: '1000' },
  'hold-mib': { type: 'string', default: '3072' },
  configmaps: { type: 'string', default: '500' },
  rounds: { type: 'string', default: '5' },
  'skip-real': { type: 'boolean', default: false },
});
const count = Number(values.nabs);
const namespaces = 10;
const veleroNs = 'velero';
const bench = await startBenchCluster({ node: true });
const { admin, cp } = bench;
const nabType = NonAdminBackupCrd.type;
const apply = { fieldManager: 'bench', force: true };
const finished = finishedPhases as readonly string[];

/** Counts every request a client sends (list and watch of the informers included), by method. */
function countRequests(client: KubeClient) {
  /** `positions`: writes that carry a queue position (status.queueInfo). */
  const counts = { GET: 0, writes: 0, positions: 0 };
  const request = client.request.bind(client);
  client.request = ((method, path, params) => {
    if (method === 'GET') counts.GET++;
    else counts.writes++;
    if (method !== 'GET' && JSON.stringify(params?.body ?? '').includes('"queueInfo"')) counts.positions++;
    return request(method, path, params);
  }) as KubeClient['request'];
  return counts;
}

function startControllers() {
  // A client of its own, so its counters hold the controllers' requests only. Only the NonAdminBackup and
  // NonAdminRestore controllers run (the capability's other controllers would add their own writes).
  const client = KubeClient.fromKubeconfig({ yaml: cp.adminKubeconfig });
  const requests = countRequests(client);
  const manager = new Manager({ client, logger: silentLogger, component: 'bench', resyncPeriodMs: 0 });
  registerNabController(manager);
  registerNarController(manager);
  const nabs = manager.informer<NonAdminBackup>(nabType);
  const stop = new AbortController();
  const done = manager.start(stop.signal);
  return {
    client,
    requests,
    manager,
    nabs,
    stop: async () => {
      stop.abort();
      await done;
    },
  };
}

async function waitFor(probe: () => boolean | Promise<boolean>, pollMs = 50): Promise<void> {
  while (!(await probe())) await new Promise((r) => setTimeout(r, pollMs));
}

const cpuMs = (since: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(since);
  return Math.round((d.user + d.system) / 1000);
};
const position = (n: NonAdminBackup) => n.status?.queueInfo?.estimatedQueuePosition;

async function setConfig(veleroNamespace: string, annotation?: string) {
  await admin.apply(
    NonAdminBackupConfigCrd.type,
    {
      metadata: { name: 'cluster', ...(annotation ? { annotations: { 'bench/touch': annotation } } : {}) },
      // No per-namespace share of Velero's queue: part a puts 100 NABs in each namespace at once.
      spec: { nonAdmin: { enable: true, veleroNamespace, maxQueuedBackupsPerNamespace: 0 } },
    } as KubeObject,
    apply,
  );
}

const out: string[] = [];
const say = (line: string) => {
  out.push(line);
  console.error(line);
};
const veleroPhase = async (name: string) =>
  (await admin.get<Backup>(VeleroResources.backups, name, veleroNs))?.status?.phase ?? '';

/** Parts a-c: N NABs queued behind the admin's file-system backups on the node. */
async function queueParts(node: LocalNode) {
  const holdMib = Number(values['hold-mib']);
  const holds = [
    { ns: 'hold-1', mib: holdMib },
    { ns: 'hold-2', mib: Math.max(256, Math.round(holdMib / 3 / 16) * 16) },
  ];
  const velero = await startVeleroOnNode(bench, node, veleroNs);
  let ctl: ReturnType<typeof startControllers> | undefined;
  try {
    await setConfig(veleroNs);
    for (const { ns, mib } of holds) {
      await admin.create(Resources.namespaces, { metadata: { name: ns } });
      await deployStore(admin, node, ns, mib);
    }
    for (const { ns } of holds) await storeSums(admin, ns);
    say(`backup queue benchmark: ${count} NonAdminBackups in ${namespaces} namespaces`);
    say(
      `  parts a-c: Velero ${velero.binaries.veleroVersion} with its node-agent on the local node; ahead of the tenants, the admin's own file-system backups of hold-1 (${holds[0]!.mib} MiB) and then hold-2 (${holds[1]!.mib} MiB)`,
    );
    // A second apart, so that Velero's order (by creation second) is theirs.
    for (const { ns } of holds) {
      await admin.create(VeleroResources.backups, {
        metadata: { name: ns, namespace: veleroNs },
        spec: { includedNamespaces: [ns], defaultVolumesToFsBackup: true },
      } as KubeObject);
      await new Promise((r) => setTimeout(r, 1_100));
    }
    await waitFor(async () => (await veleroPhase('hold-1')) === 'InProgress', 100);
    const holdStarted = performance.now();

    // a. N NABs at once.
    ctl = startControllers();
    await waitFor(() => ctl!.manager.hasSynced());
    await ctl.manager.idle();
    const req0 = { ...ctl.requests };
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const names = Array.from({ length: count }, (_, i) => ({
      namespace: `tenant-${i % namespaces}`,
      name: `nab-${String(i).padStart(4, '0')}`,
    }));
    await mapLimit(names, 32, ({ namespace, name }) =>
      admin.create(nabType, { metadata: { name, namespace }, spec: { backupSpec: {} } } as KubeObject),
    );
    const createdMs = performance.now() - t0;
    const backupsInformer = ctl.manager.informer<Backup>(VeleroResources.backups);
    let backupsAt = 0;
    await waitFor(() => {
      const c = ctl!;
      if (!backupsAt && backupsInformer.list().length >= count + holds.length) backupsAt = performance.now();
      const all = c.nabs.list();
      return (
        all.length >= count && all.every((n) => n.status?.phase === 'Created' && position(n) !== undefined)
      );
    }, 20);
    const convergeMs = performance.now() - t0;
    const convergeCpu = cpuMs(cpu0);
    await ctl.manager.idle();
    const reqA = { GET: ctl.requests.GET - req0.GET, writes: ctl.requests.writes - req0.writes };
    const sorted = ctl.nabs
      .list()
      .map((n) => position(n)!)
      .sort((a, b) => a - b);
    const consecutive = sorted.every((p, i) => p === sorted[0]! + i);
    say(
      `a. ${count} NABs created at once (admin's creates took ${Math.round(createdMs)} ms), hold-1 running`,
    );
    say(`   -> ${count} Velero Backups exist:            ${Math.round(backupsAt - t0)} ms`);
    say(`   -> every NAB Created with queueInfo:        ${Math.round(convergeMs)} ms (target <= 30 s)`);
    say(
      `   positions are ${sorted[0]}..${sorted.at(-1)} without a gap: ${consecutive} (hold-1 and hold-2 are the 2 ahead)`,
    );
    say(
      `   controller API requests: ${reqA.writes} writes + ${reqA.GET} GETs = ${((reqA.writes + reqA.GET) / count).toFixed(2)} per NAB (target <= 4)`,
    );
    say(
      '   (writes: finalizer patch, status patch (NACUUID), Backup create, status patch (Created + position),',
    );
    say(
      "    and one more where Velero's queue marked the Backup Queued after that; GETs: none, reads come from caches)",
    );
    say(`   CPU of the bench process (controllers + admin's creates): ${convergeCpu} ms`);

    // c. Idle resyncs, while hold-1 still runs. First Velero settles: its queue marks every new Backup
    // Queued with its position (tenantkit mirrors each into the NAB's status), which takes a while for
    // 1,000; then nothing changes but hold-1's progress.
    const settleStarted = performance.now();
    const nabBackups = new Set(ctl.nabs.list().map((n) => n.status?.veleroBackup?.name));
    await waitFor(() => {
      const queued = backupsInformer
        .list()
        .filter((b) => nabBackups.has(b.metadata.name) && b.status?.phase === 'Queued');
      return queued.length === count;
    }, 100);
    await ctl.manager.idle();
    await new Promise((r) => setTimeout(r, 1_000));
    await ctl.manager.idle();
    const settledMs = performance.now() - settleStarted;
    let w = ctl.requests.writes;
    ctl.manager.resync();
    await ctl.manager.idle();
    const resyncWrites = ctl.requests.writes - w;
    w = ctl.requests.writes;
    await setConfig(veleroNs, 'touched');
    await new Promise((r) => setTimeout(r, 500));
    await ctl.manager.idle();
    const configWrites = ctl.requests.writes - w;
    await ctl.stop();
    ctl = startControllers();
    await waitFor(() => ctl!.manager.hasSynced());
    await new Promise((r) => setTimeout(r, 300));
    await ctl.manager.idle();
    const restartWrites = ctl.requests.writes;
    const stillRunning = (await veleroPhase('hold-1')) === 'InProgress';
    say(
      `c. idle resync of ${count} NABs, writes (target 0), once Velero had marked all Queued (${(settledMs / 1000).toFixed(1)} s after a):`,
    );
    say(`   every NAB re-queued (manager.resync):       ${resyncWrites}`);
    say(`   NonAdminBackupConfig touched (config watch): ${configWrites}`);
    say(`   controllers restarted (fresh caches):       ${restartWrites}`);
    say(
      `   hold-1 still running at the end of c: ${stillRunning}${stillRunning ? '' : ' (INVALID: the queue moved during a or c; raise --hold-mib)'}`,
    );

    // b. hold-1 finishes; hold-2 starts; every NAB moves up by one.
    const before = new Map(
      ctl.nabs.list().map((n) => [`${n.metadata.namespace}/${n.metadata.name}`, position(n)!]),
    );
    const w1 = ctl.requests.writes;
    const p1 = ctl.requests.positions;
    await waitFor(async () => finished.includes(await veleroPhase('hold-1')), 20);
    const cpu1 = process.cpuUsage();
    const t1 = performance.now();
    const heldMs = t1 - holdStarted;
    const expected = (n: NonAdminBackup) => before.get(`${n.metadata.namespace}/${n.metadata.name}`)! - 1;
    const c = ctl;
    await waitFor(() => c.nabs.list().every((n) => position(n) === expected(n)), 10);
    const moveMs = performance.now() - t1;
    const moveCpu = cpuMs(cpu1);
    await ctl.manager.idle();
    const moveWrites = ctl.requests.writes - w1;
    const positionWrites = ctl.requests.positions - p1;
    const secondRunning = (await veleroPhase('hold-2')) === 'InProgress';
    say(
      `b. hold-1 finishes (${await veleroPhase('hold-1')}, in Velero for ${(heldMs / 1000).toFixed(1)} s after part a began), ${count} NABs queued behind hold-2`,
    );
    say(`   -> every estimatedQueuePosition current:    ${Math.round(moveMs)} ms (target <= 5 s)`);
    say(`   CPU of the bench process:                   ${moveCpu} ms (target <= 1 s)`);
    say(
      `   NAB status writes:                          ${moveWrites}: ${positionWrites} with the new position (${count} changed), ${moveWrites - positionWrites} mirroring Velero's own status.queuePosition of the Backup`,
    );
    say(
      `   hold-2 running at the end of b: ${secondRunning}${secondRunning ? '' : ' (the queue moved again)'}`,
    );
  } finally {
    await ctl?.stop();
    // Velero would go on with the 1,000 queued backups: stopped, so that parts d-e have the machine.
    await velero.stop();
  }
}

try {
  for (let i = 0; i < namespaces; i++)
    await admin.create(Resources.namespaces, { metadata: { name: `tenant-${i}` } });
  if (bench.node) await queueParts(bench.node);
  else say(`parts a-c skipped: they need the local node (${bench.noNode})`);
  let ctl: ReturnType<typeof startControllers>;

  // d. A real Velero.
  if (!values['skip-real']) {
    const realNs = 'velero-real';
    const veleroDir = await mkdtemp(join(tmpdir(), 'tenantkit-bench-velero-'));
    const velero = await startVelero({
      kubeconfigPath: cp.adminKubeconfigPath,
      namespace: realNs,
      dir: veleroDir,
      progress: (l) => console.error(l),
    });
    try {
      await setConfig(realNs);
      ctl = startControllers();
      await waitFor(() => ctl.manager.hasSynced());
      const data = 'bench-data';
      await admin.create(Resources.namespaces, { metadata: { name: data } });
      // The tenant whose rights every restored object is checked against: admin of the namespace.
      const tenant = { username: 'bench-tenant', groups: ['system:authenticated'] };
      await admin.create(Resources.roleBindings, {
        metadata: { name: 'bench-tenant-admin', namespace: data },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: tenant.username }],
      } as KubeObject);
      const cms = Array.from({ length: Number(values.configmaps) }, (_, i) => `cm-${i}`);
      const createConfigMaps = () =>
        mapLimit(cms, 16, (name) =>
          admin.create(Resources.configMaps, {
            metadata: { name, namespace: data, labels: { bench: 'data' } },
            data: { key: `value-${name}` },
          } as KubeObject),
        );
      await createConfigMaps();
      const poll = async <T>(probe: () => Promise<T | undefined>): Promise<T> => {
        for (;;) {
          const v = await probe();
          if (v !== undefined) return v;
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      const direct = async (kind: 'backup' | 'restore', name: string, spec: object) => {
        const type = kind === 'backup' ? VeleroResources.backups : VeleroResources.restores;
        const t = performance.now();
        await admin.create(type, { metadata: { name, namespace: realNs }, spec } as KubeObject);
        const o = await poll(async () => {
          const x = await admin.get<Backup | Restore>(type, name, realNs);
          return finished.includes(x?.status?.phase ?? '') ? x : undefined;
        });
        return { ms: performance.now() - t, phase: o!.status!.phase };
      };
      const viaNab = async (name: string) => {
        const t = performance.now();
        await admin.create(nabType, {
          metadata: { name, namespace: data },
          spec: { backupSpec: {} },
        } as KubeObject);
        const o = await poll(async () => {
          const x = await admin.get<NonAdminBackup>(nabType, name, data);
          return finished.includes(x?.status?.veleroBackup?.status?.phase ?? '') ? x : undefined;
        });
        return { ms: performance.now() - t, phase: o.status!.veleroBackup!.status!.phase };
      };
      const viaNar = async (name: string, backupName: string) => {
        const t = performance.now();
        await admin.create(NonAdminRestoreCrd.type, {
          metadata: { name, namespace: data, annotations: { [RequesterAnnotation]: requesterValue(tenant) } },
          spec: { restoreSpec: { backupName } },
        } as KubeObject);
        const o = await poll(async () => {
          const x = await admin.get<NonAdminRestore>(NonAdminRestoreCrd.type, name, data);
          return finished.includes(x?.status?.veleroRestore?.status?.phase ?? '') ? x : undefined;
        });
        return { ms: performance.now() - t, phase: o.status!.veleroRestore!.status!.phase };
      };
      say(
        `d. real Velero (velero server ${velero.binaries.veleroVersion}): ${cms.length} ConfigMaps, backup then restore (objects exist, so restore skips them)`,
      );
      // The two paths alternate which goes first, so that whatever Velero or the machine does in the
      // background (its resyncs, the other processes here) falls on both alike; the median decides.
      const ratios: number[] = [];
      for (let round = 0; round < Number(values.rounds); round++) {
        const viaTenantkit = async () => {
          const b = await viaNab(`real-${round}`);
          const r = await viaNar(`real-${round}`, `real-${round}`);
          return { b, r };
        };
        const viaAdmin = async () => {
          const b = await direct('backup', `direct-${round}`, { includedNamespaces: [data] });
          const r = await direct('restore', `direct-${round}`, {
            backupName: `direct-${round}`,
            includedNamespaces: [data],
          });
          return { b, r };
        };
        const first = round % 2 === 0 ? 'tenantkit' : 'admin';
        const t = first === 'tenantkit' ? await viaTenantkit() : undefined;
        const d = await viaAdmin();
        const tk = t ?? (await viaTenantkit());
        const ratio = (tk.b.ms + tk.r.ms) / (d.b.ms + d.r.ms);
        ratios.push(ratio);
        say(
          `   round ${round + 1} (${first} first): tenantkit backup ${Math.round(tk.b.ms)} ms (${tk.b.phase}) + restore ${Math.round(tk.r.ms)} ms (${tk.r.phase}); direct backup ${Math.round(d.b.ms)} ms (${d.b.phase}) + restore ${Math.round(d.r.ms)} ms (${d.r.phase}); ratio ${ratio.toFixed(2)}`,
        );
      }
      const sorted = [...ratios].sort((a, b) => a - b);
      const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
      say(
        `   median ratio over ${ratios.length} rounds: ${median.toFixed(2)} (target <= 1.2); min ${sorted[0]!.toFixed(2)}, max ${sorted.at(-1)!.toFixed(2)}`,
      );
      say(
        '   (a backup that Velero leaves Queued until its one-minute recheck shows as ~60 s more on either side)',
      );

      // e. Restores that write every object: the ConfigMaps go before each restore.
      const deleteConfigMaps = async () => {
        await admin.request('DELETE', resourcePath(Resources.configMaps, data), {
          query: { labelSelector: 'bench=data' },
        });
        await poll(async () =>
          (await admin.list(Resources.configMaps, { namespace: data, labelSelector: 'bench=data' })).items
            .length === 0
            ? true
            : undefined,
        );
      };
      say(
        `e. restore writing ${cms.length} ConfigMaps: tenant NonAdminRestore (restore guard on) vs admin's Velero Restore`,
      );
      const writeRatios: number[] = [];
      const perObject: number[] = [];
      for (let round = 0; round < Number(values.rounds); round++) {
        const asTenant = async () => {
          await deleteConfigMaps();
          return viaNar(`write-${round}`, 'real-0');
        };
        const asAdmin = async () => {
          await deleteConfigMaps();
          return direct('restore', `write-${round}`, { backupName: 'direct-0', includedNamespaces: [data] });
        };
        const first = round % 2 === 0 ? 'tenant' : 'admin';
        const t = first === 'tenant' ? await asTenant() : undefined;
        const d = await asAdmin();
        const tk = t ?? (await asTenant());
        const restored = (
          await admin.list(Resources.configMaps, { namespace: data, labelSelector: 'bench=data' })
        ).items.length;
        writeRatios.push(tk.ms / d.ms);
        perObject.push((tk.ms - d.ms) / cms.length);
        say(
          `   round ${round + 1} (${first} first): tenant ${Math.round(tk.ms)} ms (${tk.phase}), admin ${Math.round(d.ms)} ms (${d.phase}), ratio ${(tk.ms / d.ms).toFixed(2)}, ${restored} ConfigMaps present after`,
        );
      }
      const medianOf = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
      say(
        `   median ratio over ${writeRatios.length} rounds: ${medianOf(writeRatios).toFixed(2)} (target <= 1.3); wall-clock difference ${medianOf(perObject).toFixed(2)} ms per object (median of the per-round difference / ${cms.length})`,
      );
      // The guard's own request per object, timed apart from Velero (whose client limit hides it in the
      // ratio): a dry-run create as the tenant (an existing object is read too only under
      // existingResourcePolicy: update, or for a ServiceAccount).
      const tenantClient = KubeClient.fromKubeconfig({
        yaml: await cp.userKubeconfig(tenant.username, tenant.groups),
      });
      const probeStart = performance.now();
      for (const name of cms) {
        await tenantClient
          .request('POST', resourcePath(Resources.configMaps, data), {
            body: {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name, namespace: data },
              data: { key: name },
            },
            query: { dryRun: 'All' },
          })
          .catch(() => {});
      }
      say(
        `   the guard's check (a dry-run create as the tenant), sequential from this process: ${((performance.now() - probeStart) / cms.length).toFixed(2)} ms per object`,
      );
      await ctl.stop();
    } finally {
      await velero.stop();
      await rm(veleroDir, { recursive: true, force: true });
    }
  }
  console.log(out.join('\n'));
} finally {
  await bench.stop();
}
