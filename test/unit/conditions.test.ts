import { describe, expect, it } from 'vitest';
import { findCondition, setCondition } from '../../src/kube/conditions.ts';

describe('setCondition', () => {
  const t1 = new Date('2026-01-01T00:00:00.123Z');
  const t2 = new Date('2026-01-02T00:00:00Z');

  it('adds a condition with a seconds-precision transition time', () => {
    const list = setCondition(
      undefined,
      { type: 'Ready', status: 'False', reason: 'Pending', message: 'm', observedGeneration: 1 },
      t1,
    );
    expect(list).toEqual([
      {
        type: 'Ready',
        status: 'False',
        reason: 'Pending',
        message: 'm',
        observedGeneration: 1,
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ]);
  });

  it('keeps lastTransitionTime while the status holds and moves it when the status flips', () => {
    const a = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'A', message: '' }, t1);
    const b = setCondition(
      a,
      { type: 'Ready', status: 'False', reason: 'B', message: 'new', observedGeneration: 2 },
      t2,
    );
    expect(findCondition(b, 'Ready')).toMatchObject({
      reason: 'B',
      observedGeneration: 2,
      lastTransitionTime: '2026-01-01T00:00:00Z',
    });
    const c = setCondition(b, { type: 'Ready', status: 'True', reason: 'C', message: '' }, t2);
    expect(findCondition(c, 'Ready')?.lastTransitionTime).toBe('2026-01-02T00:00:00Z');
    expect(c).toHaveLength(1);
  });

  it('leaves other condition types alone', () => {
    const a = setCondition(undefined, { type: 'Ready', status: 'True', reason: 'R', message: '' }, t1);
    const b = setCondition(a, { type: 'Degraded', status: 'False', reason: 'D', message: '' }, t2);
    expect(b.map((c) => c.type)).toEqual(['Ready', 'Degraded']);
    expect(a).toHaveLength(1);
  });
});
