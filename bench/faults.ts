// bench:faults: tenantkit installed by its chart on the local node with Velero beside it, one tenant
// working through her own credentials (namespaces, backups, restores of objects and of volume data,
// schedules, scope changes, searches), and each
// fault of bench/faults/catalog.ts injected round after round at random moments; then every round's end
// state is checked.
// Prints one table row per fault (docs/faults.md keeps the last full run's) and the seed that replays it.
//
//   npm run bench:faults -- [--seed N] [--rounds 20] [--cheap-rounds 100] [--faults "webhooks,search"]
//                           [--restore-at "Pod made,InProgress"] [--store-mib 32] [--velero-workers 1]
import { randomInt } from 'node:crypto';
import { join } from 'node:path';
import { helmFor } from '../devenv/helm/build.ts';
import { repoRoot } from '../devenv/images/build.ts';
import { NonAdminBackupConfigCrd } from '../src/crds/backup.ts';
import { ScopeTemplateCrd } from '../src/crds/scopes.ts';
import { KubeClient } from '../src/kube/client.ts';
import type { KubeObject } from '../src/kube/resources.ts';
import { benchArgs } from './args.ts';
import { faults } from './faults/catalog.ts';
import { type FaultRow, type RestoreCrashPoint, restoreCrashPoints } from './faults/model.ts';
import { setControllersEnv } from './faults/pods.ts';
import { seeded } from './faults/random.ts';
import { runFault, stoppedRow, table } from './faults/run.ts';
import { makeBaseBackup, makeWorld } from './faults/world.ts';
import {
  deployStore,
  fillDisk,
  helmInstallArgs,
  importChartImages,
  requireNode,
  startBenchCluster,
  startVeleroOnNode,
  storeSums,
} from './node.ts';
import { applyBenchTenant, benchOrganization } from './tenant.ts';

const { values } = benchArgs('bench:faults', {
  // The run's seed (a random one unless given): printed, so that a run can be replayed.
  seed: { type: 'string', default: '' },
  rounds: { type: 'string', default: '20' },
  'cheap-rounds': { type: 'string', default: '100' },
  // Only the faults whose names contain one of these (separated by commas; a comma followed by a space
  // belongs to a name, as in "webhooks, all replicas down").
  faults: { type: 'string', default: '' },
  set: { type: 'string', multiple: true, default: [] },
  // Where the volume restore faults kill (comma-separated crash points; default: one picked per round).
  'restore-at': { type: 'string', default: '' },
  // The size of her volume data: a larger store keeps the node-agent's data path (InProgress) open
  // longer, so that a kill lands inside it.
  'store-mib': { type: 'string', default: '32' },
  // How many backups Velero runs at once (its --concurrent-backups; 1, its default, unless set).
  'velero-workers': { type: 'string', default: '1' },
});
requireNode('bench/faults.ts');
const say = (line: string) => console.error(line);
const seed = values.seed ? Number(values.seed) : randomInt(1, 2 ** 31);
if (!Number.isInteger(seed) || seed < 1)
  throw new Error(`--seed ${values.seed}: give a whole number from 1 (the seed a run printed replays it)`);
const picks = values.faults
  .split(/,(?! )/)
  .map((part) => part.trim())
  .filter(Boolean);
const chosen = faults.filter((f) => picks.length === 0 || picks.some((part) => f.name.includes(part)));
const unpicked = picks.find((part) => !faults.some((f) => f.name.includes(part)));
if (unpicked)
  throw new Error(
    `--faults ${unpicked}: no fault's name contains it; the faults are: ${faults.map((f) => f.name).join('; ')}`,
  );
const restoreAt = values['restore-at']
  .split(',')
  .map((p) => p.trim())
  .filter(Boolean) as RestoreCrashPoint[];
const unknownPoint = restoreAt.find((p) => !restoreCrashPoints.includes(p));
if (unknownPoint)
  throw new Error(
    `--restore-at ${unknownPoint}: not a crash point; use one or more of ${restoreCrashPoints.join(', ')} (comma-separated)`,
  );
const storeMiB = Number(values['store-mib']);
if (!Number.isInteger(storeMiB) || storeMiB < 16 || storeMiB > 512 || storeMiB % 16)
  throw new Error(
    `--store-mib ${values['store-mib']}: give a whole number of MiB from 16 to 512, a multiple of 16 (her store's files are 1/16 and 1/2 of it)`,
  );
const veleroWorkers = Number(values['velero-workers']);
if (!Number.isInteger(veleroWorkers) || veleroWorkers < 1 || veleroWorkers > 8)
  throw new Error(
    `--velero-workers ${values['velero-workers']}: give a whole number from 1 to 8 (Velero's --concurrent-backups)`,
  );
say(
  `bench:faults seed ${seed}: ${chosen.map((f) => f.name).join('; ')}${veleroWorkers > 1 ? ` (Velero runs ${veleroWorkers} backups at once)` : ''}`,
);
const apply = { fieldManager: 'bench', force: true };
const organizationLabel = 'appuio.io/organization';
const release = 'bench';
const namespace = 'tenantkit-system';
const veleroNamespace = 'velero';

// etcd's history compacted every 10 s: a watch resumed after a restart finds its version gone (410).
// The node's volumes (search's database, her claim) and Velero's object store each on a disk of their
// own, which the disk faults fill.
const bench = await startBenchCluster({
  node: true,
  apiserverFlags: ['--etcd-compaction-interval=10s'],
  nodeVolumesMiB: 2048,
  // The Pod faults kill the same containers round after round: kubelet waits at most 5 s (not 300 s)
  // before it restarts one, so that each round times tenantkit's recovery, not kubelet's back-off.
  maxRestartBackOffSeconds: 5,
});
const { admin, cp, dir } = bench;
const node = bench.node!;
const rows: FaultRow[] = [];
/** The fault whose rounds are running: printed too when the run is stopped midway, marked so. */
let running: FaultRow | undefined;
// Stopped by hand (Ctrl-C, or SIGTERM): the node, its containers and the control plane go with the run,
// instead of staying on the machine; the faults finished so far are printed. A second signal ends it at once.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    say(`${signal}: stopping the node and the control plane (again to end at once)`);
    const stopped = running && !rows.includes(running) ? [stoppedRow(running)] : [];
    if (rows.length + stopped.length > 0) say(table([...rows, ...stopped]));
    void bench.stop().finally(() => process.exit(130));
  });
}
try {
  const storeDir = join(dir, `velero-${veleroNamespace}`, 's3');
  await bench.limitDisk(storeDir, 1024);
  const velero = await startVeleroOnNode(bench, node, veleroNamespace, { concurrentBackups: veleroWorkers });
  const images = await importChartImages(node);
  const helm = await helmFor(cp.adminKubeconfigPath, join(dir, 'helm'), say);
  const settings = [...images.values, `backup.veleroNamespace=${veleroNamespace}`, ...values.set];
  say(`helm install ${settings.slice(images.values.length).join(' ')}`);
  await helm(helmInstallArgs(release, join(repoRoot, 'deploy', 'helm', 'tenantkit'), namespace, settings));
  await admin.apply(
    NonAdminBackupConfigCrd.type,
    // A stuck Velero queue is named in the NABs' conditions after 1 minute (default 10m), within the
    // checks' wait: a backup that never finished then says why in the round's problem line.
    {
      metadata: { name: 'cluster' },
      spec: { nonAdmin: { enable: true, veleroNamespace, stalledQueueWarningAfter: '1m' } },
    } as KubeObject,
    apply,
  );
  // Her scope changes bind this template in her namespace: an auditor may read its ConfigMaps. She may
  // create ScopeInstances (the escalation guard checks she holds the rules where she binds them).
  const scopeTemplate = 'fault-reader';
  await admin.apply(
    ScopeTemplateCrd.type,
    {
      metadata: { name: scopeTemplate },
      spec: {
        clusterRoles: [
          {
            generateName: 'fault-reader-',
            rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
            subjects: [{ kind: 'User', name: 'auditor' }],
          },
        ],
      },
    } as KubeObject,
    apply,
  );
  await applyBenchTenant(admin, {
    config: { organizationLabel, defaultNamespaceQuota: 100000 },
    rules: [
      { apiGroups: [''], resources: ['namespaces'], verbs: ['create'] },
      {
        apiGroups: ['operators.coreos.com'],
        resources: ['scopeinstances'],
        verbs: ['create', 'get', 'delete'],
      },
    ],
  });
  const world = await makeWorld({
    admin,
    tenant: KubeClient.fromKubeconfig({ yaml: await cp.userKubeconfig('alice', ['tenants']) }),
    organization: benchOrganization,
    organizationLabel,
    release,
    namespace,
    veleroNamespace,
    home: 'alice-home',
    say,
  });
  world.scopeTemplate = scopeTemplate;
  if (restoreAt.length) world.restoreCrashPoints = restoreAt;
  // What her restores restore from: a backup of her ConfigMaps, made by her before the first fault.
  world.baseBackup = await makeBaseBackup(world);
  say(
    `her base backup ${world.baseBackup} completed: in every round she restores it every 3 s and binds ScopeTemplate ${scopeTemplate} in ${world.home} every 2.5 s`,
  );
  // Her data: a claim of known bytes, which the Velero faults' backups copy file by file, and her backup
  // of it, which the volume restore faults restore after she deleted it.
  await deployStore(admin, node, world.home, storeMiB);
  world.volumeSums = await storeSums(admin, world.home);
  world.volumeBackup = await makeBaseBackup(world, true);
  say(`her volume backup ${world.volumeBackup} completed: the volume restore faults restore it`);
  const controllersEnv = Object.assign({}, ...chosen.map((f) => f.controllersEnv ?? {}));
  if (Object.keys(controllersEnv).length > 0) {
    say(
      `the controllers get ${Object.entries(controllersEnv)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
    await setControllersEnv(world, controllersEnv);
  }
  world.restartControlPlane = () => bench.restartControlPlane();
  world.restartNode = () => node.restart();
  world.fillDisk = (what) => fillDisk(what === 'database' ? node.volumesDir : storeDir);
  world.bucket = async (prefix) => (await velero.listObjects(prefix)).map((o) => o.key);
  for (const [i, fault] of chosen.entries()) {
    const rounds = Number(fault.cheap ? values['cheap-rounds'] : values.rounds);
    // Each fault its own stream from the seed: one fault replays alone with --faults.
    const rng = seeded(seed + faults.indexOf(fault) * 7919);
    say(`${fault.name}: ${rounds} rounds (seed ${seed})`);
    const onStart = (row: FaultRow) => {
      running = row;
    };
    rows.push(await runFault(world, fault, rng, { rounds, prefix: `f${i}`, onStart }));
    console.log(table(rows.slice(-1)).split('\n')[2]);
  }
  console.log(`\nbench:faults, seed ${seed} (replay: npm run bench:faults -- --seed ${seed})\n`);
  console.log(table(rows));
  const bad = rows.reduce(
    (n, r) => n + r.wrong.length + r.duplicates.length + r.orphans.length + r.lost.length + r.serverErrors,
    0,
  );
  if (bad > 0) process.exitCode = 1;
} finally {
  await bench.stop();
}
// Whatever a fault left waiting (a watch on a stopped API server, a socket): the run is over.
process.exit();
