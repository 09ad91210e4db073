// When tenantkit holds a NonAdminSchedule's Velero Schedule paused (controllers/schedule/hold.ts), on plain objects:
// the minimum interval between actual runs, the schedule limit and the namespace's queue share.
import { describe, expect, it } from 'vitest';
import { intervalHold, limitHold, queueHold } from '../../src/backup/controllers/schedule/hold.ts';
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
    expect(queueHold(c[2]!.nas, c, 0, 2)).toBeUndefined();
    expect(queueHold(c[1]!.nas, c, 0, 2)).toBeUndefined();
    expect(queueHold(c[0]!.nas, c, 0, 2)?.reason).toBe('NamespaceQueueLimit');
    expect(queueHold(c[2]!.nas, c, 2, 2)?.reason).toBe('NamespaceQueueLimit');
    expect(queueHold(c[2]!.nas, c, 1, 2)).toBeUndefined();
  });
});
