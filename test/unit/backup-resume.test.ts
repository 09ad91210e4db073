// When tenantkit resumes or cancels a Velero volume operation its node-agent left Accepted, or InProgress
// with its data mover Pod ended (the decision
// only; test/integration/backup-resume.test.ts runs the controller against the API server).
import { describe, expect, it } from 'vitest';
import { nextStep, ResumedAtAnnotation } from '../../src/backup/controllers/resume/index.ts';
import type { Pod, VolumeOperation } from '../../src/backup/controllers/resume/step.ts';
import { mayNeedStep } from '../../src/backup/controllers/resume/step.ts';

const t0 = Date.parse('2026-12-05T10:00:00Z');
const at = (ms: number) => new Date(t0 + ms).toISOString();
const minute = 60_000;

const operation = (over: Partial<VolumeOperation['status']> = {}, cancel = false): VolumeOperation => ({
  metadata: { name: 'restore-1-abcde', namespace: 'velero', uid: 'op-uid', creationTimestamp: at(-10_000) },
  spec: { cancel },
  status: { phase: 'Accepted', acceptedTimestamp: at(0), ...over },
});

const pod = (
  phase: string,
  readySince?: number,
  { owner = 'op-uid', annotations = {} }: { owner?: string; annotations?: Record<string, string> } = {},
): Pod => ({
  metadata: {
    name: 'restore-1-abcde',
    namespace: 'velero',
    ownerReferences: [
      {
        apiVersion: 'velero.io/v1',
        kind: 'PodVolumeRestore',
        name: 'restore-1-abcde',
        uid: owner,
        controller: true,
      },
    ],
    annotations,
  },
  status: {
    phase,
    startTime: at(1_000),
    ...(readySince === undefined
      ? {}
      : { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: at(readySince) }] }),
  },
});

describe('nextStep for an Accepted volume operation', () => {
  it('does nothing when off, or for an operation that is not Accepted or already canceled', () => {
    expect(nextStep(operation(), undefined, t0 + 10 * minute, 0)).toEqual({ action: 'none' });
    expect(
      nextStep(operation({ phase: 'Completed' }), pod('Succeeded'), t0 + 10 * minute, 2 * minute),
    ).toEqual({
      action: 'none',
    });
    expect(nextStep(operation({}, true), undefined, t0 + 10 * minute, 2 * minute)).toEqual({
      action: 'none',
    });
  });

  it('cancels an operation without a data mover Pod once Accepted for the period, and not before', () => {
    expect(nextStep(operation(), undefined, t0 + 30_000, 2 * minute)).toEqual({ action: 'wait', ms: 90_000 });
    expect(nextStep(operation(), undefined, t0 + 2 * minute, 2 * minute)).toEqual({
      action: 'cancel',
      stuck: 'unstarted',
    });
  });

  it('annotates a Pod that has run for the period while its operation stayed Accepted', () => {
    expect(nextStep(operation(), pod('Running', 5_000), t0 + 65_000, 2 * minute)).toEqual({
      action: 'wait',
      ms: 60_000,
    });
    expect(nextStep(operation(), pod('Running', 5_000), t0 + 125_000, 2 * minute)).toEqual({
      action: 'resume',
    });
  });

  it('annotates again only a period after it last did', () => {
    const annotated = pod('Running', 5_000, { annotations: { [ResumedAtAnnotation]: at(3 * minute) } });
    expect(nextStep(operation(), annotated, t0 + 4 * minute, 2 * minute)).toEqual({
      action: 'wait',
      ms: minute,
    });
    expect(nextStep(operation(), annotated, t0 + 5 * minute, 2 * minute)).toEqual({ action: 'resume' });
  });

  it('waits for a Pod still starting, and never touches a Pod the operation does not own', () => {
    expect(nextStep(operation(), pod('Pending'), t0 + 20 * minute, 2 * minute)).toEqual({
      action: 'wait',
      ms: 2 * minute,
    });
    const foreign = pod('Running', 5_000, { owner: 'someone-else' });
    expect(nextStep(operation(), foreign, t0 + 20 * minute, 2 * minute)).toEqual({
      action: 'wait',
      ms: 2 * minute,
    });
  });

  it('takes a Pod being deleted as no Pod yet: it waits for it to go', () => {
    const going = pod('Running', 5_000);
    going.metadata.deletionTimestamp = at(minute);
    expect(nextStep(operation(), going, t0 + 20 * minute, 2 * minute)).toEqual({
      action: 'wait',
      ms: 2 * minute,
    });
  });
});

describe('mayNeedStep', () => {
  it('reads the Pod only for an Accepted or InProgress operation not yet canceled', () => {
    expect(mayNeedStep(operation())).toBe(true);
    expect(mayNeedStep(operation({ phase: 'InProgress' }))).toBe(true);
    expect(mayNeedStep(operation({ phase: 'InProgress' }, true))).toBe(false);
    for (const phase of ['New', 'Prepared', 'Completed', 'Failed', 'Canceled'])
      expect(mayNeedStep(operation({ phase }))).toBe(false);
  });
});

describe('nextStep for an InProgress volume operation', () => {
  const ended = (phase: string, finishedAt?: number, options?: Parameters<typeof pod>[2]): Pod => {
    const p = pod(phase, undefined, options);
    if (finishedAt !== undefined)
      p.status!.containerStatuses = [{ state: { terminated: { finishedAt: at(finishedAt) } } }];
    return p;
  };
  const running = operation({ phase: 'InProgress' });

  it('looks again each period while its data mover Pod runs, and leaves one without a Pod to Velero', () => {
    expect(nextStep(running, pod('Running', 5_000), t0 + 20 * minute, 2 * minute)).toEqual({
      action: 'wait',
      ms: 2 * minute,
    });
    expect(nextStep(running, undefined, t0 + 20 * minute, 2 * minute)).toEqual({ action: 'none' });
  });

  it('cancels it once its Pod has ended for the period, and not before', () => {
    expect(nextStep(running, ended('Succeeded', minute), t0 + 2 * minute, 2 * minute)).toEqual({
      action: 'wait',
      ms: minute,
    });
    expect(nextStep(running, ended('Succeeded', minute), t0 + 3 * minute, 2 * minute)).toEqual({
      action: 'cancel',
      stuck: 'ended',
      podPhase: 'Succeeded',
    });
  });

  it("takes a failed Pod's end from its Ready condition when no container says when it finished", () => {
    const failed = ended('Failed');
    failed.status!.conditions = [{ type: 'Ready', status: 'False', lastTransitionTime: at(minute) }];
    expect(nextStep(running, failed, t0 + 2 * minute, 2 * minute)).toEqual({ action: 'wait', ms: minute });
    expect(nextStep(running, failed, t0 + 3 * minute, 2 * minute)).toEqual({
      action: 'cancel',
      stuck: 'ended',
      podPhase: 'Failed',
    });
  });

  it('never acts on a Pod it does not own or one being deleted, on a canceled operation, or when off', () => {
    const later = t0 + 20 * minute;
    const foreign = ended('Succeeded', minute, { owner: 'someone-else' });
    expect(nextStep(running, foreign, later, 2 * minute)).toEqual({ action: 'none' });
    const going = ended('Succeeded', minute);
    going.metadata.deletionTimestamp = at(2 * minute);
    expect(nextStep(running, going, later, 2 * minute)).toEqual({ action: 'none' });
    expect(
      nextStep(operation({ phase: 'InProgress' }, true), ended('Succeeded', minute), later, 2 * minute),
    ).toEqual({ action: 'none' });
    expect(nextStep(running, ended('Succeeded', minute), later, 0)).toEqual({ action: 'none' });
  });
});
