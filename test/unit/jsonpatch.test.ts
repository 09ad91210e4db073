import { describe, expect, it } from 'vitest';
import { diff } from '../../src/webhook/jsonpatch.ts';

function applyPatch(doc: unknown, ops: ReturnType<typeof diff>): unknown {
  let root = structuredClone(doc);
  for (const op of ops) {
    const parts = op.path
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (parts.length === 0) {
      root = op.op === 'remove' ? undefined : structuredClone(op.value);
      continue;
    }
    let target = root as Record<string, unknown>;
    for (const p of parts.slice(0, -1)) target = target[p] as Record<string, unknown>;
    const last = parts.at(-1)!;
    if (op.op === 'remove') delete target[last];
    else target[last] = structuredClone(op.value);
  }
  return root;
}

describe('JSON Patch diff', () => {
  it('is empty for equal documents', () => {
    expect(diff({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toEqual([]);
  });

  it('reads equality as JSON does: key order and undefined members make no difference', () => {
    expect(diff({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1, d: undefined })).toEqual([]);
    expect(diff({ a: [1, 2] }, { a: [2, 1] })).toEqual([{ op: 'replace', path: '/a', value: [2, 1] }]);
    expect(diff({ a: null }, { a: {} })).toEqual([{ op: 'replace', path: '/a', value: {} }]);
    expect(diff({ a: [] }, { a: {} })).toEqual([{ op: 'replace', path: '/a', value: {} }]);
  });

  it('adds, replaces and removes keys, escaping / and ~ in names', () => {
    const before = { metadata: { labels: { 'a/b': 'x', gone: 'y' } }, spec: { n: 1 } };
    const after = { metadata: { labels: { 'a/b': 'z', 'c~d': 'new' } }, spec: { n: 1 } };
    const ops = diff(before, after);
    expect(ops).toContainEqual({ op: 'replace', path: '/metadata/labels/a~1b', value: 'z' });
    expect(ops).toContainEqual({ op: 'add', path: '/metadata/labels/c~0d', value: 'new' });
    expect(ops).toContainEqual({ op: 'remove', path: '/metadata/labels/gone' });
    expect(applyPatch(before, ops)).toEqual(after);
  });

  it('creates a missing parent object in one add', () => {
    const ops = diff({ metadata: {} }, { metadata: { annotations: { k: 'v' } } });
    expect(ops).toEqual([{ op: 'add', path: '/metadata/annotations', value: { k: 'v' } }]);
  });

  it('replaces changed arrays whole', () => {
    const ops = diff({ list: [1, 2, 3] }, { list: [1, 3] });
    expect(ops).toEqual([{ op: 'replace', path: '/list', value: [1, 3] }]);
  });
});
