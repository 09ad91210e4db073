import { backup } from '../src/backup/index.ts';
import { RequesterAnnotation, requesterValue } from '../src/backup/model.ts';
import {
  type NonAdminBackup,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
} from '../src/crds/backup.ts';
import { finishedPhases, VeleroResources } from '../src/crds/velero.ts';
import { silentLogger } from '../src/kube/log.ts';
import { Manager } from '../src/kube/manager.ts';
import { type KubeObject, Resources } from '../src/kube/resources.ts';
import { benchArgs } from './args.ts';
import {
  deployStore,
  fillArgs,
  poll,
  requireNode,
  startBenchCluster,
  startVeleroOnNode,
  storeSums,
} from './node.ts';

const { values } = benchArgs('bench:volumes', {
  mib: { type: 'string', default: '1024' },
  rounds: { type: 'string', default: '5' },
  tenants: { type: 'string', default: '3' },
  'tenant-mib': { type: 'string', default: '512' },
});
const mib = Number(values.mib);
const out: string[] = [];
const say = (line: string) => {
  out.push(line);
  console.error(line);
};
const finished = finishedPhases as readonly string[];
const veleroNs = 'velero';
const tenant = { username: 'bench-tenant', groups: ['system:authenticated'] };

requireNode('bench/volumes.ts');
const bench = await startBenchCluster({ node: true });
const { admin } = bench;
const node = bench.node!;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const sums = (ns: string) => storeSums(admin, ns);

/** A namespace the tenant administers, with a claim and a Deployment that fills it with `size` MiB. */
async function dataNamespace(name: string, size: number) {
  const objects: [typeof Resources.namespaces, KubeObject][] = [
    [Resources.namespaces, { metadata: { name } }],
    [
      Resources.roleBindings,
      {
        metadata: { name: 'bench-tenant-admin', namespace: name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: tenant.username }],
      } as KubeObject,
    ],
  ];
  for (const [type, object] of objects) await admin.create(type, object);
  await deployStore(admin, node, name, size);
  return sums(name);
}

/** The mistake before each restore: the Deployment and its claim deleted, their Pod and volume gone. */
async function loseData(ns: string) {
  await admin.delete(Resources.deployments, 'store', ns);
  await admin.delete(Resources.persistentVolumeClaims, 'data', ns);
  await poll(async () =>
    (await admin.list(Resources.pods, { namespace: ns })).items.length === 0 &&
    (await admin.list(Resources.persistentVolumeClaims, { namespace: ns })).items.length === 0
      ? true
      : undefined,
  );
}

interface VeleroBackup extends KubeObject {
  status?: { phase?: string };
}
interface Pvb extends KubeObject {
  status?: { progress?: { bytesDone?: number; totalBytes?: number } };
}

/**
 * How long a value the tenant sees trails the value Velero has: each time Velero's value changes, the
 * time until the tenant's equals it (or until Velero's changes again); `worst` is the longest.
 */
class Trail {
  private want: string | undefined;
  private since = 0;
  private matched = true;
  worst = 0;
  /** How many values Velero's side took. */
  values = 0;
  observe(now: number, want: string, got: string) {
    if (want !== this.want) {
      if (!this.matched) this.worst = Math.max(this.worst, now - this.since);
      this.values++;
      this.want = want;
      this.since = now;
      this.matched = false;
    }
    if (!this.matched && got === want) {
      this.matched = true;
      this.worst = Math.max(this.worst, now - this.since);
    }
  }
}

const nabPhase = (n: NonAdminBackup | undefined) => n?.status?.veleroBackup?.status?.phase ?? '';
const narPhase = (n: NonAdminRestore | undefined) => n?.status?.veleroRestore?.status?.phase ?? '';

/** A tenant's backup and restore of `ns`; times in ms. */
async function viaTenantkit(ns: string, original: string) {
  let t = performance.now();
  await admin.create(NonAdminBackupCrd.type, {
    metadata: { name: 'bench', namespace: ns },
    spec: { backupSpec: { defaultVolumesToFsBackup: true } },
  } as KubeObject);
  const nab = await poll(async () => {
    const n = await admin.get<NonAdminBackup>(NonAdminBackupCrd.type, 'bench', ns);
    return finished.includes(nabPhase(n)) ? n : undefined;
  });
  const backupMs = performance.now() - t;
  await loseData(ns);
  t = performance.now();
  await admin.create(NonAdminRestoreCrd.type, {
    metadata: {
      name: 'bench',
      namespace: ns,
      annotations: { [RequesterAnnotation]: requesterValue(tenant) },
    },
    spec: { restoreSpec: { backupName: 'bench' } },
  } as KubeObject);
  const nar = await poll(async () => {
    const n = await admin.get<NonAdminRestore>(NonAdminRestoreCrd.type, 'bench', ns);
    return finished.includes(narPhase(n)) ? n : undefined;
  });
  const completedMs = performance.now() - t;
  const same = (await sums(ns)) === original;
  return {
    backupMs,
    backupPhase: nabPhase(nab),
    restoreMs: performance.now() - t,
    completedMs,
    restorePhase: narPhase(nar),
    same,
  };
}

/** The admin's own Velero Backup and Restore of `ns`; times in ms. */
async function direct(ns: string, original: string) {
  const done = (type: typeof VeleroResources.backups) =>
    poll(async () => {
      const o = await admin.get<KubeObject & { status?: { phase?: string } }>(type, `direct-${ns}`, veleroNs);
      return finished.includes(o?.status?.phase ?? '') ? o!.status!.phase! : undefined;
    });
  let t = performance.now();
  await admin.create(VeleroResources.backups, {
    metadata: { name: `direct-${ns}`, namespace: veleroNs },
    spec: { includedNamespaces: [ns], defaultVolumesToFsBackup: true },
  } as KubeObject);
  const backupPhase = await done(VeleroResources.backups);
  const backupMs = performance.now() - t;
  await loseData(ns);
  t = performance.now();
  await admin.create(VeleroResources.restores, {
    metadata: { name: `direct-${ns}`, namespace: veleroNs },
    spec: { backupName: `direct-${ns}`, includedNamespaces: [ns] },
  } as KubeObject);
  const restorePhase = await done(VeleroResources.restores);
  const completedMs = performance.now() - t;
  const same = (await sums(ns)) === original;
  return { backupMs, backupPhase, restoreMs: performance.now() - t, completedMs, restorePhase, same };
}

/** Part a: --rounds rounds of the tenant's and the admin's backup and restore of a volume of --mib MiB. */
async function partA(rounds: number, veleroVersion: string) {
  say(
    `a. file-system backup + restore of ${mib} MiB (${fillArgs(mib).join(' ')} as files x MiB + MiB), Velero ${veleroVersion} with kopia, ${rounds} rounds`,
  );
  const ratios: number[] = [];
  const tenantTimes: { backup: number; restore: number }[] = [];
  for (let round = 0; round < rounds; round++) {
    const ours = `tk-${round}`;
    const theirs = `direct-${round}`;
    const originals = [await dataNamespace(ours, mib), await dataNamespace(theirs, mib)];
    const first = round % 2 === 0 ? 'tenantkit' : 'admin';
    const t = first === 'tenantkit' ? await viaTenantkit(ours, originals[0]!) : undefined;
    const d = await direct(theirs, originals[1]!);
    const tk = t ?? (await viaTenantkit(ours, originals[0]!));
    const ratio = (tk.backupMs + tk.restoreMs) / (d.backupMs + d.restoreMs);
    ratios.push(ratio);
    tenantTimes.push({ backup: tk.backupMs, restore: tk.restoreMs });
    say(
      `   round ${round + 1} (${first} first): tenant backup ${s(tk.backupMs)} (${tk.backupPhase}), restore ${s(tk.completedMs)} to ${tk.restorePhase} / ${s(tk.restoreMs)} to data verified (${tk.same ? 'equal' : 'DIFFERENT'}); admin backup ${s(d.backupMs)} (${d.backupPhase}), restore ${s(d.completedMs)} / ${s(d.restoreMs)} (${d.same ? 'equal' : 'DIFFERENT'}); ratio ${ratio.toFixed(2)}`,
    );
    // Free the disk: the namespaces' volumes go (the kopia repositories stay in the bucket).
    for (const ns of [ours, theirs]) await admin.delete(Resources.namespaces, ns);
  }
  const sorted = [...ratios].sort((x, y) => x - y);
  say(
    `   median ratio tenant/admin ${median(ratios).toFixed(2)} (target <= 1.1); min ${sorted[0]!.toFixed(2)}, max ${sorted.at(-1)!.toFixed(2)}`,
  );
  say(
    `   tenant, median: NonAdminBackup created -> Completed ${s(median(tenantTimes.map((x) => x.backup)))} (${(mib / (median(tenantTimes.map((x) => x.backup)) / 1000)).toFixed(0)} MiB/s); NonAdminRestore created -> Pod Running with data verified ${s(median(tenantTimes.map((x) => x.restore)))}`,
  );
}

const stopControllers = new AbortController();
let controllers: Promise<void> | undefined;
try {
  const velero = await startVeleroOnNode(bench, node, veleroNs);
  try {
    await admin.apply(
      NonAdminBackupConfigCrd.type,
      {
        metadata: { name: 'cluster' },
        spec: { nonAdmin: { enable: true, veleroNamespace: veleroNs, maxQueuedBackupsPerNamespace: 0 } },
      } as KubeObject,
      { fieldManager: 'bench', force: true },
    );
    const manager = new Manager({ client: admin, logger: silentLogger, component: 'bench' });
    await backup.controllers?.({ client: admin, manager, namespace: 'tenantkit-system' });
    controllers = manager.start(stopControllers.signal);
    await poll(async () => (manager.hasSynced() ? true : undefined));

    // a. One volume, backed up and restored through tenantkit and directly (--rounds 0 skips it).
    const rounds = Number(values.rounds);
    if (rounds > 0) await partA(rounds, velero.binaries.veleroVersion);

    // b. Tenants backing up at once, a second apart (so that Velero's queue order, by creation second,
    // is known to the bench as well).
    const count = Number(values.tenants);
    const sizes = Array.from({ length: count }, (_, i) => Number(values['tenant-mib']) * (i + 1));
    const spaces = sizes.map((_, i) => `tenant-${i}`);
    for (const [i, ns] of spaces.entries()) await dataNamespace(ns, sizes[i]!);
    say(
      `b. ${count} tenants back up at once (${sizes.join(', ')} MiB), sampled every 100 ms: how long each NonAdminBackup's status differs from Velero's`,
    );
    const trails = spaces.map(() => ({ phase: new Trail(), bytes: new Trail(), position: new Trail() }));
    for (const ns of spaces) {
      await admin.create(NonAdminBackupCrd.type, {
        metadata: { name: 'together', namespace: ns },
        spec: { backupSpec: { defaultVolumesToFsBackup: true } },
      } as KubeObject);
      await new Promise((r) => setTimeout(r, 1_100));
    }
    let last: { nabs: (NonAdminBackup | undefined)[]; pvbs: Pvb[] } = { nabs: [], pvbs: [] };
    for (;;) {
      // The tenants' view first, then Velero's: a change of Velero's between the two reads counts as
      // not yet seen by the tenant (until the next sample), so the figures never flatter tenantkit.
      const nabs = await Promise.all(
        spaces.map((ns) => admin.get<NonAdminBackup>(NonAdminBackupCrd.type, 'together', ns)),
      );
      const backups = (await admin.list<VeleroBackup>(VeleroResources.backups, { namespace: veleroNs }))
        .items;
      const pvbs = (await admin.list<Pvb>(VeleroResources.podVolumeBackups, { namespace: veleroNs })).items;
      const now = performance.now();
      for (const [i, nab] of nabs.entries()) {
        const own = backups.find((b) => b.metadata.name === nab?.status?.veleroBackup?.name);
        const phase = own?.status?.phase ?? '';
        trails[i]!.phase.observe(now, phase, nabPhase(nab));
        const mine = pvbs.filter((p) => p.metadata.labels?.['velero.io/backup-name'] === own?.metadata.name);
        const done = mine.reduce((sum, p) => sum + (p.status?.progress?.bytesDone ?? 0), 0);
        trails[i]!.bytes.observe(
          now,
          String(done),
          String(nab?.status?.fileSystemPodVolumeBackups?.bytesDone ?? 0),
        );
        // Velero's queue: Backups not finished, created in an earlier second, are ahead of a waiting one.
        const ahead =
          ['', 'New', 'Queued'].includes(phase) && own
            ? backups.filter(
                (b) =>
                  ['', 'New', 'Queued', 'ReadyToStart', 'InProgress'].includes(b.status?.phase ?? '') &&
                  b.metadata.creationTimestamp! < own.metadata.creationTimestamp!,
              ).length
            : 0;
        if (own)
          trails[i]!.position.observe(
            now,
            String(ahead),
            String(nab?.status?.queueInfo?.estimatedQueuePosition ?? 0),
          );
      }
      last = { nabs, pvbs };
      if (nabs.every((n) => finished.includes(nabPhase(n)))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const [i, ns] of spaces.entries()) {
      const nab = last.nabs[i];
      const own = last.pvbs.filter(
        (p) => p.metadata.labels?.['velero.io/backup-name'] === nab?.status?.veleroBackup?.name,
      );
      const total = own.reduce((sum, p) => sum + (p.status?.progress?.totalBytes ?? 0), 0);
      const reported = nab?.status?.fileSystemPodVolumeBackups?.totalBytes;
      const t = trails[i]!;
      say(
        `   ${ns} (${sizes[i]} MiB): ${nabPhase(nab)}; status behind Velero at most: phase ${t.phase.worst.toFixed(0)} ms (${t.phase.values} values), bytes done ${t.bytes.worst.toFixed(0)} ms (${t.bytes.values} values), queue position ${t.position.worst.toFixed(0)} ms (${t.position.values} values) (target <= 2000); reports ${reported} bytes of its own volume's ${total} (${reported === total ? 'its own' : 'NOT ITS OWN'})`,
      );
    }
  } finally {
    stopControllers.abort();
    await controllers;
    await velero.stop();
  }
  console.log(out.join('\n'));
} finally {
  await bench.stop();
}
