// How the integration files share the machine. Files that need neither Velero's build nor the local node
// run in `lanes` parallel workers, each worker with a control plane of its own (its files still run one at
// a time against it, so cluster-scoped objects of two files never race). Files that need the local node
// run afterwards, one at a time: there is one node per machine. vitest.config.ts and the sequencer read
// this module; global-setup.ts starts one control plane per lane.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Parallel workers (and control planes) for the files that do not need the node. */
export const lanes = Math.max(1, Number(process.env.TENANTKIT_TEST_LANES ?? 2));

const runsNode = /installTenantkit|startTestNode/;
const needsNodeBuilds = /ensureNodeBinaries|ensureTenantkitImage|ensureVeleroImage|ensurePostgresImage/;
const needsVelero = /startBackupEnvironment|startTestVelero|startObjectStore|ensureVeleroBinaries/;

/**
 * 0: only the control plane; 1: Velero's build too; 2: the node's builds (its runtime, the images);
 * 3: the local node itself.
 */
export function needs(file: string): number {
  const text = readFileSync(file, 'utf8');
  if (runsNode.test(text)) return 3;
  if (needsNodeBuilds.test(text)) return 2;
  if (needsVelero.test(text)) return 1;
  return 0;
}

/** The integration and e2e test files under `root`, split into those that need the node and the rest. */
export function integrationFiles(root: string): { node: string[]; other: string[] } {
  const files = ['test/integration', 'test/e2e'].flatMap((dir) =>
    readdirSync(join(root, dir))
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => `${dir}/${f}`),
  );
  const node = files.filter((f) => needs(join(root, f)) === 3);
  return { node, other: files.filter((f) => !node.includes(f)) };
}

/**
 * The files that take longest (minutes of waiting on Velero's own timers: schedules, sync, garbage
 * collection), longest first as measured with two lanes: the sequencer starts them first within their
 * rank, so that the lanes end close together. A fresh clone has no timings of its own to sort by.
 */
export const slowest = [
  'backup-schedule',
  'backup-gc',
  'backup-transparency',
  'backup-sync',
  'backup-restore-guard',
  'console',
];

/** Where `file` stands among {@link slowest} (those not in it after, in their order). */
export function slowRank(file: string): number {
  const i = slowest.findIndex((name) => file.endsWith(`/${name}.test.ts`));
  return i === -1 ? slowest.length : i;
}

/**
 * Which of the run's control planes this test file uses: its worker's (vitest numbers the workers of a
 * group from 1).
 */
export function laneOf(count: number): number {
  const worker = Number(process.env.VITEST_POOL_ID ?? 1);
  return (Math.max(1, worker) - 1) % count;
}
