// Splitting an organization's quota over its namespaces: the parts never add up to more than the total,
// room goes to the namespaces with the least, and usage changes cost a write only when a namespace runs low.
import { describe, expect, it } from 'vitest';
import { parseQuantity } from '../../src/kube/quantity.ts';
import {
  formatQuantity,
  lowers,
  planQuota,
  worthSharing,
} from '../../src/tenancy/policy/organization-quota.ts';

const sum = (parts: Map<string, Record<string, string>>, resource: string) =>
  [...parts.values()].reduce((s, p) => s + (parseQuantity(p[resource]) ?? 0), 0);

describe('organization quota', () => {
  it('splits what is left evenly, never past the total, the remainder to the namespaces with least room', () => {
    const plan = planQuota({ pods: '5', 'requests.cpu': '2' }, [
      {
        namespace: 'a',
        hard: { pods: '3', 'requests.cpu': '1' },
        used: { pods: '3', 'requests.cpu': '300m' },
      },
      { namespace: 'b', hard: { pods: '2', 'requests.cpu': '1' }, used: { pods: '0' } },
    ]);
    expect(sum(plan.parts, 'pods')).toBe(5);
    expect(plan.parts.get('a')!.pods).toBe('4');
    expect(plan.parts.get('b')!.pods).toBe('1');
    expect(sum(plan.parts, 'requests.cpu')).toBeLessThanOrEqual(2);
    expect(plan.parts.get('a')!['requests.cpu']).toBe('1150m');
    expect(plan.summary.pods).toEqual({ hard: '5', used: '3', remaining: '2' });
    expect(plan.summary['requests.cpu']).toEqual({ hard: '2', used: '300m', remaining: '1700m' });
  });

  it('holds every namespace at its use when the admin lowers the total below it', () => {
    const plan = planQuota({ pods: '2' }, [
      { namespace: 'a', hard: { pods: '5' }, used: { pods: '3' } },
      { namespace: 'b', hard: { pods: '5' }, used: { pods: '1' } },
    ]);
    expect(plan.parts.get('a')!.pods).toBe('3');
    expect(plan.parts.get('b')!.pods).toBe('1');
    expect(plan.summary.pods!.remaining).toBe('0');
  });

  it('writes when a part is missing or a namespace runs low, not for every change of use', () => {
    const total = { pods: '100' };
    const roomy = [
      { namespace: 'a', hard: { pods: '50' }, used: { pods: '10' } },
      { namespace: 'b', hard: { pods: '50' }, used: { pods: '0' } },
    ];
    expect(worthSharing(total, roomy, planQuota(total, roomy))).toBe(false);
    const low = [
      { namespace: 'a', hard: { pods: '50' }, used: { pods: '49' } },
      { namespace: 'b', hard: { pods: '50' }, used: { pods: '0' } },
    ];
    expect(worthSharing(total, low, planQuota(total, low))).toBe(true);
    const missing = [{ namespace: 'a', used: {} }, ...roomy.slice(1)];
    expect(worthSharing(total, missing, planQuota(total, missing))).toBe(true);
    // One unit left for two namespaces at their limit: it is not moved back and forth.
    const odd = [
      { namespace: 'a', hard: { pods: '3' }, used: { pods: '3' } },
      { namespace: 'b', hard: { pods: '2' }, used: { pods: '1' } },
    ];
    expect(worthSharing({ pods: '5' }, odd, planQuota({ pods: '5' }, odd))).toBe(false);
  });

  it('writes quantities Kubernetes reads back exactly, and knows a lowering', () => {
    expect(formatQuantity(1.5)).toBe('1500m');
    expect(formatQuantity(3)).toBe('3');
    expect(formatQuantity(-1)).toBe('0');
    expect(lowers({ pods: '3' }, { pods: '2' })).toBe(true);
    expect(lowers({ pods: '3' }, { pods: '4' })).toBe(false);
    expect(lowers({ pods: '3' }, { pods: '4', 'requests.cpu': '1' })).toBe(true);
    expect(lowers(undefined, { pods: '4' })).toBe(true);
  });
});
