import { describe, expect, it } from 'vitest';
import { countDataMovers, countPodVolumes, withProgress } from '../../src/backup/progress.ts';
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
    expect(counts).toEqual({ total: 6, new: 2, inProgress: 1, completed: 2, failed: 1 });
    // Every field is there: a merge patch would otherwise keep a count that dropped to zero.
    expect(countPodVolumes([obj('Completed')])).toEqual({
      total: 1,
      new: 0,
      inProgress: 0,
      failed: 0,
      completed: 1,
    });
  });

  it('counts pod volume phases that have no field of their own only in total', () => {
    expect(countPodVolumes([obj('Accepted'), obj('Prepared'), obj('Canceled'), obj('InProgress')])).toEqual({
      total: 4,
      new: 0,
      inProgress: 1,
      failed: 0,
      completed: 0,
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
    });
    // An unknown phase (a newer Velero) is still counted in total.
    expect(countDataMovers([obj('Paused')])).toMatchObject({ total: 1, new: 0, completed: 0 });
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
