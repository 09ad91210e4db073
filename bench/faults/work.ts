// The tenant at work while a fault hits: namespaces created in her organization, NonAdminBackups of her
// namespace, NonAdminRestores of her base backup into it, NonAdminSchedules of it, ScopeInstances binding
// an admin's template in it, searches for her ConfigMaps, Pods with a Velero hook annotation that must
// never be admitted (dry runs), each through her own credentials and each answer recorded.
// Nothing here decides whether an end state is right: checks.ts does, once the round settled.
import { setTimeout as sleep } from 'node:timers/promises';
import { NonAdminBackupCrd, NonAdminRestoreCrd, NonAdminScheduleCrd } from '../../src/crds/backup.ts';
import { ScopeInstanceCrd } from '../../src/crds/scopes.ts';
import { ApiError } from '../../src/kube/client.ts';
import { type KubeObject, Resources, resourcePath } from '../../src/kube/resources.ts';
import type { Operation, World } from './model.ts';

/** Her search: the ConfigMaps of her namespace, which must be exactly `world.known`. */
export const knownQuery = (home: string) =>
  `{ search(input: [{ filters: [{ property: "kind", values: ["ConfigMap"] }, { property: "namespace", values: ["${home}"] }], limit: 1000 }]) { items } }`;

/** Answers a search: undefined when it is exactly what she may see, else what was wrong with it. */
export function searchProblem(
  world: World,
  reply: { status: number; body: string },
): { refusal?: string; wrong?: string } {
  let parsed: { data?: { search?: { items?: { name: string }[] }[] | null }; errors?: { message: string }[] };
  try {
    parsed = JSON.parse(reply.body);
  } catch {
    return { refusal: `${reply.status} ${reply.body.slice(0, 160)}` };
  }
  const items = parsed.data?.search?.[0]?.items;
  if (reply.status !== 200 || !items) {
    return { refusal: `${reply.status} ${parsed.errors?.[0]?.message ?? reply.body.slice(0, 160)}` };
  }
  const names = items.map((i) => i.name).sort();
  const want = [...world.known].sort();
  if (names.join() === want.join()) return {};
  const missing = want.filter((n) => !names.includes(n));
  const extra = names.filter((n) => !want.includes(n));
  return {
    wrong: `search answered 200 with ${missing.length} missing and ${extra.length} extra: ${[...missing, ...extra].slice(0, 3).join(', ')}`,
  };
}

/** ms between the tenant's requests of each kind. */
export interface Pace {
  namespace: number;
  backup: number;
  search: number;
  /** Restores from the world's base backup; none without it, or without this. */
  restore?: number;
  /** ScopeInstances of the world's scope template; none without it, or without this. */
  scope?: number;
  /** NonAdminSchedules (due once a year: the hand-over to Velero is what is checked); none without this. */
  schedule?: number;
  /**
   * Pods carrying a Velero hook annotation in her namespace (dry runs): each must be refused, by the
   * pod-hooks webhook or by kube-apiserver when it cannot call it (fail closed); none without this.
   */
  hookPod?: number;
}

/** The hook her refused Pods carry: Velero would run it, with its default 30 s timeout, in every backup. */
export const hookAnnotation = { 'pre.hook.backup.velero.io/command': '["/bin/sleep", "86400"]' };

/** A schedule that does not run during a round: on January 1st at 03:00. */
export const yearlySchedule = '0 3 1 1 *';

/** The bench's tenant: busy, but each request answered before the next of its kind. */
export const benchPace: Pace = {
  namespace: 400,
  backup: 2_000,
  search: 300,
  restore: 3_000,
  scope: 2_500,
  schedule: 4_000,
  hookPod: 1_000,
};

export class TenantWork {
  readonly operations: Operation[] = [];
  /** When each operation was answered (ms since start); in flight until then. */
  private readonly answered = new Map<Operation, number>();
  private readonly started = performance.now();
  private running = true;
  private readonly loops: Promise<void>[];
  private readonly world: World;

  private readonly backupSpec: Record<string, unknown>;

  /** `round` prefixes every name this round makes. */
  constructor(
    world: World,
    round: string,
    options: { pace?: Pace | undefined; backupSpec?: Record<string, unknown> } = {},
  ) {
    this.world = world;
    this.backupSpec = options.backupSpec ?? {};
    const paceMs = options.pace ?? benchPace;
    this.loops = [
      this.every(paceMs.namespace, (i) => this.createNamespace(`${round}-n${i}`)),
      this.every(paceMs.backup, (i) => this.createBackup(`${round}-b${i}`)),
      this.every(paceMs.search, (i) => this.searchOnce(`${round}-s${i}`)),
    ];
    const base = world.baseBackup;
    if (paceMs.restore && base) {
      this.loops.push(this.every(paceMs.restore, (i) => this.createRestore(`${round}-r${i}`, base)));
    }
    if (paceMs.schedule) {
      this.loops.push(this.every(paceMs.schedule, (i) => this.createSchedule(`${round}-sch${i}`)));
    }
    if (paceMs.hookPod) {
      this.loops.push(this.every(paceMs.hookPod, (i) => this.tryHookPod(`${round}-hook${i}`)));
    }
    const template = world.scopeTemplate;
    if (paceMs.scope && template) {
      this.loops.push(this.every(paceMs.scope, (i) => this.createScope(`${round}-scope${i}`, template)));
    }
  }

  /** ms since the round started. */
  now(): number {
    return performance.now() - this.started;
  }

  /** Operations started before `at` and answered after it. */
  inFlightAt(at: number): number {
    return this.operations.filter((o) => o.startedAt <= at && (this.answered.get(o) ?? Infinity) > at).length;
  }

  /** No new operations; resolves when every started one was answered. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async every(gapMs: number, one: (i: number) => Promise<void>): Promise<void> {
    for (let i = 0; this.running; i++) {
      const next = sleep(gapMs);
      await one(i);
      await next;
    }
  }

  private async record(
    kind: Operation['kind'],
    name: string,
    call: (op: Operation) => Promise<unknown>,
  ): Promise<void> {
    const op: Operation = { kind, name, startedAt: this.now(), answer: { ok: true } };
    this.operations.push(op);
    try {
      await call(op);
    } catch (err) {
      op.answer =
        err instanceof ApiError
          ? { ok: false, status: err.status, message: err.message }
          : { ok: false, status: 0, message: (err as Error).message };
    }
    const now = this.now();
    this.answered.set(op, now);
    op.tookMs = now - op.startedAt;
  }

  private createNamespace(name: string): Promise<void> {
    const { tenant, organizationLabel, organization } = this.world;
    return this.record('namespace', name, () =>
      tenant.create(Resources.namespaces, {
        metadata: { name, labels: { [organizationLabel]: organization } },
      }),
    );
  }

  private createBackup(name: string): Promise<void> {
    return this.record('backup', name, () =>
      this.world.tenant.create(NonAdminBackupCrd.type, {
        metadata: { name, namespace: this.world.home },
        spec: { backupSpec: this.backupSpec },
      } as KubeObject),
    );
  }

  private createRestore(name: string, backupName: string): Promise<void> {
    return this.record('restore', name, () =>
      this.world.tenant.create(NonAdminRestoreCrd.type, {
        metadata: { name, namespace: this.world.home },
        spec: { restoreSpec: { backupName } },
      } as KubeObject),
    );
  }

  private createSchedule(name: string): Promise<void> {
    return this.record('schedule', name, () =>
      this.world.tenant.create(NonAdminScheduleCrd.type, {
        metadata: { name, namespace: this.world.home },
        spec: { schedule: yearlySchedule, template: { backupSpec: {} } },
      } as KubeObject),
    );
  }

  private createScope(name: string, scopeTemplateName: string): Promise<void> {
    return this.record('scope', name, () =>
      this.world.tenant.create(ScopeInstanceCrd.type, {
        metadata: { name },
        spec: { scopeTemplateName, namespaces: [this.world.home] },
      } as KubeObject),
    );
  }

  /** A Pod that would have Velero run her command in every backup: admitted is wrong, whatever the fault. */
  private tryHookPod(name: string): Promise<void> {
    const { tenant, home } = this.world;
    return this.record('hook-pod', name, async (op) => {
      await tenant.request('POST', resourcePath(Resources.pods, home), {
        body: {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name, namespace: home, annotations: hookAnnotation },
          spec: { containers: [{ name: 'main', image: 'registry.example/stall:1' }] },
        },
        query: { dryRun: 'All' },
      });
      op.wrong = `Pod ${home}/${name} with ${Object.keys(hookAnnotation)[0]} admitted (dry run): the pod-hooks webhook did not refuse it`;
    });
  }

  private searchOnce(name: string): Promise<void> {
    return this.record('search', name, async (op) => {
      const reply = await this.world.search(knownQuery(this.world.home));
      const problem = searchProblem(this.world, reply);
      if (problem.wrong) {
        // Answered, but wrong: the worst outcome there is. Recorded as answered, and marked wrong.
        op.wrong = problem.wrong;
        return;
      }
      if (problem.refusal)
        throw new ApiError(reply.status, 'SearchRefused', problem.refusal.replace(/^\d+ /, ''), reply.body);
    });
  }
}
