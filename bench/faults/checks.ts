// Whether a round ended exactly right, checked from the cluster's own state once the faulted part is back:
// every namespace the tenant was given is bound to her organization, every NonAdminBackup and
// NonAdminRestore she made ran once (one Velero Backup, one Velero Restore) and completed, every
// NonAdminSchedule has one Velero Schedule, every ScopeInstance one binding, nothing is left of what she
// deleted (the node-agent's PodVolumeBackups and PodVolumeRestores included), and the search index holds
// exactly the API server's objects.
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Annotations, syncedFromOf } from '../../src/backup/model.ts';
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
  type NonAdminSchedule,
  NonAdminScheduleCrd,
} from '../../src/crds/backup.ts';
import { type ScopeInstance, ScopeInstanceCrd } from '../../src/crds/scopes.ts';
import { finishedPhases, VeleroResources } from '../../src/crds/velero.ts';
import { isNotFound } from '../../src/kube/client.ts';
import { type Condition, findCondition } from '../../src/kube/conditions.ts';
import { cacheDigest, type InformerCache } from '../../src/kube/informer.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { instanceAnnotation, managedBy, managedByLabel } from '../../src/scopes/model.ts';
import { discover } from '../../src/search/collector/index.ts';
import { HubCluster } from '../../src/search/model.ts';
import type { Operation, RoundFindings, World } from './model.ts';
import { componentPods } from './pods.ts';

const finished = new Set<string>(finishedPhases);

/** Polls `probe` until it says undefined (settled) or `timeoutMs` passed; resolves with its last word. */
async function settle(
  probe: () => Promise<string | undefined>,
  timeoutMs: number,
): Promise<string | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = await probe().catch((err: Error) => `could not check: ${err.message}`);
    if (left === undefined || Date.now() > deadline) return left;
    await sleep(500);
  }
}

/** Why namespace `name` is not (yet) bound to the tenant's organization, or undefined once it is. */
async function unbound(world: World, name: string): Promise<string | undefined> {
  const bindings = await world.admin.list<KubeObject>(Resources.roleBindings, {
    namespace: name,
    labelSelector: 'app.kubernetes.io/managed-by=tenantkit-tenancy',
  });
  return bindings.items.length > 0 ? undefined : `namespace ${name} was created but never bound`;
}

/** The RoleBindings the scopes controllers made in the tenant's namespace, by ScopeInstance name. */
async function scopeBindings(world: World): Promise<Map<string, string[]>> {
  const bindings = await world.admin.list<KubeObject>(Resources.roleBindings, {
    namespace: world.home,
    labelSelector: `${managedByLabel}=${managedBy}`,
  });
  const by = new Map<string, string[]>();
  for (const b of bindings.items) {
    const instance = b.metadata.annotations?.[instanceAnnotation];
    if (instance) by.set(instance, [...(by.get(instance) ?? []), b.metadata.name!]);
  }
  return by;
}

/**
 * Why the tenant's ScopeInstance `name` is not (yet) in place: gone, not Ready, or not exactly one binding
 * (the template has one role) in her namespace.
 */
async function scopeProblem(world: World, name: string): Promise<string | undefined> {
  const instance = await world.admin.get<ScopeInstance>(ScopeInstanceCrd.type, name);
  if (!instance) return `ScopeInstance ${name} was accepted and is gone`;
  const ready = instance.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True') {
    return `ScopeInstance ${name} not Ready (${ready ? `${ready.reason}: ${ready.message}` : 'no condition'})`;
  }
  const made = (await scopeBindings(world)).get(name) ?? [];
  if (made.length !== 1) return `ScopeInstance ${name} has ${made.length} RoleBindings: ${made.join(', ')}`;
  return undefined;
}

/** Why the tenant's NonAdminSchedule `name` is not (yet) handed to Velero: gone, not Enabled, or not one Schedule. */
async function scheduleProblem(world: World, name: string): Promise<string | undefined> {
  const nas = await world.admin.get<NonAdminSchedule>(NonAdminScheduleCrd.type, name, world.home);
  if (!nas) return `NonAdminSchedule ${name} was accepted and is gone`;
  const phase = nas.status?.veleroSchedule?.status?.phase;
  if (phase !== 'Enabled') {
    const why = nas.status?.conditions?.map((c) => `${c.type}=${c.status} ${c.reason}`).join(', ');
    return `NonAdminSchedule ${name} not Enabled (phase ${nas.status?.phase ?? 'none'}, Velero ${phase ?? 'none'}; ${why ?? ''})`;
  }
  const made = (await veleroByOrigin(world, 'schedule')).get(name) ?? [];
  if (made.length !== 1) {
    return `NonAdminSchedule ${name} has ${made.length} Velero Schedules: ${made.join(', ')}`;
  }
  return undefined;
}

/** The names of Velero's objects of one kind made for the tenant's objects, by the name of the tenant object. */
async function veleroByOrigin(
  world: World,
  kind: 'backup' | 'restore' | 'schedule',
): Promise<Map<string, string[]>> {
  const by = await veleroObjectsByOrigin(world, kind);
  return new Map([...by].map(([origin, objects]) => [origin, objects.map((o) => o.metadata.name!)]));
}

/** Velero's objects of one kind made for the tenant's objects, by the name of the tenant object. */
async function veleroObjectsByOrigin(
  world: World,
  kind: 'backup' | 'restore' | 'schedule',
): Promise<Map<string, KubeObject[]>> {
  const [type, name, namespace] = {
    backup: [VeleroResources.backups, Annotations.nabName, Annotations.nabNamespace] as const,
    restore: [VeleroResources.restores, Annotations.narName, Annotations.narNamespace] as const,
    schedule: [VeleroResources.schedules, Annotations.nasName, Annotations.nasNamespace] as const,
  }[kind];
  const objects = await world.admin.list<KubeObject>(type, { namespace: world.veleroNamespace });
  const by = new Map<string, KubeObject[]>();
  for (const o of objects.items) {
    const a = o.metadata.annotations ?? {};
    const origin = a[name];
    if (a[namespace] !== world.home || !origin) continue;
    by.set(origin, [...(by.get(origin) ?? []), o]);
  }
  return by;
}

/**
 * Velero's reason for a backup (restore) that did not complete, as the tenant reads it in her NAB's (NAR's)
 * status: its failure reason, or (PartiallyFailed has none) the error counts the Queued condition gives.
 */
const failureOf = (
  velero: { status?: { failureReason?: string } } | undefined,
  conditions: { type: string; status: string; reason?: string; message?: string }[] | undefined,
) =>
  velero?.status?.failureReason ??
  conditions?.find((c) => c.type === 'Queued' && /is PartiallyFailed: \d+ errors?/.test(c.message ?? ''))
    ?.message ??
  conditions?.find((c) => c.status === 'False' || /Fail/.test(c.reason ?? ''))?.message;

/** What tells the end of a tenant's request to Velero: her kind, Velero's, and where its phase and reason are. */
interface RequestKind<T> {
  crd: typeof NonAdminBackupCrd | typeof NonAdminRestoreCrd;
  kind: 'NonAdminBackup' | 'NonAdminRestore';
  velero: 'backup' | 'restore';
  veleroKind: 'Backups' | 'Restores';
  phase(o: T): string | undefined;
  reason(o: T): string | undefined;
  /** The spec of the tenant's retry after a failure. */
  retrySpec(world: World): Record<string, unknown>;
}

const requestKinds = {
  backup: {
    crd: NonAdminBackupCrd,
    kind: 'NonAdminBackup',
    velero: 'backup',
    veleroKind: 'Backups',
    phase: (nab: NonAdminBackup) => nab.status?.veleroBackup?.status?.phase,
    reason: (nab: NonAdminBackup) => failureOf(nab.status?.veleroBackup, nab.status?.conditions),
    retrySpec: (world: World) => ({
      backupSpec: world.bucket ? { defaultVolumesToFsBackup: true } : {},
    }),
  } satisfies RequestKind<NonAdminBackup>,
  restore: {
    crd: NonAdminRestoreCrd,
    kind: 'NonAdminRestore',
    velero: 'restore',
    veleroKind: 'Restores',
    phase: (nar: NonAdminRestore) => nar.status?.veleroRestore?.status?.phase,
    reason: (nar: NonAdminRestore) => failureOf(nar.status?.veleroRestore, nar.status?.conditions),
    retrySpec: (world: World) => ({ restoreSpec: { backupName: world.baseBackup } }),
  } satisfies RequestKind<NonAdminRestore>,
};

/**
 * Why the tenant's NAB (NAR) `name` has not ended right (yet): not finished, not Completed (unless
 * `mayFail` and Velero said why), or not exactly one Velero Backup (Restore). `failed` holds Velero's
 * reason when it failed as allowed.
 */
async function requestEnd<T extends NonAdminBackup | NonAdminRestore>(
  world: World,
  k: RequestKind<T>,
  name: string,
  mayFail: boolean,
): Promise<{ problem?: string; failed?: string }> {
  const object = await world.admin.get<T>(k.crd.type, name, world.home);
  if (!object) return { problem: `${k.kind} ${name} was accepted and is gone` };
  const phase = k.phase(object);
  if (!phase || !finished.has(phase)) {
    const why = object.status?.conditions?.map((c) => `${c.type}=${c.status} ${c.reason}`).join(', ');
    return {
      problem: `${k.kind} ${name} not finished (phase ${object.status?.phase ?? 'none'}, Velero ${phase ?? 'none'}; ${why ?? ''})`,
    };
  }
  const made = (await veleroByOrigin(world, k.velero)).get(name) ?? [];
  if (made.length !== 1) {
    return { problem: `${k.kind} ${name} has ${made.length} Velero ${k.veleroKind}: ${made.join(', ')}` };
  }
  if (phase === 'Completed') return {};
  const reason = k.reason(object);
  if (mayFail && reason) return { failed: `${phase}: ${reason}` };
  return { problem: `${k.kind} ${name} ended ${phase}${reason ? `: ${reason}` : ' without a reason'}` };
}

/**
 * The end of a tenant object of `kind`, polled until it is right or `timeoutMs` passed: `problem` says
 * what is not right yet, `failed` Velero's reason when it failed as `mayFail` allows.
 */
export async function settledEnd(
  world: World,
  kind: 'backup' | 'restore',
  name: string,
  mayFail: boolean,
  timeoutMs: number,
) {
  let last: { problem?: string; failed?: string } = {};
  const probe = async () => {
    const ended =
      kind === 'backup'
        ? requestEnd(world, requestKinds.backup, name, mayFail)
        : requestEnd(world, requestKinds.restore, name, mayFail);
    last = await ended.catch((err: Error) => ({
      problem: `could not check: ${err.message}`,
    }));
    return last.problem;
  };
  await settle(probe, timeoutMs);
  // Still waiting in a queue that moves (tenantkit does not say it stalled): a fault that held Velero's
  // queue for a while (a volume operation tenantkit resumed after 2 minutes) pushed every later request
  // back by as much. It gets more time, said in the run, until it ends or is said to be stalled.
  const started = Date.now();
  while (last.problem && stillMoving(last.problem) && Date.now() - started < movingGraceMs) {
    await sleep(2_000);
    await probe();
  }
  if (Date.now() - started >= 2_000)
    world.say(
      `    ${kind} ${name} was still moving in Velero's queue at the round's deadline; ${last.problem ? 'still not right' : 'ended right'} ${((Date.now() - started) / 1000).toFixed(0)} s later`,
    );
  return last;
}

/** How much longer a request still moving in Velero's queue is waited for, past the round's deadline. */
const movingGraceMs = 10 * 60_000;

/** Not finished, and tenantkit does not say that Velero's queue stalled or that its object is stuck. */
const stillMoving = (problem: string) =>
  / not finished /.test(problem) && !/VeleroQueueStalled|Velero(Backup|Restore)Stuck/.test(problem);

/**
 * The tenant tries again after a failed backup (restore): her retry `name` must complete, with one Velero
 * Backup (Restore). Resolves with what is wrong with it, or undefined.
 */
export async function retryRequest(
  world: World,
  kind: 'backup' | 'restore',
  name: string,
  timeoutMs: number,
): Promise<string | undefined> {
  const k = requestKinds[kind];
  await world.tenant.create(k.crd.type, {
    metadata: { name, namespace: world.home },
    spec: k.retrySpec(world),
  } as KubeObject);
  return (await settledEnd(world, kind, name, false, timeoutMs)).problem;
}

/**
 * Marks each operation whose end state is wrong (its `wrong`), waiting up to `timeoutMs` for each to
 * settle; returns the round's duplicates and lost objects, and the backups that failed as allowed.
 */
export async function checkOperations(
  world: World,
  ops: Operation[],
  timeoutMs: number,
  mayFail = false,
): Promise<RoundFindings & { failed: FailedEnd[]; failedRestores: FailedEnd[] }> {
  const findings = {
    duplicates: [] as string[],
    orphans: [] as string[],
    lost: [] as string[],
    failed: [] as FailedEnd[],
    failedRestores: [] as FailedEnd[],
  };
  const deadline = Date.now() + timeoutMs;
  for (const op of ops) {
    if (!op.answer.ok || op.wrong) continue;
    const left = Math.max(1_000, deadline - Date.now());
    if (op.kind === 'namespace') {
      const problem = await settle(() => unbound(world, op.name), left);
      if (problem) {
        op.wrong = problem;
        findings.lost.push(problem);
      }
    } else if (op.kind === 'scope' || op.kind === 'schedule') {
      const probe = op.kind === 'scope' ? scopeProblem : scheduleProblem;
      const problem = await settle(() => probe(world, op.name), left);
      if (!problem) continue;
      op.wrong = problem;
      if (/has ([2-9]|\d\d+) (RoleBindings|Velero Schedules)/.test(problem))
        findings.duplicates.push(problem);
      if (/has 0 (RoleBindings|Velero Schedules)|is gone/.test(problem)) findings.lost.push(problem);
    } else if (op.kind === 'backup' || op.kind === 'restore') {
      const { problem, failed } = await settledEnd(world, op.kind, op.name, mayFail, left);
      if (failed)
        (op.kind === 'backup' ? findings.failed : findings.failedRestores).push({ name: op.name, failed });
      if (!problem) continue;
      op.wrong = problem;
      if (/has ([2-9]|\d\d+) Velero (Backups|Restores)/.test(problem)) findings.duplicates.push(problem);
      if (/has 0 Velero (Backups|Restores)|is gone/.test(problem)) findings.lost.push(problem);
    }
  }
  return findings;
}

/** A backup (restore) of the round that failed as the fault allows: its name, its phase and Velero's reason. */
export interface FailedEnd {
  name: string;
  failed: string;
}

/**
 * The tenant's (the admin's) request to remove something, asked again for a while when the API server
 * could not answer it (a webhook Pod just killed, a 5xx, a dropped connection), as a person would; a
 * refusal it keeps giving is returned to be reported, never swallowed.
 */
async function removal(what: string, request: () => Promise<unknown>): Promise<string | undefined> {
  let last = '';
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      await request();
      return undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      const status = (err as { status?: number }).status;
      last = err instanceof Error ? err.message : String(err);
      if (status !== undefined && status < 500 && status !== 429 && status !== 409) break;
      await sleep(1_000);
    }
  }
  return `${what} refused: ${last.slice(0, 200)}`;
}

/**
 * The round's objects removed by their owners (the tenant deletes her ScopeInstances, NASs, NARs, and her
 * NABs with their data when `withData`; the admin the namespaces); resolves when they are gone, with what
 * was left behind: Velero Backups, Restores and Schedules without their tenant object, RoleBindings of
 * deleted ScopeInstances, and (`withData`) data of a deleted backup still in the bucket.
 *
 * "Gone" is by uid: a NAB deleted without its data comes back by design (Velero's bucket sync makes its
 * Backup again, as a new object, once the bucket changes, and backup sync a new NAB of the same name with
 * the synced-from label; docs/backup.md). Those new objects are said, not counted as left behind; the
 * objects the tenant deleted are.
 */
export async function cleanUp(
  world: World,
  made: { nabs: string[]; nars: string[]; schedules: string[]; scopes: string[]; namespaces: string[] },
  withData: boolean,
  timeoutMs = 180_000,
): Promise<string[]> {
  const { nabs, nars, schedules, scopes, namespaces } = made;
  const names = new Map<string, string>();
  /** The uids of the objects deleted (tenant objects by name, Velero Backups by name). */
  const deleted = new Map<string, string>();
  const veleroUids = new Map<string, string>();
  const refused: string[] = [];
  const remove = async (what: string, request: () => Promise<unknown>) => {
    const problem = await removal(what, request);
    if (problem) refused.push(problem);
  };
  const remember = (kind: string, o: KubeObject | undefined) => {
    if (o?.metadata.uid) deleted.set(`${kind}/${o.metadata.name}`, o.metadata.uid);
  };
  for (const name of schedules) {
    remember(
      NonAdminScheduleCrd.type.kind,
      await world.admin.get(NonAdminScheduleCrd.type, name, world.home),
    );
    await remove(`NonAdminSchedule ${name}'s deletion`, () =>
      world.tenant.delete(NonAdminScheduleCrd.type, name, world.home),
    );
  }
  for (const name of scopes)
    await remove(`ScopeInstance ${name}'s deletion`, () => world.tenant.delete(ScopeInstanceCrd.type, name));
  const restoreNames = new Map<string, string>();
  for (const name of nars) {
    const nar = await world.admin.get<NonAdminRestore>(NonAdminRestoreCrd.type, name, world.home);
    remember(NonAdminRestoreCrd.type.kind, nar);
    const restore = nar?.status?.veleroRestore?.name;
    if (restore) restoreNames.set(name, restore);
    await remove(`NonAdminRestore ${name}'s deletion`, () =>
      world.tenant.delete(NonAdminRestoreCrd.type, name, world.home),
    );
  }
  for (const name of nabs) {
    const nab = await world.admin.get<NonAdminBackup>(NonAdminBackupCrd.type, name, world.home);
    remember(NonAdminBackupCrd.type.kind, nab);
    const backup = nab?.status?.veleroBackup?.name;
    if (backup) {
      names.set(name, backup);
      const object = await world.admin.get(VeleroResources.backups, backup, world.veleroNamespace);
      if (object?.metadata.uid) veleroUids.set(backup, object.metadata.uid);
    }
    if (withData) {
      await remove(`NonAdminBackup ${name}'s spec.deleteBackup`, () =>
        world.tenant.patch(NonAdminBackupCrd.type, name, world.home, { spec: { deleteBackup: true } }),
      );
    } else {
      await remove(`NonAdminBackup ${name}'s deletion`, () =>
        world.tenant.delete(NonAdminBackupCrd.type, name, world.home),
      );
    }
  }
  for (const ns of namespaces)
    await remove(`namespace ${ns}'s deletion`, () => world.admin.delete(Resources.namespaces, ns));
  if (refused.length) return refused;
  const cameBack = new Set<string>();
  const remaining = await settle(async () => {
    const left: string[] = [];
    for (const [crd, mine, what] of [
      [NonAdminBackupCrd, nabs, 'NonAdminBackups'],
      [NonAdminRestoreCrd, nars, 'NonAdminRestores'],
      [NonAdminScheduleCrd, schedules, 'NonAdminSchedules'],
    ] as const) {
      const items = (await world.admin.list<KubeObject>(crd.type, { namespace: world.home })).items;
      const stay = items.filter((o) => {
        if (!mine.includes(o.metadata.name!)) return false;
        const uid = deleted.get(`${crd.type.kind}/${o.metadata.name}`);
        if (uid === undefined || uid === o.metadata.uid) return true;
        // A new object of the same name: backup sync's, for the data the tenant kept.
        if (!withData && syncedFromOf(o) !== undefined) {
          cameBack.add(`NonAdminBackup ${o.metadata.name} (synced from ${syncedFromOf(o)})`);
          return false;
        }
        return true;
      });
      // Each one named, with what its own Deleting condition says (Velero's refusal, say).
      const why = stay.slice(0, 3).map((o) => {
        const conditions = (o as { status?: { conditions?: Condition[] } }).status?.conditions;
        const deleting = findCondition(conditions, 'Deleting');
        const again =
          deleted.get(`${crd.type.kind}/${o.metadata.name}`) !== o.metadata.uid ? ' (made again)' : '';
        return `${o.metadata.name}${again}${deleting ? ` (${deleting.reason}: ${deleting.message.slice(0, 160)})` : ''}`;
      });
      if (stay.length)
        left.push(`${stay.length} ${what} not gone after ${timeoutMs / 1000} s: ${why.join('; ')}`);
    }
    return left.length ? left.join('; ') : undefined;
  }, timeoutMs);
  if (remaining) return [remaining];
  // Deleting a NAB (NAR) deletes its Velero Backup (Restore); any left is an orphan, and so is data of a
  // deleted backup. A Backup Velero's bucket sync made again for data the tenant kept is a new object.
  const orphaned = await settle(async () => {
    const problems: string[] = [];
    for (const [kind, mine, what] of [
      ['backup', nabs, 'Backup'],
      ['restore', nars, 'Restore'],
      ['schedule', schedules, 'Schedule'],
    ] as const) {
      for (const [origin, objects] of await veleroObjectsByOrigin(world, kind)) {
        if (!mine.includes(origin)) continue;
        const left = objects.filter((o) => {
          const uid = veleroUids.get(o.metadata.name!);
          if (kind !== 'backup' || withData || uid === undefined || uid === o.metadata.uid) return true;
          cameBack.add(`Velero Backup ${o.metadata.name} (from the bucket)`);
          return false;
        });
        if (left.length)
          problems.push(`Velero ${what} ${left.map((o) => o.metadata.name).join(', ')} of deleted ${origin}`);
      }
    }
    // A deleted ScopeInstance's bindings go with it (their owner reference): any left still grants.
    const granting = [...(await scopeBindings(world))].filter(([instance]) => scopes.includes(instance));
    problems.push(
      ...granting.map(([instance, b]) => `RoleBinding ${b.join(', ')} of deleted ScopeInstance ${instance}`),
    );
    if (withData && world.bucket) {
      for (const [nab, backup] of names) {
        const keys = await world.bucket(`backups/${backup}/`);
        if (keys.length)
          problems.push(`${keys.length} objects of NAB ${nab}'s backup ${backup} still in the bucket`);
      }
    }
    return problems.length ? problems.join('; ') : undefined;
  }, 60_000);
  if (cameBack.size) world.say(`  came back by sync, their data kept as asked: ${[...cameBack].join(', ')}`);
  return orphaned ? [orphaned] : [];
}

/** The bundled search database, reached at its Pod's address with the password the chart made. */
async function indexDatabase(world: World): Promise<pg.Client> {
  const secret = await world.admin.get<KubeObject & { data: Record<string, string> }>(
    Resources.secrets,
    `${world.release}-search-db`,
    world.namespace,
  );
  const [pod] = await componentPods(world, 'search-db');
  const client = new pg.Client({
    host: pod?.status?.podIP,
    port: 5432,
    user: 'postgres',
    database: 'postgres',
    password: Buffer.from(secret?.data.password ?? '', 'base64').toString(),
    connectionTimeoutMillis: 5_000,
  });
  await client.connect();
  return client;
}

/**
 * The uids of every object the API server serves of the types the hub's collector indexes (discovery's
 * collectable types), each with its creation time.
 */
async function servedUids(world: World): Promise<Map<string, { at: number; what: string }>> {
  const uids = new Map<string, { at: number; what: string }>();
  const { types } = await discover(world.admin);
  for (const type of types) {
    // A type that cannot be listed now makes the comparison fail, never pass: the error goes up.
    const list = await world.admin.list<KubeObject>(type);
    for (const o of list.items) {
      if (!o.metadata.uid) continue;
      const what = `${type.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
      uids.set(o.metadata.uid, { at: Date.parse(o.metadata.creationTimestamp ?? '') || 0, what });
    }
  }
  return uids;
}

/**
 * How the hub's rows in the search index differ from the API server's objects, or undefined once they are
 * the same set (waiting up to `timeoutMs` for the index to converge). Resolves with the time it took too.
 */
export async function indexDifference(
  world: World,
  timeoutMs: number,
): Promise<{ difference?: string; ms: number; lastCheckMs: number }> {
  const started = Date.now();
  let checkStarted = started;
  const difference = await settle(async () => {
    checkStarted = Date.now();
    const db = await indexDatabase(world);
    try {
      const served = await servedUids(world);
      const rows = await db.query<{ uid: string; what: string }>(
        "SELECT uid, concat(data->>'kind', ' ', coalesce(data->>'namespace' || '/', ''), data->>'name', ' (uid ', substr(uid, length(cluster) + 2), ', created ', data->>'created', ')') AS what FROM search.resources WHERE cluster = $1 AND uid NOT LIKE 'cluster\\_\\_%'",
        [HubCluster],
      );
      // Rows are keyed <cluster>/<uid> (indexUid); this cluster's by the object's own uid here.
      const indexed = new Map(rows.rows.map((r) => [r.uid.slice(HubCluster.length + 1), r.what]));
      // An object made in the last seconds (an Event's, a Lease's churn) may be on its way.
      const missing = [...served].filter(([u, o]) => !indexed.has(u) && o.at < Date.now() - 5_000);
      const stale = [...indexed].filter(([u]) => !served.has(u));
      if (missing.length + stale.length === 0) return undefined;
      const examples = [
        ...missing.map(([, o]) => `missing ${o.what}`),
        ...stale.map(([, w]) => `stale ${w}`),
      ];
      return `index of ${indexed.size} rows vs ${served.size} objects: ${missing.length} missing, ${stale.length} stale (${examples.slice(0, 8).join('; ')})`;
    } finally {
      await db.end().catch(() => {});
    }
  }, timeoutMs);
  if (difference) await keepLogs(world, 'search-collector');
  const ended = Date.now();
  return { ...(difference ? { difference } : {}), ms: ended - started, lastCheckMs: ended - checkStarted };
}

/**
 * Every controllers Pod's informer caches (its `/debug/caches`, read through the API server's proxy)
 * compared with a fresh list of the same objects, until they agree or `timeoutMs` passed: says which
 * caches still differ, or nothing. Caches filtered by a view are left out (only the process knows what
 * they should hold).
 */
export async function cacheDifference(world: World, timeoutMs: number): Promise<string | undefined> {
  return settle(async () => {
    const differing: string[] = [];
    for (const pod of await componentPods(world, 'controllers')) {
      const caches = await world.admin.request<InformerCache[]>(
        'GET',
        `/api/v1/namespaces/${world.namespace}/pods/${pod.metadata.name}:8080/proxy/debug/caches`,
      );
      for (const cache of caches.filter((c) => !c.filtered)) {
        if (!cache.synced) {
          differing.push(`${pod.metadata.name} ${cache.resource}: not synced`);
          continue;
        }
        const [group, version, plural] = cache.resource.split('/') as [string, string, string];
        const type = { group, version, plural, kind: '', namespaced: cache.namespace !== undefined };
        const fresh = await world.admin.listAll(type, {
          ...(cache.namespace ? { namespace: cache.namespace } : {}),
          ...(cache.labelSelector ? { labelSelector: cache.labelSelector } : {}),
          ...(cache.fieldSelector ? { fieldSelector: cache.fieldSelector } : {}),
        });
        const expected = cacheDigest(fresh.items);
        if (expected.digest !== cache.digest) {
          differing.push(
            `${pod.metadata.name} ${cache.resource}${cache.labelSelector ? `?${cache.labelSelector}` : ''}: ${cache.objects} cached, ${expected.objects} listed`,
          );
        }
      }
    }
    return differing.length > 0
      ? `informer caches differ from fresh lists: ${differing.join('; ')}`
      : undefined;
  }, timeoutMs);
}

/** Saves the component's Pods' logs (this run and the one before a restart) in the temp dir; says where. */
async function keepLogs(world: World, component: string): Promise<void> {
  for (const pod of await componentPods(world, component).catch(() => [])) {
    const name = pod.metadata.name!;
    const file = join(tmpdir(), `bench-faults-${Date.now()}-${name}.log`);
    const logs: string[] = [];
    for (const previous of [true, false]) {
      const text = await world.admin
        .request<string>('GET', `/api/v1/namespaces/${world.namespace}/pods/${name}/log`, {
          query: { previous: String(previous) },
          text: true,
        })
        .catch(() => '');
      logs.push(`--- ${previous ? 'previous' : 'current'} container ---\n${text}`);
    }
    await writeFile(file, logs.join('\n'));
    world.say(`  ${component} logs kept in ${file}`);
  }
}
