// The cron dialect of Velero's Schedule (robfig/cron v3 ParseStandard): next runs and parse errors.
import { describe, expect, it } from 'vitest';
import { parseCron, shortestGapMs } from '../../src/backup/policy/cron.ts';
import { scheduleProblems } from '../../src/backup/policy/schedule.ts';

const next = (spec: string, after: string) => {
  const parsed = parseCron(spec);
  if (!parsed.schedule) throw new Error(parsed.error);
  return parsed.schedule.next(new Date(after))?.toISOString();
};

describe('parseCron', () => {
  it('computes the next whole minute strictly after the given time', () => {
    expect(next('* * * * *', '2026-01-01T10:00:00Z')).toBe('2026-01-01T10:01:00.000Z');
    expect(next('* * * * *', '2026-01-01T10:00:59.900Z')).toBe('2026-01-01T10:01:00.000Z');
    expect(next('30 3 * * *', '2026-01-01T03:30:00Z')).toBe('2026-01-02T03:30:00.000Z');
    expect(next('30 3 * * *', '2026-01-01T03:29:10Z')).toBe('2026-01-01T03:30:00.000Z');
  });

  it('handles ranges, steps, lists, names and N/step', () => {
    expect(next('*/15 * * * *', '2026-01-01T10:07:00Z')).toBe('2026-01-01T10:15:00.000Z');
    expect(next('5/20 * * * *', '2026-01-01T10:26:00Z')).toBe('2026-01-01T10:45:00.000Z');
    expect(next('0 9-17/4 * * *', '2026-01-01T14:00:00Z')).toBe('2026-01-01T17:00:00.000Z');
    expect(next('0 0 * JAN,jul *', '2026-02-01T00:00:00Z')).toBe('2026-07-01T00:00:00.000Z');
    // 2026-01-01 is a Thursday.
    expect(next('0 12 * * MON-FRI', '2026-01-02T12:00:00Z')).toBe('2026-01-05T12:00:00.000Z');
    expect(next('0 0 29 2 *', '2026-01-01T00:00:00Z')).toBe('2028-02-29T00:00:00.000Z');
  });

  it('refuses built-in member names as month or weekday names', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expect(parseCron(`0 3 * ${name} *`).error, name).toBeDefined();
      expect(parseCron(`0 3 * * ${name}`).error, name).toBeDefined();
    }
  });

  it('matches day-of-month OR day-of-week when both are restricted, AND when one is a star', () => {
    // The 15th, or any Sunday: Sunday 2026-01-04 comes first.
    expect(next('0 0 15 * 0', '2026-01-01T00:00:00Z')).toBe('2026-01-04T00:00:00.000Z');
    expect(next('0 0 15 * ?', '2026-01-01T00:00:00Z')).toBe('2026-01-15T00:00:00.000Z');
    expect(next('0 0 * * 0', '2026-01-01T00:00:00Z')).toBe('2026-01-04T00:00:00.000Z');
  });

  it('knows the descriptors, @every counting from the whole second', () => {
    expect(next('@daily', '2026-01-01T10:00:00Z')).toBe('2026-01-02T00:00:00.000Z');
    expect(next('@midnight', '2026-01-01T10:00:00Z')).toBe('2026-01-02T00:00:00.000Z');
    expect(next('@hourly', '2026-01-01T10:00:00Z')).toBe('2026-01-01T11:00:00.000Z');
    expect(next('@weekly', '2026-01-01T10:00:00Z')).toBe('2026-01-04T00:00:00.000Z');
    expect(next('@monthly', '2026-01-01T10:00:00Z')).toBe('2026-02-01T00:00:00.000Z');
    expect(next('@yearly', '2026-01-01T10:00:00Z')).toBe('2027-01-01T00:00:00.000Z');
    expect(next('@annually', '2026-01-01T10:00:00Z')).toBe('2027-01-01T00:00:00.000Z');
    expect(next('@every 1m', '2026-01-01T10:00:00.700Z')).toBe('2026-01-01T10:01:00.000Z');
    expect(next('@every 1h30m', '2026-01-01T10:00:00Z')).toBe('2026-01-01T11:30:00.000Z');
    expect(next('@every 10ms', '2026-01-01T10:00:00Z')).toBe('2026-01-01T10:00:01.000Z');
  });

  it('accepts a TZ= prefix with a known zone', () => {
    expect(parseCron('CRON_TZ=UTC 0 3 * * *').schedule?.zone).toBe('UTC');
    expect(parseCron('TZ=Nowhere/City 0 3 * * *').error).toMatch(/bad location Nowhere\/City/);
  });

  it('refuses what Velero refuses, saying why', () => {
    expect(parseCron('').error).toBe('empty spec string');
    expect(parseCron('* * * *').error).toBe('expected exactly 5 fields, found 4: * * * *');
    expect(parseCron('0 0 0 * * *').error).toMatch(/expected exactly 5 fields, found 6/);
    expect(parseCron('60 * * * *').error).toMatch(/above maximum \(59\)/);
    expect(parseCron('* * 0 * *').error).toMatch(/below minimum \(1\)/);
    expect(parseCron('5-1 * * * *').error).toMatch(/beyond end of range/);
    expect(parseCron('*/0 * * * *').error).toMatch(/step of range should be a positive number/);
    expect(parseCron('1-2-3 * * * *').error).toMatch(/too many hyphens/);
    expect(parseCron('* * * * 7').error).toMatch(/above maximum \(6\)/);
    expect(parseCron('x * * * *').error).toMatch(/failed to parse int from x/);
    expect(parseCron('@fortnightly').error).toBe('unrecognized descriptor: @fortnightly');
    expect(parseCron('@every soon').error).toMatch(/failed to parse duration/);
  });
});

describe('scheduleProblems', () => {
  it("words the NonAdminBackup rules for a schedule's template, and checks the cron expression", () => {
    const problems = scheduleProblems(
      'shop',
      { schedule: '@often', template: { backupSpec: { ttl: '1h0m0s', includedNamespaces: ['bank'] } } },
      { ttl: '24h0m0s' },
    );
    expect(problems).toEqual([
      'spec.schedule "@often" is not a valid schedule (unrecognized descriptor: @often): use five cron fields (minute hour day-of-month month day-of-week), e.g. "0 3 * * *", or a descriptor such as @daily or "@every 6h"',
      'spec.template.backupSpec.includedNamespaces may only name this namespace (shop); leave it out, tenantkit sets it',
      'NonAdminSchedule spec.template.backupSpec.ttl field value is enforced by admin user, can not override it',
    ]);
    expect(scheduleProblems('shop', { schedule: '0 3 * * *', template: { backupSpec: {} } }, {})).toEqual([]);
  });

  it("refuses a schedule that runs more often than the admin's minimum interval, and says how often it runs", () => {
    const hour = 3600_000;
    const check = (schedule: string) =>
      scheduleProblems('shop', { schedule, template: { backupSpec: {} } }, {}, undefined, hour);
    for (const [schedule, every] of [
      ['@every 0s', '1s'],
      ['@every 1ns', '1s'],
      ['@every 59m', '59m'],
      ['* * * * *', '1m'],
      ['*/30 * * * *', '30m'],
      ['0 9,10 * * *', '1h'],
      ['0 9 * * *', ''],
      ['30 0,1 * * 1', ''],
    ] as const) {
      const problems = check(schedule);
      if (every === '' || every === '1h') {
        expect(problems, schedule).toEqual([]);
      } else {
        expect(problems, schedule).toEqual([
          `spec.schedule "${schedule}" runs as often as every ${every}, more often than this cluster allows (spec.nonAdmin.minimumScheduleInterval of NonAdminBackupConfig "cluster": 1h); schedule runs at least 1h apart, e.g. "@every 1h" or "0 3 * * *"`,
        ]);
      }
    }
    // 0: any interval.
    expect(
      scheduleProblems('shop', { schedule: '* * * * *', template: { backupSpec: {} } }, {}, undefined, 0),
    ).toEqual([]);
  });

  it('finds the shortest gap of a schedule quickly', () => {
    const started = performance.now();
    for (const s of ['@hourly', '0 3 * * *', '5 4 1 * *', '@yearly']) {
      shortestGapMs(parseCron(s).schedule!, new Date('2026-01-01T00:00:00Z'), 3600_000);
    }
    // The webhook runs this on every NonAdminSchedule change: it must stay cheap.
    expect(performance.now() - started).toBeLessThan(1000);
    expect(shortestGapMs(parseCron('0 1,3 * * *').schedule!, new Date('2026-01-01T00:00:00Z'))).toBe(
      2 * 3600_000,
    );
  });

  it('sees the real spacing of rare days: every minute of 29 February, a month end next to a month start', () => {
    const from = new Date('2026-11-29T00:00:00Z');
    const gap = (s: string) => shortestGapMs(parseCron(s).schedule!, from, 3600_000);
    expect(gap('* * 29 2 *')).toBe(60_000);
    expect(gap('0 0-23/2 29 2 *')).toBe(2 * 3600_000);
    // 23:59 on 28 February, 00:00 on 1 March: a minute apart in three years out of four.
    expect(gap('0,59 0,23 1,28 2,3 *')).toBe(60_000);
    expect(gap('0 3 * * *')).toBe(24 * 3600_000);
    expect(gap('@every 90m')).toBe(90 * 60_000);
    expect(gap('0 0 30 2 *')).toBe(Number.POSITIVE_INFINITY);
    expect(
      scheduleProblems(
        'shop',
        { schedule: '* * 29 2 *', template: { backupSpec: {} } },
        {},
        undefined,
        3600_000,
      ),
    ).toEqual([
      'spec.schedule "* * 29 2 *" runs as often as every 1m, more often than this cluster allows (spec.nonAdmin.minimumScheduleInterval of NonAdminBackupConfig "cluster": 1h); schedule runs at least 1h apart, e.g. "@every 1h" or "0 3 * * *"',
    ]);
  });
});
