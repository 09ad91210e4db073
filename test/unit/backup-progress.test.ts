import { describe, expect, it } from 'vitest';
import {
  brief,
  countDataMovers,
  countPodVolumes,
  withProgress,
} from '../../src/backup/controllers/progress.ts';
import type { KubeObject } from '../../src/kube/resources.ts';

const obj = (phase?: string) =>
  ({ metadata: { name: 'x' }, ...(phase === undefined ? {} : { status: { phase } }) }) as KubeObject;

describe('progress counts', () => {
  it('counts pod volumes by phase, zeros included; a missing phase is New', () => {
    const counts = countPodVolumes([
      obj(),
      obj('New'),
      obj('InProgress'),
      obj('Completed'),
      obj('Completed'),
      obj('Failed'),
    ]);
    expect(counts).toEqual({
      total: 6,
      new: 2,
      inProgress: 1,
      completed: 2,
      failed: 1,
      failures: [{ name: '?/?', message: 'Velero gave no reason' }],
    });
    // Every field is there: a merge patch would otherwise keep a count that dropped to zero.
    expect(countPodVolumes([obj('Completed')])).toEqual({
      total: 1,
      new: 0,
      inProgress: 0,
      failed: 0,
      completed: 1,
    });
  });

  it('counts pod volume phases that have no field of their own only in total; a canceled one is named', () => {
    expect(countPodVolumes([obj('Accepted'), obj('Prepared'), obj('Canceled'), obj('InProgress')])).toEqual({
      total: 4,
      new: 0,
      inProgress: 1,
      failed: 0,
      completed: 0,
      // Not backed up either: the tenant sees it among the failures, as Velero's cancellation.
      failures: [{ name: '?/?', message: 'canceled by Velero: Velero gave no reason' }],
    });
  });

  it('counts every data mover phase', () => {
    const phases = [
      'New',
      'Accepted',
      'Prepared',
      'InProgress',
      'Canceling',
      'Canceled',
      'Failed',
      'Completed',
    ];
    expect(countDataMovers([...phases, 'Completed', undefined].map(obj))).toEqual({
      total: 10,
      new: 2,
      accepted: 1,
      prepared: 1,
      inProgress: 1,
      canceling: 1,
      canceled: 1,
      failed: 1,
      completed: 2,
      failures: [
        { name: '?', message: 'canceled by Velero: Velero gave no reason' },
        { name: '?', message: 'Velero gave no reason' },
      ],
    });
    // An unknown phase (a newer Velero) is still counted in total.
    expect(countDataMovers([obj('Paused')])).toMatchObject({ total: 1, new: 0, completed: 0 });
  });

  it("sums the bytes Velero reported and names each failed volume with Velero's reason", () => {
    const pvb = (phase: string, pod: string, done: unknown, total: unknown, message?: string) =>
      ({
        metadata: { name: pod },
        spec: { pod: { name: pod, namespace: 'ns' }, volume: 'data' },
        status: { phase, progress: { bytesDone: done, totalBytes: total }, ...(message ? { message } : {}) },
      }) as KubeObject;
    expect(
      countPodVolumes([
        pvb('Completed', 'a', 100, 100),
        pvb('InProgress', 'b', 40, 250),
        pvb('Failed', 'c', 5, 10, 'read /host_pods/x: permission denied'),
        // A value that is no byte count (a status is written by others) counts as nothing.
        pvb('InProgress', 'd', -7, 'lots'),
      ]),
    ).toEqual({
      total: 4,
      new: 0,
      inProgress: 2,
      failed: 1,
      completed: 1,
      bytesDone: 145,
      totalBytes: 360,
      failures: [{ name: 'c/data', message: 'read /host_pods/x: permission denied' }],
    });
    const upload = {
      metadata: { name: 'u' },
      spec: { sourcePVC: 'db' },
      status: { phase: 'Failed', message: 'snapshot timed out' },
    } as KubeObject;
    expect(countDataMovers([upload])?.failures).toEqual([{ name: 'db', message: 'snapshot timed out' }]);
    // Without a progress report from Velero there are no byte fields.
    expect(countPodVolumes([obj('New')])).not.toHaveProperty('bytesDone');
  });

  it("keeps both ends of a long reason: what failed and why, within the status' 1024 characters", () => {
    const path = 'd/'.repeat(2100);
    const message = `data path backup failed: Error when processing ${path}bottom.txt: lstat /host_pods/${path}: file name too long`;
    const cut = brief(message);
    expect(cut).toHaveLength(1024);
    expect(cut.startsWith('data path backup failed: Error when processing d/d/')).toBe(true);
    expect(cut.endsWith('d/d/: file name too long')).toBe(true);
    expect(cut).toContain(' … ');
    expect(brief('short')).toBe('short');
  });

  it('gives nothing when there are no objects, so the status field is left out', () => {
    expect(countPodVolumes([])).toBeUndefined();
    expect(countDataMovers([])).toBeUndefined();
  });

  it('sets present counts and removes absent ones without leaving undefined keys behind', () => {
    const before = {
      phase: 'Created',
      fileSystemPodVolumeBackups: { total: 1 },
      dataMoverDataUploads: { total: 2 },
    };
    const after = withProgress(before, {
      fileSystemPodVolumeBackups: { total: 2, completed: 2 },
      dataMoverDataUploads: undefined,
    });
    expect(after).toEqual({ phase: 'Created', fileSystemPodVolumeBackups: { total: 2, completed: 2 } });
    expect(Object.keys(after)).not.toContain('dataMoverDataUploads');
    // The input is left as it was.
    expect(before.dataMoverDataUploads).toEqual({ total: 2 });
  });
});
