// The namespace-quota ledger's arithmetic: what counts, what a write keeps, how large a grant is.
import { describe, expect, it } from 'vitest';
import {
  grantOf,
  type Ledger,
  type LedgerView,
  nextLedger,
  parseLedger,
  serializeLedger,
  slotKey,
  usage,
} from '../../src/tenancy/quota/ledger-format.ts';

const now = 1_000_000;
const minute = 60_000;

function view(ledger: Ledger, overrides: Partial<LedgerView> = {}): LedgerView {
  return { ledger, owned: new Set(), cached: () => false, own: new Map(), now, ...overrides };
}

function ledgerOf(reservations: Record<string, number>, grants: Record<string, number> = {}): Ledger {
  return parseLedger({ reservations: JSON.stringify(reservations), grants: JSON.stringify(grants) });
}

describe('namespace quota ledger', () => {
  it('reads the format of earlier releases (reservations only) and fails closed on anything else', () => {
    const legacy = parseLedger({ reservations: JSON.stringify({ a: now + minute }) });
    expect([...legacy.reservations]).toEqual([['a', now + minute]]);
    expect(legacy.grantCloses.size).toBe(0);
    expect(parseLedger(undefined).reservations.size).toBe(0);
    expect(() => parseLedger({ reservations: '[1]' })).toThrow(/not a JSON object/);
    expect(() => parseLedger({ reservations: '{"a":"soon"}' })).toThrow(
      /reservations\["a"\] is not a number/,
    );
    expect(() => parseLedger({ reservations: '{' })).toThrow();
  });

  it('keeps slots as reservations an older webhook counts one by one', () => {
    const ledger = ledgerOf({});
    for (let i = 0; i < 3; i++) ledger.reservations.set(slotKey('g1', i), now + minute);
    ledger.grantCloses.set('g1', now + 2_000);
    const data = serializeLedger(ledger);
    // What a release before grants did: every live key not in its cache counts.
    const old = Object.entries(JSON.parse(data.reservations!) as Record<string, number>).filter(
      ([, until]) => until > now,
    );
    expect(old).toHaveLength(3);
    expect(grantOf(slotKey('g1', 2))).toBe('g1');
    expect(grantOf('team-a-dev')).toBeUndefined();
  });

  it('counts owned and reserved names once each, and every live slot of another replica', () => {
    const ledger = ledgerOf(
      {
        owned: now + minute, // reserved and already in the cache: counted once
        coming: now + minute, // reserved, not yet in the cache
        expired: now - 1,
        [slotKey('other', 0)]: now + minute,
        [slotKey('other', 1)]: now + minute,
        [slotKey('gone', 0)]: now - 1,
      },
      { other: now + 1_500 },
    );
    const use = usage(
      view(ledger, { owned: new Set(['owned', 'old']), cached: (n) => n === 'owned' || n === 'old' }),
    );
    expect([...use.counted].sort()).toEqual(['coming', 'old', 'owned']);
    expect(use.foreign).toEqual([{ grant: 'other', slots: 2, closes: now + 1_500 }]);
    expect(use.used).toBe(5);
    // Held, not owned: 'coming' and the two slots, each until its time runs out.
    expect(use.provisional).toEqual([now + minute, now + minute, now + minute]);
  });

  it('says when each slot held for a namespace that does not exist yet stops counting', () => {
    const ledger = ledgerOf({ late: now + 9_000, early: now + 2_000, [slotKey('mine', 0)]: now + 5_000 });
    const use = usage(view(ledger, { own: new Map([['mine', new Set(['fresh'])]]) }));
    expect(use.used).toBe(3);
    expect(use.provisional).toEqual([now + 2_000, now + 5_000, now + 9_000]);
  });

  it("counts this replica's own grant by the names it admitted, not by its slots", () => {
    const ledger = ledgerOf({ [slotKey('mine', 0)]: now + minute, [slotKey('mine', 1)]: now + minute });
    const use = usage(view(ledger, { own: new Map([['mine', new Set(['a'])]]) }));
    expect([...use.counted]).toEqual(['a']);
    expect(use.foreign).toEqual([]);
    expect(use.used).toBe(1);
  });

  it('a slot without its close time (written by an older webhook) closes when it expires', () => {
    const use = usage(view(ledgerOf({ [slotKey('g', 0)]: now + 10 }), {}));
    expect(use.foreign).toEqual([{ grant: 'g', slots: 1, closes: now + 10 }]);
  });

  it('returns a grant as reservations of the names it admitted and drops what no longer counts', () => {
    const ledger = ledgerOf(
      {
        [slotKey('mine', 0)]: now + minute,
        [slotKey('mine', 1)]: now + minute,
        [slotKey('other', 0)]: now + minute,
        settled: now + minute - 10_000, // made 10 s ago, in the cache: dropped
        recent: now + minute - 1_000, // made 1 s ago, in the cache: kept for lagging replicas
        inflight: now + minute - 30_000, // not in the cache: kept
        expired: now - 1,
      },
      { mine: now, other: now + 1_000, stale: now - 5 },
    );
    const next = nextLedger({
      view: view(ledger, {
        cached: (n) => n === 'settled' || n === 'recent',
        own: new Map([['mine', new Set(['x'])]]),
      }),
      reservationMs: minute,
      settleMs: 5_000,
      returning: ['mine'],
    });
    expect(Object.fromEntries(next.reservations)).toEqual({
      [slotKey('other', 0)]: now + minute,
      recent: now + minute - 1_000,
      inflight: now + minute - 30_000,
      x: now + minute,
    });
    expect(Object.fromEntries(next.grantCloses)).toEqual({ other: now + 1_000 });
  });
});

describe('grant size', () => {
  it('is a quarter of what is left, at most the block size, and none below two slots', async () => {
    const { grantSize } = await import('../../src/tenancy/quota/ledger-format.ts');
    expect(grantSize(1000, 0, 32)).toBe(32);
    expect(grantSize(100, 20, 32)).toBe(20);
    expect(grantSize(10, 0, 32)).toBe(2);
    expect(grantSize(5, 0, 32)).toBe(0);
    expect(grantSize(100, 93, 32)).toBe(0);
  });
});
