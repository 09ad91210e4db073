import { describe, expect, it } from 'vitest';
import { semanticEqual, stableJson } from '../../src/kube/equality.ts';
import {
  AnyLabels,
  compileSelector,
  isEmptySelector,
  labelKeyProblem,
  labelValueProblem,
  selectorAnchors,
} from '../../src/kube/selectors.ts';

describe('label selectors', () => {
  const match = (selector: Parameters<typeof compileSelector>[0], labels: Record<string, string>) => {
    const c = compileSelector(selector);
    if (!c.ok) throw new Error(c.error);
    return c.matches(labels);
  };

  it('applies matchLabels and every operator as the API server does', () => {
    expect(match({ matchLabels: { a: '1' } }, { a: '1', b: '2' })).toBe(true);
    expect(match({ matchLabels: { a: '1' } }, { a: '2' })).toBe(false);
    expect(match({ matchExpressions: [{ key: 'a', operator: 'In', values: ['1', '2'] }] }, { a: '2' })).toBe(
      true,
    );
    expect(match({ matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['1'] }] }, {})).toBe(true);
    expect(match({ matchExpressions: [{ key: 'a', operator: 'Exists' }] }, { a: '' })).toBe(true);
    expect(match({ matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] }, { a: 'x' })).toBe(false);
    expect(match({}, {})).toBe(true);
    expect(isEmptySelector({ matchLabels: {} })).toBe(true);
  });

  it('explains invalid selectors instead of throwing', () => {
    const c = compileSelector({ matchExpressions: [{ key: 'team', operator: 'In', values: [] }] });
    expect(c).toEqual({
      ok: false,
      error: 'matchExpressions[0] (key team): operator In needs at least one value',
    });
  });
});

describe('selector anchors', () => {
  it('name label pairs every match has one of, so an index yields the candidates; all when none', () => {
    const cases: [Parameters<typeof selectorAnchors>[0], string[]][] = [
      [{ matchLabels: { team: 'a', tier: 'web' } }, ['team=a']],
      [
        { matchExpressions: [{ key: 'env', operator: 'In', values: ['dev', 'test'] }] },
        ['env=dev', 'env=test'],
      ],
      [{ matchExpressions: [{ key: 'env', operator: 'Exists' }] }, [AnyLabels]],
      [{ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, [AnyLabels]],
    ];
    for (const [selector, anchors] of cases) {
      expect(selectorAnchors(selector)).toEqual(anchors);
      // Every label set the selector matches holds one of its anchors.
      const matches = compileSelector(selector);
      const samples: Record<string, string>[] = [
        { team: 'a', tier: 'web' },
        { env: 'dev' },
        { env: 'test' },
        { env: 'x' },
        {},
      ];
      for (const labels of samples)
        if (matches.ok && matches.matches(labels) && !anchors.includes(AnyLabels))
          expect(anchors.some((a) => Object.entries(labels).some(([k, v]) => `${k}=${v}` === a))).toBe(true);
    }
  });
});

describe('stableJson', () => {
  it('ignores key order but not array order', () => {
    expect(semanticEqual({ a: 1, b: { c: 2, d: 3 } }, { b: { d: 3, c: 2 }, a: 1 })).toBe(true);
    expect(semanticEqual([1, 2], [2, 1])).toBe(false);
    expect(stableJson({ t: 'x', keep: 1 }, new Set(['t']))).toBe('{"keep":1}');
  });
});

describe('label keys and values, checked as the API server checks them', () => {
  it('accepts what kubectl label accepts', () => {
    for (const key of [
      'app',
      'a',
      'app.kubernetes.io/name',
      'kubernetes.io/metadata.name',
      'My_Key-1.x',
      'constructor',
    ])
      expect(labelKeyProblem(key), key).toBeUndefined();
    for (const value of ['', 'x', 'v1.2_3-A', 'a'.repeat(63)])
      expect(labelValueProblem(value), value).toBeUndefined();
  });

  it('refuses what kubectl label refuses, saying why', () => {
    for (const key of [
      '',
      '__proto__',
      '-a',
      'a-',
      'a b',
      'a'.repeat(64),
      '/a',
      'a/',
      'Example.com/a',
      'a/b/c',
      `${'a'.repeat(254)}/x`,
    ])
      expect(labelKeyProblem(key), key).toBeDefined();
    expect(labelKeyProblem('Example.com/a')).toMatch(/prefix must be a DNS subdomain/);
    expect(labelKeyProblem('__proto__')).toMatch(/name must be 1 to 63 characters/);
    for (const value of ['-x', 'x-', 'a b', 'a'.repeat(64), 'a/b'])
      expect(labelValueProblem(value), value).toBeDefined();
  });

  it('makes a selector with such a key or value invalid, naming it', () => {
    const proto = compileSelector({ matchLabels: JSON.parse('{"__proto__":"x"}') });
    expect(proto.ok).toBe(false);
    expect(!proto.ok && proto.error).toMatch(/^matchLabels key "__proto__" is not a label key/);
    const value = compileSelector({
      matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['ok', 'not ok'] }],
    });
    expect(!value.ok && value.error).toMatch(
      /^matchExpressions\[0\] \(key team\) value "not ok" is not a label value/,
    );
    expect(compileSelector({ matchLabels: { 'app.kubernetes.io/name': '' } }).ok).toBe(true);
  });
});
