// Decisions of the restore, download-request and schedule controllers that need no cluster, on plain
// objects (the NAB controller's are in backup-nab-steps.test.ts; everything that writes is tested against
// the real API server and Velero in test/integration/).
import { describe, expect, it } from 'vitest';
import {
  isOver,
  processedCondition,
  unprocessedAfterMs,
} from '../../src/backup/controllers/download/reconciler.ts';
import { refusalOf } from '../../src/backup/controllers/restore/reconciler.ts';
import {
  nextRunOf,
  runTime,
  scheduledCondition,
  type VeleroSchedule,
} from '../../src/backup/controllers/schedule/runs.ts';
import type { BackupPolicy } from '../../src/backup/policy/config.ts';
import type { KubeObject } from '../../src/kube/resources.ts';

const enabled = { enabled: true } as BackupPolicy;

describe('NonAdminRestore: what is never acted on', () => {
  it('acts on a trusted NACUUID or none, and refuses one tenantkit did not write, or everything while disabled', () => {
    expect(refusalOf({ uuid: undefined, trusted: false, policy: enabled })).toBeUndefined();
    expect(refusalOf({ uuid: 'shop-r-1', trusted: true, policy: enabled })).toBeUndefined();
    expect(refusalOf({ uuid: 'bank-x-1', trusted: false, policy: enabled })).toMatchObject({
      reason: 'InvalidStatus',
      message: expect.stringContaining('delete it and create a new one'),
    });
    expect(
      refusalOf({ uuid: undefined, trusted: false, policy: { enabled: false } as BackupPolicy }),
    ).toMatchObject({
      reason: 'NonAdminDisabled',
    });
  });
});

describe('NonAdminDownloadRequest: the URL and the end of a request', () => {
  const request = (status?: Record<string, unknown>) =>
    ({
      metadata: { name: 'shop-logs-1', namespace: 'velero' },
      ...(status ? { status } : {}),
    }) as KubeObject & {
      status?: { phase?: string; downloadURL?: string; expiration?: string };
    };

  it('is Pending until Velero signs a URL, then ready with its expiry; late once Velero stays silent', () => {
    expect(processedCondition(request(), 1000)).toMatchObject({ status: 'False', reason: 'Pending' });
    const expiration = '2099-01-01T00:00:00Z';
    expect(
      processedCondition(request({ phase: 'Processed', downloadURL: 'https://s3/x', expiration }), 1000),
    ).toMatchObject({
      status: 'True',
      reason: 'DownloadURLReady',
      message: expect.stringContaining(expiration),
    });
    const late = processedCondition(request(), unprocessedAfterMs);
    expect(late).toMatchObject({ status: 'False', reason: 'VeleroNotProcessing' });
    expect(late.message).toContain('ask a cluster admin');
  });

  it('is over once the URL expired, or once a processed DownloadRequest is gone; not while it waits', () => {
    const past = '2000-01-01T00:00:00Z';
    expect(isOver({ found: [request({ phase: 'Processed', expiration: past })], base: {} })).toBe(true);
    expect(isOver({ found: [], base: { velero: { status: { phase: 'Processed' } } } as never })).toBe(true);
    expect(isOver({ found: [request()], base: {} })).toBe(false);
    expect(isOver({ found: [], base: {} })).toBe(false);
  });
});

describe('NonAdminSchedule: runs and the Scheduled condition', () => {
  const schedule = (
    phase: string | undefined,
    extra: Partial<VeleroSchedule['status']> = {},
  ): VeleroSchedule => ({
    metadata: { name: 'shop-nightly-1', namespace: 'velero', creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { schedule: '0 3 * * *' },
    status: { ...(phase ? { phase } : {}), ...extra },
  });

  it('says paused, refused with Velero’s reasons, enabled, or pending', () => {
    expect(scheduledCondition(schedule('Enabled'), true)).toMatchObject({
      status: 'False',
      reason: 'SchedulePaused',
    });
    expect(
      scheduledCondition(schedule('FailedValidation', { validationErrors: ['bad cron'] }), false),
    ).toMatchObject({
      status: 'False',
      reason: 'ScheduleFailedValidation',
      message: expect.stringContaining('bad cron'),
    });
    expect(scheduledCondition(schedule('Enabled'), false)).toMatchObject({
      status: 'True',
      reason: 'ScheduleEnabled',
    });
    expect(scheduledCondition(schedule(undefined), false)).toMatchObject({
      status: 'Unknown',
      reason: 'SchedulePending',
    });
  });

  it('computes the next run after the last one, as Velero does, and none while paused', () => {
    const s = schedule('Enabled', { lastBackup: '2026-01-05T03:00:00Z' });
    expect(nextRunOf(s, false)).toBe('2026-01-06T03:00:00Z');
    expect(nextRunOf(s, true)).toBeUndefined();
    expect(nextRunOf(schedule('FailedValidation'), false)).toBeUndefined();
  });

  it('orders runs by Velero’s start time, falling back to creation', () => {
    const run = (created: string, started?: string) =>
      ({
        metadata: { name: 'r', creationTimestamp: created },
        ...(started ? { status: { startTimestamp: started } } : {}),
      }) as never;
    expect(runTime(run('2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'))).toBe(
      Date.parse('2026-01-02T00:00:00Z'),
    );
    expect(runTime(run('2026-01-01T00:00:00Z'))).toBe(Date.parse('2026-01-01T00:00:00Z'));
  });
});
