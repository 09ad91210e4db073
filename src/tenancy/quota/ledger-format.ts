// The namespace-quota ledger's format and arithmetic (pure; `ledger.ts` reads and writes it).
//
// One ConfigMap per organization holds `reservations`: a JSON object from a key to the time (ms) until
// which that key counts against the quota. A key is either
// - a namespace name: a namespace admitted but perhaps not yet in every replica's cache, or
// - a grant slot `<grant>/<i>` (never a namespace name: those have no '/'): one of a block of slots a
//   webhook replica took in one write and hands out from memory, without a write per namespace.
// `grants` maps each grant to the time its holder stops handing out its slots. Slots count in full for
// every other replica until the holder returns the grant (its slots replaced by the names it admitted)
// or, if the holder died, until the slots' own time runs out: an admission made just before the grant
// closed is then in every cache. Keeping slots as plain reservations means an older webhook that knows
// nothing of grants still counts them, during a rolling upgrade too.
//
// Every reservation is provisional: it stands for a namespace admitted but not yet seen, and counts only
// for the hold (TenancyConfig.spec.namespaceQuotaHoldSeconds, seconds). A namespace that appears counts
// as owned from then on; one that never appears (a create a later webhook refused, or an AdmissionReview
// nobody followed with a create) stops costing its organization anything when the hold runs out.

export interface Ledger {
  reservations: Map<string, number>;
  grantCloses: Map<string, number>;
}

export const slotKey = (grant: string, index: number) => `${grant}/${index}`;

/** The grant a reservation key is a slot of, or undefined for a namespace name. */
export function grantOf(key: string): string | undefined {
  const slash = key.indexOf('/');
  return slash < 0 ? undefined : key.slice(0, slash);
}

function numbers(raw: string | undefined, what: string): Map<string, number> {
  if (!raw) return new Map();
  const parsed: unknown = JSON.parse(raw);
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new Error(`namespace quota ledger: ${what} is not a JSON object`);
  const out = new Map<string, number>();
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw new Error(`namespace quota ledger: ${what}["${key}"] is not a number`);
    out.set(key, value);
  }
  return out;
}

/** Reads a ledger's data. Only tenantkit's webhooks write it; anything malformed fails closed (throws). */
export function parseLedger(data: Record<string, string> | undefined): Ledger {
  return {
    reservations: numbers(data?.reservations, 'reservations'),
    grantCloses: numbers(data?.grants, 'grants'),
  };
}

export function serializeLedger(ledger: Ledger): Record<string, string> {
  return {
    reservations: JSON.stringify(Object.fromEntries([...ledger.reservations].sort())),
    grants: JSON.stringify(Object.fromEntries([...ledger.grantCloses].sort())),
  };
}

export interface LedgerView {
  ledger: Ledger;
  /** Namespaces the organization owns in this replica's cache (terminating ones left out). */
  owned: Set<string>;
  /** True when this replica's cache holds the namespace (terminating or not). */
  cached(namespace: string): boolean;
  /** Grants this replica holds (in memory), with the namespaces each admitted. */
  own: Map<string, Set<string>>;
  now: number;
}

export interface ForeignGrant {
  grant: string;
  slots: number;
  closes: number;
}

export interface Usage {
  /** Namespaces that count by name: owned, reserved and not yet cached, or admitted from own grants. */
  counted: Set<string>;
  /** Live slots of grants other replicas hold: each may be a namespace they admitted. */
  foreign: ForeignGrant[];
  used: number;
  /**
   * When each of `used` that is not an existing namespace stops counting unless its namespace appears
   * (ms, ascending): reservations of names not yet seen, other replicas' slots, this replica's admitted
   * names (their grant's slot time). Its length is how many slots are held rather than owned.
   */
  provisional: number[];
}

/** What counts against the quota now, from one replica's point of view. */
export function usage(view: LedgerView): Usage {
  const counted = new Set(view.owned);
  const foreign = new Map<string, ForeignGrant>();
  const provisional: number[] = [];
  for (const [key, until] of view.ledger.reservations) {
    if (until <= view.now) continue;
    const grant = grantOf(key);
    if (grant === undefined) {
      if (!view.cached(key) && !counted.has(key)) {
        counted.add(key);
        provisional.push(until);
      }
    } else if (!view.own.has(grant)) {
      const closes = view.ledger.grantCloses.get(grant) ?? until;
      const entry = foreign.get(grant) ?? { grant, slots: 0, closes };
      entry.slots++;
      foreign.set(grant, entry);
      provisional.push(until);
    }
  }
  for (const [grant, names] of view.own)
    for (const name of names)
      if (!view.owned.has(name) && !view.cached(name) && !counted.has(name)) {
        counted.add(name);
        // Returned, the name is reserved for a hold from then: at most its slots' time.
        provisional.push(view.ledger.reservations.get(slotKey(grant, 0)) ?? view.now);
      }
  const held = [...foreign.values()].reduce((sum, g) => sum + g.slots, 0);
  provisional.sort((x, y) => x - y);
  return { counted, foreign: [...foreign.values()], used: counted.size + held, provisional };
}

export interface NextLedger {
  view: LedgerView;
  /** How long a name reservation lasts. */
  reservationMs: number;
  /** A reservation of a namespace some cache already holds is dropped only after this long. */
  settleMs: number;
  /** Own grants to return in this write: their slots go, the names they admitted stay reserved. */
  returning: string[];
}

/**
 * The ledger to write next: expired entries dropped, reservations of namespaces this replica has seen
 * (after `settleMs`, so a replica whose cache lags a little still finds them) dropped, and the returned
 * grants turned into reservations of the names they admitted.
 */
export function nextLedger(next: NextLedger): Ledger {
  const { view } = next;
  const returning = new Set(next.returning);
  const reservations = new Map<string, number>();
  for (const [key, until] of view.ledger.reservations) {
    if (until <= view.now) continue;
    const grant = grantOf(key);
    if (grant !== undefined && returning.has(grant)) continue;
    const madeAt = until - next.reservationMs;
    if (grant === undefined && view.cached(key) && madeAt + next.settleMs < view.now) continue;
    reservations.set(key, until);
  }
  for (const grant of returning)
    for (const name of view.own.get(grant) ?? []) reservations.set(name, view.now + next.reservationMs);
  const live = new Set([...reservations.keys()].map(grantOf));
  const grantCloses = new Map([...view.ledger.grantCloses].filter(([grant]) => live.has(grant)));
  return { reservations, grantCloses };
}

/** Slots for a new grant: a quarter of what is left, so that other replicas rarely wait; 0 for none. */
export function grantSize(limit: number, used: number, maxBlock: number): number {
  const size = Math.min(maxBlock, Math.floor((limit - used) / 4));
  return size >= 2 ? size : 0;
}
