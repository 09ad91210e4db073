// A key named `__proto__` is a key like any other wherever objects are copied key by key: in the
// informers' caches (what every controller reads) and in the maps built from user text.
import { describe, expect, it } from 'vitest';
import { setOwn } from '../../src/kube/own.ts';
import type { KubeObject } from '../../src/kube/resources.ts';
import { slim } from '../../src/kube/slim.ts';

describe('setOwn', () => {
  it('adds __proto__ as an own key, whatever its value, and leaves the prototype alone', () => {
    for (const value of ['x', { y: 1 }, null]) {
      const o: Record<string, unknown> = {};
      setOwn(o, '__proto__', value);
      setOwn(o, 'a', 1);
      expect(Object.keys(o)).toEqual(['__proto__', 'a']);
      expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
      expect(Object.getOwnPropertyDescriptor(o, '__proto__')?.value).toEqual(value);
    }
  });
});

describe('slim', () => {
  it("keeps a tenant's __proto__ keys in what a cache holds, at any depth", () => {
    // As the API server sends a ScopeInstance whose selector's only key is __proto__ (JSON.parse keeps it).
    const object = JSON.parse(
      '{"metadata":{"name":"i","annotations":{"__proto__":"a"}},"spec":{"namespaceSelector":{"matchLabels":{"__proto__":"x"}},"deep":[{"__proto__":{"z":true}}]}}',
    ) as KubeObject;
    const kept = slim(object) as unknown as {
      metadata: { annotations: Record<string, string> };
      spec: { namespaceSelector: { matchLabels: Record<string, string> }; deep: Record<string, unknown>[] };
    };
    expect(Object.entries(kept.spec.namespaceSelector.matchLabels)).toEqual([['__proto__', 'x']]);
    expect(Object.keys(kept.spec.deep[0]!)).toEqual(['__proto__']);
    expect((kept.spec.deep[0] as { z?: unknown }).z).toBeUndefined();
    expect(Object.entries(kept.metadata.annotations)).toEqual([['__proto__', 'a']]);
    expect(JSON.stringify(kept)).toBe(JSON.stringify(object));
  });
});
