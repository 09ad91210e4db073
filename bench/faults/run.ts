// One fault, round after round: the tenant works, the fault hits at a random moment, the faulted part
// comes back, the tenant's work settles and is checked, and the round's objects are removed by their
// owners. Rows sum the rounds; `table` prints them.
import { setTimeout as sleep } from 'node:timers/promises';
import { checkOperations, cleanUp, indexDifference, retryRequest } from './checks.ts';
import type { Fault, FaultRow, Injected, Operation, Rng, World } from './model.ts';
import { type Pace, TenantWork } from './work.ts';

export interface RunOptions {
  rounds: number;
  /** How long the tenant's accepted work may take to end right after the faulted part is back. */
  settleMs?: number;
  /** Names made in this run start with it (unique per run: names are never reused across runs). */
  prefix: string;
  /** How often the tenant makes each kind of request (see TenantWork); the bench's pace by default. */
  paceMs?: Pace;
  /** Handed the row as it starts, so that a run stopped midway can still print what it counted. */
  onStart?: (row: FaultRow) => void;
}

/** A tenant at a person's pace, for a run beside other work (the e2e slice). */
export const slowPace: Pace = { namespace: 1_500, backup: 4_000, search: 1_000, hookPod: 3_000 };

/** A refusal's message with its run-specific names and addresses taken out, so that alike ones group. */
function shape(message: string, prefix: string): string {
  return message
    .replace(/\b[a-z0-9-]+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<velero name>')
    .replace(new RegExp(`${prefix}[a-z0-9-]*`, 'g'), '<name>')
    .replace(/\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b/g, '<address>')
    .replace(/"[a-f0-9-]{36}"/g, '<uid>')
    .slice(0, 200);
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : Number.NaN;
};

/**
 * How long a round's accepted work may take to end right once the faulted part is back: `base` (120 s by
 * default), and 15 s more for each backup and restore, which Velero runs one at a time.
 */
export function checkWindow(ops: Operation[], base = 120_000): number {
  const queued = ops.filter((o) => (o.kind === 'backup' || o.kind === 'restore') && o.answer.ok).length;
  return base + 15_000 * queued;
}

/** One round's operations by kind (accepted / made), and how many ended wrong: a line a round, as it ends. */
function roundLine(ops: Operation[]): string {
  const kinds = new Map<string, { made: number; accepted: number; wrong: number }>();
  for (const op of ops) {
    const k = kinds.get(op.kind) ?? { made: 0, accepted: 0, wrong: 0 };
    k.made++;
    if (op.answer.ok) k.accepted++;
    if (op.wrong) k.wrong++;
    kinds.set(op.kind, k);
  }
  const parts = [...kinds].map(
    ([kind, k]) => `${k.accepted}/${k.made} ${kind}${k.wrong ? ` (${k.wrong} wrong)` : ''}`,
  );
  const wrong = ops.filter((o) => o.wrong).length;
  const slowest = slowestOf(ops);
  const took = slowest
    ? `; slowest answer ${((slowest.tookMs ?? 0) / 1000).toFixed(1)} s (${slowest.kind}, ${slowest.answer.ok ? 'accepted' : `refused ${slowest.answer.status}`}), ${ops.filter((o) => (o.tookMs ?? 0) > slowAnswerMs).length} over ${slowAnswerMs / 1000} s`
    : '';
  return `${parts.join(', ')} accepted; ${wrong} ended wrong${took}`;
}

/** A request answered after this long counts as held (kube-apiserver waiting on a webhook, say). */
const slowAnswerMs = 1_000;

function slowestOf(ops: Operation[]): Operation | undefined {
  let slowest: Operation | undefined;
  for (const op of ops) if ((op.tookMs ?? 0) > (slowest?.tookMs ?? -1)) slowest = op;
  return slowest;
}

export async function runFault(world: World, fault: Fault, rng: Rng, options: RunOptions): Promise<FaultRow> {
  const row: FaultRow = {
    fault: fault.name,
    guarantee: fault.guarantee,
    injected: 0,
    roundsChecked: 0,
    operations: 0,
    inFlight: 0,
    wrong: [],
    duplicates: [],
    orphans: [],
    lost: [],
    serverErrors: 0,
    webhookCallErrors: 0,
    slowAnswers: 0,
    failedWithReason: 0,
    retriesCompleted: 0,
    recoveryMs: [],
    seen: new Map(),
  };
  const see = (line: string) => row.seen.set(line, (row.seen.get(line) ?? 0) + 1);
  options.onStart?.(row);
  for (let round = 0; round < options.rounds; round++) {
    const work = new TenantWork(world, `${options.prefix}-${round}`, {
      pace: options.paceMs,
      backupSpec: fault.volumeBackups ? { defaultVolumesToFsBackup: true } : {},
    });
    await sleep(rng.between(300, 3_000));
    const at = work.now();
    let injected: Injected | undefined;
    try {
      injected = await fault.inject(world, rng, `${options.prefix}-${round}`);
      row.injected++;
      row.inFlight += work.inFlightAt(at);
      const started = performance.now();
      await injected.recovered();
      row.recoveryMs.push(performance.now() - started);
      world.say(
        `  ${fault.name} round ${round + 1}: ${injected.what}; back after ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
    } catch (err) {
      row.wrong.push(`round ${round + 1}: ${(err as Error).message}`);
      world.say(`  ${fault.name} round ${round + 1}: ${(err as Error).message}`);
    }
    // A little of the tenant's work after the recovery too.
    await sleep(1_000);
    await work.stop();
    const findings = await checkOperations(
      world,
      work.operations,
      checkWindow(work.operations, options.settleMs),
      fault.backupsMayFail,
    );
    row.operations += work.operations.length;
    for (const op of work.operations) {
      if (op.wrong) row.wrong.push(op.wrong);
      if (!op.answer.ok) {
        if (op.answer.status >= 500 && op.answer.status !== 503) {
          if (/failed calling webhook/.test(op.answer.message)) row.webhookCallErrors++;
          else row.serverErrors++;
        }
        see(`${op.kind}: ${op.answer.status || 'no answer'} ${shape(op.answer.message, options.prefix)}`);
      }
    }
    row.duplicates.push(...findings.duplicates);
    row.lost.push(...findings.lost);
    world.say(`  ${fault.name} round ${round + 1}: ${roundLine(work.operations)}`);
    row.slowAnswers += work.operations.filter((o) => (o.tookMs ?? 0) > slowAnswerMs).length;
    const slowest = slowestOf(work.operations);
    if (slowest && (slowest.tookMs ?? 0) > (row.slowest?.ms ?? -1))
      row.slowest = { ms: slowest.tookMs ?? 0, kind: slowest.kind, ok: slowest.answer.ok };
    for (const op of work.operations.filter((o) => o.wrong)) {
      world.say(`  ${fault.name} round ${round + 1}: WRONG: ${op.wrong}`);
    }
    // A backup or restore that failed as the fault allows: the tenant tries again, and that must work.
    const retries = { backup: [] as string[], restore: [] as string[] };
    for (const [kind, failures] of [
      ['backup', findings.failed],
      ['restore', findings.failedRestores],
    ] as const) {
      for (const { name: failed, failed: why } of failures) {
        row.failedWithReason++;
        see(`${kind}: ${shape(why, options.prefix)}`);
        retries[kind].push(`${failed}-retry`);
        const problem = await retryRequest(world, kind, `${failed}-retry`, options.settleMs ?? 120_000);
        if (problem) row.wrong.push(`retry after a failure: ${problem}`);
        else row.retriesCompleted++;
      }
    }
    // What the fault itself had her do (a restore of her volume data it hit), and its retry.
    const own = injected?.settled ? await injected.settled() : undefined;
    if (own) {
      row.operations += own.restores.length;
      row.wrong.push(...own.wrong);
      row.failedWithReason += own.failedWithReason;
      row.retriesCompleted += own.retriesCompleted;
      retries.restore.push(...own.restores);
      for (const line of own.seen) see(line);
      for (const w of own.wrong) world.say(`  ${fault.name} round ${round + 1}: WRONG: ${w}`);
    }
    const accepted = (kind: Operation['kind']) =>
      work.operations.filter((o) => o.kind === kind && o.answer.ok).map((o) => o.name);
    // With their data (spec.deleteBackup) wherever the run can read the bucket (the bench): a NAB deleted
    // without it comes back by backup sync, and the bucket is checked for what a deleted backup left only
    // then. The e2e slice, which cannot read it, deletes the NABs alone unless the fault is Velero's.
    const withData = fault.backupsMayFail === true || world.bucket !== undefined;
    const orphans = await cleanUp(
      world,
      {
        nabs: [...accepted('backup'), ...retries.backup],
        nars: [...accepted('restore'), ...retries.restore],
        schedules: accepted('schedule'),
        scopes: accepted('scope'),
        namespaces: accepted('namespace'),
      },
      withData,
    );
    for (const o of orphans) world.say(`  ${fault.name} round ${round + 1}: left behind: ${o}`);
    row.orphans.push(...orphans);
    row.roundsChecked++;
  }
  // Whatever the fault, the index ends as the API server's objects.
  const { difference } = await indexDifference(world, 30_000);
  if (difference) {
    row.wrong.push(`after ${fault.name}: ${difference}`);
    world.say(`  after ${fault.name}: ${difference}`);
  }
  return row;
}

/** A row of a run stopped in its rounds, named so: its last round may be counted in part. */
export function stoppedRow(row: FaultRow): FaultRow {
  return {
    ...row,
    fault: `${row.fault} (stopped in round ${row.roundsChecked + 1}: ${row.roundsChecked} checked to the end)`,
  };
}

/** The table of rows, and under it what the tenant saw per fault (one line each, with counts). */
export function table(rows: FaultRow[]): string {
  const head =
    '| fault | injected | tenant operations | in flight at the fault | ended wrong | duplicates | orphans | lost | answered 500 (kube-apiserver, failed webhook calls) | failed with reason / retried OK | back after p50 / p99 |';
  const lines = [head, '|---|---|---|---|---|---|---|---|---|---|---|'];
  for (const r of rows) {
    const p = (n: number) => (Number.isNaN(n) ? '-' : `${(n / 1000).toFixed(1)} s`);
    lines.push(
      `| ${r.fault} | ${r.injected} | ${r.operations} | ${r.inFlight} | ${r.wrong.length} | ${r.duplicates.length} | ${r.orphans.length} | ${r.lost.length} | ${r.serverErrors} (${r.webhookCallErrors}) | ${r.failedWithReason} / ${r.retriesCompleted} | ${p(percentile(r.recoveryMs, 50))} / ${p(percentile(r.recoveryMs, 99))} |`,
    );
  }
  lines.push('', 'What the tenant saw besides success:');
  for (const r of rows) {
    lines.push(`- ${r.fault}:${r.seen.size ? '' : ' nothing else'}`);
    if (r.slowest)
      lines.push(
        `  - answers: ${r.slowAnswers} after more than ${slowAnswerMs / 1000} s; the slowest ${(r.slowest.ms / 1000).toFixed(1)} s (${r.slowest.kind}, ${r.slowest.ok ? 'accepted' : 'refused'})`,
      );
    for (const [line, n] of [...r.seen].sort((a, b) => b[1] - a[1])) lines.push(`  - ${n}× ${line}`);
    // Every finding is named (which object, which backup), not only counted: a run must say what to fix.
    for (const w of r.wrong.slice(0, 5)) lines.push(`  - WRONG: ${w}`);
    for (const d of r.duplicates.slice(0, 5)) lines.push(`  - DUPLICATE: ${d}`);
    for (const o of r.orphans.slice(0, 5)) lines.push(`  - ORPHAN: ${o}`);
    for (const l of r.lost.slice(0, 5)) lines.push(`  - LOST: ${l}`);
  }
  return lines.join('\n');
}
