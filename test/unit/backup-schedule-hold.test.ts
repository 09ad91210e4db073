// When tenantkit holds a NonAdminSchedule's Velero Schedule paused (controllers/schedule/hold.ts), on plain objects:
// the minimum interval between actual runs, the schedule limit and the namespace's queue share.
import { describe, expect, it } from 'vitest';
import {
  intervalHold,
  limitHold,
  queueHold,
  queueHorizonMs,
  queueRecheckAt,
} from '../../src/backup/controllers/schedule/hold.ts';
import type { VeleroSchedule } from '../../src/backup/controllers/schedule/runs.ts';
import type { BackupPolicy } from '../../src/backup/policy/config.ts';
import type { NonAdminSchedule } from '../../src/crds/backup.ts';

const policy = { minimumScheduleIntervalMs: 3600_000 } as BackupPolicy;
const at = (iso: string) => Date.parse(iso);
const schedule = (cron: string, lastBackup: string): VeleroSchedule => ({
  metadata: { name: 'u', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { schedule: cron },
  status: { phase: 'Enabled', lastBackup },
});
const nas = (name: string, created: string): NonAdminSchedule =>
  ({ metadata: { name, namespace: 'shop', creationTimestamp: created } }) as NonAdminSchedule;

describe('schedule holds', () => {
  it('keeps an hourly schedule whose minute moved right after a run from running before the interval', () => {
    const last = '2026-03-01T10:00:03Z';
    // Unchanged: the next cron time is the interval away, no hold.
    expect(
      intervalHold(schedule('0 * * * *', last), at(last), policy, at('2026-03-01T10:00:30Z')),
    ).toBeUndefined();
    // Moved to minute 1: Velero would run at 10:01; held until 11:00.
    const held = intervalHold(schedule('1 * * * *', last), at(last), policy, at('2026-03-01T10:00:30Z'));
    expect(held).toMatchObject({ reason: 'MinimumInterval', untilMs: at('2026-03-01T11:00:00Z') });
    expect(held?.message).toContain('spec.nonAdmin.minimumScheduleInterval');
    expect(
      intervalHold(schedule('1 * * * *', last), at(last), policy, at('2026-03-01T11:00:00Z')),
    ).toBeUndefined();
  });

  it('holds schedules beyond the limit, in creation order', () => {
    const all = [
      nas('a', '2026-01-01T00:00:00Z'),
      nas('b', '2026-01-01T00:00:01Z'),
      nas('c', '2026-01-01T00:00:01Z'),
    ];
    expect(limitHold(all[1]!, all, 2)).toBeUndefined();
    expect(limitHold(all[2]!, all, 2)?.message).toContain('the admin allows 2 per namespace');
    expect(limitHold(all[2]!, all, 0)).toBeUndefined();
  });

  it('gives the free places of the queue share to the schedules due first', () => {
    const last = '2026-03-01T10:00:00Z';
    const c = [
      { nas: nas('a', '2026-01-01T00:00:00Z'), schedule: schedule('0 * * * *', last) },
      { nas: nas('b', '2026-01-01T00:00:01Z'), schedule: schedule('30 * * * *', last) },
      { nas: nas('c', '2026-01-01T00:00:02Z'), schedule: schedule('15 * * * *', last) },
    ];
    // At 11:00 all three are due (10:15, 10:30, 11:00): the two due first take the two places.
    const now = at('2026-03-01T11:00:00Z');
    expect(queueHold(c[2]!.nas, c, 0, 2, now)).toBeUndefined();
    expect(queueHold(c[1]!.nas, c, 0, 2, now)).toBeUndefined();
    expect(queueHold(c[0]!.nas, c, 0, 2, now)?.message).toContain(
      '0 backups of namespace shop are in Velero\'s queue and the admin allows 2 at once (NonAdminBackupConfig "cluster" spec.nonAdmin.maxQueuedBackupsPerNamespace), and 2 of its schedules due before this one take places first',
    );
    expect(queueHold(c[2]!.nas, c, 2, 2, now)?.reason).toBe('NamespaceQueueLimit');
    expect(queueHold(c[2]!.nas, c, 1, 2, now)).toBeUndefined();
    // At 10:14 only c (10:15) is within the horizon: a and b are due later and are not held.
    const early = at('2026-03-01T10:14:00Z');
    expect(queueHold(c[0]!.nas, c, 2, 2, early)).toBeUndefined();
    expect(queueHold(c[2]!.nas, c, 2, 2, early)?.reason).toBe('NamespaceQueueLimit');
  });

  it("holds no schedule for the queue share while its next run is far, whatever the others' number", () => {
    // Seven yearly schedules (a bench tenant's), five places: none is due for months, none is held.
    const yearly = Array.from({ length: 7 }, (_, i) => ({
      nas: nas(`y${i}`, `2026-12-04T10:00:0${i}Z`),
      schedule: {
        metadata: { name: `u${i}`, creationTimestamp: `2026-12-04T10:00:0${i}Z` },
        spec: { schedule: '0 3 1 1 *' },
        status: {},
      } as VeleroSchedule,
    }));
    const now = at('2026-12-04T10:01:00Z');
    for (const y of yearly) expect(queueHold(y.nas, yearly, 0, 5, now)).toBeUndefined();
    // Each is looked at again two minutes before it is due, when the two created last wait for a place.
    const due = at('2027-01-01T03:00:00Z');
    expect(queueRecheckAt(yearly[0]!.schedule, now)).toBe(due - queueHorizonMs);
    const then = due - queueHorizonMs;
    expect(queueHold(yearly[4]!.nas, yearly, 0, 5, then)).toBeUndefined();
    expect(queueHold(yearly[5]!.nas, yearly, 0, 5, then)?.reason).toBe('NamespaceQueueLimit');
    expect(queueRecheckAt(yearly[0]!.schedule, then)).toBeUndefined();
  });
});
