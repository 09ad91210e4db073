// Namespace quota per organization, safe under concurrency and across webhook replicas. Counting the
// cache alone would let 20 parallel creates at quota-1 all pass; instead decisions go through a
// per-organization ledger ConfigMap written with a compare-and-swap on resourceVersion, so the API
// server orders them (format and arithmetic: `ledger-format.ts`).
//
// A write per namespace would cost every tenant's create a second API round trip (measured: 5 of the
// 7 ms the policy took). So while an organization is far from its quota, a replica takes a block of
// slots in one write (a grant: a quarter of what is left, at most `maxBlock`) and admits from it in
// memory for `windowMs`; then it returns the grant, keeping only the names it admitted as reservations.
// Other replicas count the whole block until then, so the quota holds; one that would refuse only
// because of another replica's open grant waits for it to be returned (at most `windowMs` and a bit)
// instead of refusing early. Near the limit every decision is a single reservation, as before.
//
// Anyone who reaches the webhook port can send an AdmissionReview, with any userInfo, and no create need
// follow it. So a reservation is provisional: it counts only for the hold (`holdMs`, a few seconds, set
// by TenancyConfig.spec.namespaceQuotaHoldSeconds), long enough for an admitted create to be stored and
// seen; then only namespaces that exist count. A refusal says how many slots are held, not owned, and
// when the first of them frees.
import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter } from 'prom-client';
import { isAlreadyExists, isConflict, type KubeClient } from '../../kube/client.ts';
import type { Informer } from '../../kube/informer.ts';
import type { Logger } from '../../kube/log.ts';
import type { Manager } from '../../kube/manager.ts';
import { registry } from '../../kube/metrics.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { type Directory, isTerminating, organizationAnnotation } from '../model.ts';
import {
  grantSize,
  type Ledger,
  type LedgerView,
  nextLedger,
  parseLedger,
  serializeLedger,
  slotKey,
  usage,
} from './ledger-format.ts';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

const ledgerLabel = 'tenancy.tenantkit.io/ledger';
const ledgerValue = 'namespace-quota';
const ledgerSelector = `${ledgerLabel}=${ledgerValue}`;
const maxAttempts = 50;
/** A grant that admitted at least this many namespaces in its window is renewed when it is returned. */
const renewAfter = 2;

const decisions = new Counter({
  name: 'tenantkit_tenancy_namespace_quota_decisions_total',
  help: 'Namespace quota decisions by where they were made (grant: from a block held in memory; ledger: by a ledger write or read) and outcome.',
  labelNames: ['source', 'allowed'],
  registers: [registry],
});

const ledgerWrites = new Counter({
  name: 'tenantkit_tenancy_namespace_quota_ledger_writes_total',
  help: 'Successful writes of namespace quota ledgers, by kind (grant, reservation, return, renewal: a return that takes the next grant).',
  labelNames: ['kind'],
  registers: [registry],
});

export interface QuotaTuning {
  /** How long a replica admits from a grant before returning it. */
  windowMs: number;
  /** Most slots in one grant. */
  maxBlock: number;
  /** How long a reservation stays after this replica's cache holds the namespace (others may lag). */
  settleMs: number;
  /** How long after a grant's window closes its holder is expected to have returned it. */
  returnGraceMs: number;
}

const defaultTuning: QuotaTuning = {
  windowMs: 2_000,
  maxBlock: 32,
  settleMs: 5_000,
  returnGraceMs: 1_000,
};

export type QuotaDecision =
  | { ok: true }
  /**
   * `held`: of `used`, slots held for namespaces admitted but not (yet) existing: other replicas' open
   * grants and reservations of names not yet seen (each may or may not become a namespace).
   * `freesAt`: when the first of them stops counting if its namespace has not appeared (ms).
   */
  | { ok: false; used: number; held: number; freesAt?: number };

export interface QuotaRequest {
  organization: string;
  namespace: string;
  label: string;
  limit: number;
  ledgerNamespace: string;
  dryRun: boolean;
  /** How long a reservation counts: a create admitted and still on its way through the API server. */
  holdMs: number;
}

/** A grant this replica holds: slots it hands out from memory while `open`, until it is returned. */
interface HeldGrant {
  id: string;
  slots: number;
  /** The quota the slots were sized for: while it holds, every slot fits without recounting. */
  limit: number;
  closes: number;
  admitted: Set<string>;
  open: boolean;
}

/** What one replica knows of one organization's ledger. */
class LedgerState {
  readonly held = new Map<string, HeldGrant>();
  current?: HeldGrant;
  returnTimer?: NodeJS.Timeout;
  /** The return (or renewal) write in flight, which creates at a window's end wait for. */
  returning?: Promise<void>;
  /** The organization label the configuration names (it may change while the replica runs). */
  label = '';
  /** The hold the configuration names (it may change too). */
  holdMs = 10_000;
  readonly namespace: string;
  readonly name: string;
  readonly organization: string;
  constructor(namespace: string, name: string, organization: string) {
    this.namespace = namespace;
    this.name = name;
    this.organization = organization;
  }

  own(): Map<string, Set<string>> {
    return new Map([...this.held].map(([id, g]) => [id, g.admitted]));
  }

  /** Stops handing out the current grant's slots; it is returned with the next write. */
  closeCurrent(): void {
    if (this.current) this.current.open = false;
    this.current = undefined;
  }

  closed(): string[] {
    return [...this.held.values()].filter((g) => !g.open).map((g) => g.id);
  }

  /** The current grant's window has passed and it admitted enough to be renewed when returned. */
  renewalDue(now: number): boolean {
    const grant = this.current;
    return grant !== undefined && now >= grant.closes && grant.admitted.size >= renewAfter;
  }
}

export class QuotaLedger {
  private readonly client: KubeClient;
  private readonly directory: Directory;
  private readonly cache: Informer<ConfigMap>;
  private readonly cachedNamespace: string;
  private readonly logger: Logger;
  private readonly tuning: QuotaTuning;
  /** Names this replica's grants: random per process, so a restarted replica never claims old ones. */
  private readonly holder = randomBytes(4).toString('hex');
  private sequence = 0;
  private readonly states = new Map<string, LedgerState>();

  /** `namespace` is tenantkit's own: the ledger lives there unless the configuration moves it. */
  constructor(
    client: KubeClient,
    directory: Directory,
    manager: Manager,
    namespace: string,
    tuning: Partial<QuotaTuning> = {},
  ) {
    this.client = client;
    this.directory = directory;
    this.cachedNamespace = namespace;
    this.logger = manager.logger;
    this.tuning = { ...defaultTuning, ...tuning };
    this.cache = manager.informer<ConfigMap>({
      ...Resources.configMaps,
      labelSelector: ledgerSelector,
      watchNamespace: namespace,
    });
  }

  /** Namespaces an organization owns now (terminating ones do not count). */
  owned(organization: string, label: string): Set<string> {
    return new Set(
      this.directory
        .organizationNamespaces(organization, label)
        .filter((name) => !isTerminating(this.directory.namespace(name)!)),
    );
  }

  /** Admits `namespace` into `organization` if that keeps it within `limit`, reserving the slot. */
  async reserve(request: QuotaRequest): Promise<QuotaDecision> {
    const state = this.stateFor(request);
    let waited = 0;
    // The cache is usually current: a stale copy costs a 409 and a re-read before a write, and a
    // refusal is always confirmed by a read from the API server.
    let fresh = false;
    for (let conflicts = 0; conflicts < maxAttempts; ) {
      const fromGrant = this.fromGrant(state, request);
      if (fromGrant) {
        decisions.inc({ source: 'grant', allowed: 'true' });
        return fromGrant;
      }
      // A busy grant's window has just closed: its renewal (already in flight, or started here ahead
      // of the timer) hands out the next slots, so this create takes them from memory rather than
      // racing the renewal with a grant write of its own. A renewal that fails or takes no grant leaves
      // nothing due, and the ledger decides below.
      if (!request.dryRun && (state.returning || state.renewalDue(Date.now()))) {
        await this.returnNow(state).catch(() => undefined);
        continue;
      }
      if (!request.dryRun) state.closeCurrent();
      const { current, cached } = await this.read(state, !fresh);
      fresh = false;
      const view = this.view(state, current);
      const use = usage(view);
      if (use.counted.has(request.namespace)) return this.decided({ ok: true });
      if (use.used + 1 > request.limit) {
        const wait = this.waitForReturns(use.foreign, view.now, waited);
        if (wait > 0) {
          await sleep(wait);
          waited += wait;
        } else if (cached) fresh = true;
        else {
          const held = use.provisional.length;
          const freesAt = use.provisional[0];
          return this.decided({ ok: false, used: use.used, held, ...(freesAt ? { freesAt } : {}) });
        }
        continue;
      }
      if (request.dryRun) return this.decided({ ok: true });
      if (await this.write(state, request, view, use.used, current)) {
        return this.decided({ ok: true });
      }
      conflicts++;
      fresh = true;
      await sleep(Math.random() * 20);
    }
    throw new Error(
      `namespace quota ledger for ${request.organization} stayed contended after ${maxAttempts} attempts`,
    );
  }

  private stateFor(request: QuotaRequest): LedgerState {
    // Organization names cannot hold '/': the key is unambiguous.
    const key = `${request.ledgerNamespace}/${request.organization}`;
    let state = this.states.get(key);
    if (!state) {
      const name = `tenantkit-nsquota-${createHash('sha256').update(request.organization).digest('hex').slice(0, 16)}`;
      state = new LedgerState(request.ledgerNamespace, name, request.organization);
      this.states.set(key, state);
    }
    state.label = request.label;
    state.holdMs = request.holdMs;
    return state;
  }

  private async read(
    state: LedgerState,
    fromCache: boolean,
  ): Promise<{ current: ConfigMap | undefined; cached: boolean }> {
    if (fromCache && state.namespace === this.cachedNamespace)
      return { current: this.cache.get(`${state.namespace}/${state.name}`), cached: true };
    return {
      current: await this.client.get<ConfigMap>(Resources.configMaps, state.name, state.namespace),
      cached: false,
    };
  }

  private view(state: LedgerState, current: ConfigMap | undefined): LedgerView {
    return {
      ledger: parseLedger(current?.data),
      owned: this.owned(state.organization, state.label),
      cached: (name) => this.directory.namespace(name) !== undefined,
      own: state.own(),
      now: Date.now(),
    };
  }

  /** A decision from the open grant in memory, or undefined when the ledger must decide. */
  private fromGrant(state: LedgerState, request: QuotaRequest): QuotaDecision | undefined {
    const grant = state.current;
    if (!grant?.open || Date.now() >= grant.closes) return undefined;
    if (grant.admitted.has(request.namespace)) return { ok: true };
    if (grant.admitted.size >= grant.slots) return undefined;
    // The slots were sized to fit the quota as it was, and every other replica counts them in full, so
    // while the limit holds any free slot fits. A lowered limit is counted as a ledger write would.
    if (request.limit < grant.limit) {
      const use = usage(this.view(state, this.cache.get(`${state.namespace}/${state.name}`)));
      if (use.used + 1 > request.limit) return undefined;
    }
    if (!request.dryRun) grant.admitted.add(request.namespace);
    return { ok: true };
  }

  /** How long to wait for other replicas to return the grants that stand in the way; 0: decide now. */
  private waitForReturns(foreign: { closes: number }[], now: number, waited: number): number {
    const { windowMs, returnGraceMs } = this.tuning;
    const due = foreign.map((g) => g.closes + returnGraceMs).filter((t) => t > now);
    if (due.length === 0) return 0;
    const budget = windowMs + 2 * returnGraceMs - waited;
    // Short steps on the cache: a returned grant is seen within one.
    return budget > 0 ? Math.min(budget, 100) : 0;
  }

  /** One compare-and-swap of the ledger: a grant or a single reservation, returning closed grants. */
  private async write(
    state: LedgerState,
    request: QuotaRequest,
    view: LedgerView,
    used: number,
    current: ConfigMap | undefined,
  ): Promise<boolean> {
    const { settleMs } = this.tuning;
    const reservationMs = state.holdMs;
    const returning = state.closed();
    const ledger = nextLedger({ view, reservationMs, settleMs, returning });
    const grant = this.grantInto(state, ledger, request.limit, used, view.now);
    if (grant) grant.admitted.add(request.namespace);
    else ledger.reservations.set(request.namespace, view.now + reservationMs);
    if (!(await this.compareAndSwap(state, current, serializeLedger(ledger)))) return false;
    ledgerWrites.inc({ kind: grant ? 'grant' : 'reservation' });
    for (const id of returning) state.held.delete(id);
    if (grant) this.hold(state, grant, view.now);
    return true;
  }

  /** A new grant sized for what is left, its slots written into `ledger`; undefined when too little is. */
  private grantInto(
    state: LedgerState,
    ledger: Ledger,
    limit: number,
    used: number,
    now: number,
  ): HeldGrant | undefined {
    const { windowMs, maxBlock } = this.tuning;
    const reservationMs = state.holdMs;
    const slots = grantSize(limit, used, maxBlock);
    if (!slots) return undefined;
    const grant: HeldGrant = {
      id: `${this.holder}.${++this.sequence}`,
      slots,
      limit,
      closes: now + windowMs,
      admitted: new Set(),
      open: true,
    };
    for (let i = 0; i < slots; i++)
      ledger.reservations.set(slotKey(grant.id, i), grant.closes + reservationMs);
    ledger.grantCloses.set(grant.id, grant.closes);
    return grant;
  }

  /** Hands out a grant's slots from now on, until its window closes. */
  private hold(state: LedgerState, grant: HeldGrant, now: number): void {
    // Another call of this replica may have taken a grant meanwhile (its write landed between our read
    // and ours): it stops handing out slots and is returned with the next write, never left open.
    state.closeCurrent();
    state.held.set(grant.id, grant);
    state.current = grant;
    this.scheduleReturn(state, grant.closes - now);
  }

  private async compareAndSwap(
    state: LedgerState,
    current: ConfigMap | undefined,
    data: Record<string, string>,
  ): Promise<boolean> {
    const body: ConfigMap = {
      metadata: {
        name: state.name,
        namespace: state.namespace,
        labels: { [ledgerLabel]: ledgerValue },
        annotations: { [organizationAnnotation]: state.organization },
        ...(current ? { resourceVersion: current.metadata.resourceVersion } : {}),
      },
      data,
    };
    try {
      if (current) await this.client.replace(Resources.configMaps, body);
      else await this.client.create(Resources.configMaps, body);
      return true;
    } catch (err) {
      if (isConflict(err) || isAlreadyExists(err)) return false;
      throw err;
    }
  }

  private scheduleReturn(state: LedgerState, inMs: number): void {
    clearTimeout(state.returnTimer);
    state.returnTimer = setTimeout(() => {
      this.returnNow(state).catch((err: Error) => {
        this.logger.warn(
          { organization: state.organization, err: err.message },
          'namespace quota: returning a grant failed; retrying in 1 s (its slots count until then)',
        );
        this.scheduleReturn(state, 1_000);
      });
    }, Math.max(0, inMs) + 5);
    state.returnTimer.unref();
  }

  /** Runs `returnGrants`, one at a time per organization: a caller that finds one in flight joins it. */
  private returnNow(state: LedgerState): Promise<void> {
    state.returning ??= this.returnGrants(state).finally(() => {
      state.returning = undefined;
    });
    return state.returning;
  }

  /**
   * Closes the current grant once its window passed and writes back every closed grant. A grant that
   * admitted several namespaces is renewed in the same write: an organization creating namespaces in a
   * steady stream then always finds slots in memory, and its creates never wait for a ledger write.
   */
  private async returnGrants(state: LedgerState): Promise<void> {
    const expired = state.current && Date.now() >= state.current.closes ? state.current : undefined;
    if (expired) state.closeCurrent();
    const busy = expired && expired.admitted.size >= renewAfter ? expired : undefined;
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      const returning = state.closed();
      if (returning.length === 0) break;
      const { current } = await this.read(state, false);
      const view = this.view(state, current);
      const { settleMs } = this.tuning;
      const reservationMs = state.holdMs;
      // Computed before the returned grants' slots go: what they admitted counts, as in `write`.
      const used = usage(view).used;
      const ledger = nextLedger({ view, reservationMs, settleMs, returning });
      // Not when a request of this replica took a grant meanwhile (`current`): one open grant at a time.
      const renewal =
        busy && !state.current ? this.grantInto(state, ledger, busy.limit, used, view.now) : undefined;
      if (await this.compareAndSwap(state, current, serializeLedger(ledger))) {
        ledgerWrites.inc({ kind: renewal ? 'renewal' : 'return' });
        for (const id of returning) state.held.delete(id);
        if (renewal) this.hold(state, renewal, view.now);
        break;
      }
      await sleep(Math.random() * 20);
    }
    if (state.current) this.scheduleReturn(state, state.current.closes - Date.now());
  }

  private decided(decision: QuotaDecision): QuotaDecision {
    decisions.inc({ source: 'ledger', allowed: String(decision.ok) });
    return decision;
  }
}
