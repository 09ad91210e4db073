import { describe, expect, it } from 'vitest';
import { type JsonObject, mergePatch } from '../../src/kube/merge-patch.ts';

/** RFC 7396 applied to a JSON value, to check that a computed patch really turns one into the other. */
function applyPatch(target: JsonObject, patch: JsonObject): JsonObject {
  const out: JsonObject = structuredClone(target);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else if (typeof value === 'object' && !Array.isArray(value)) {
      const base = out[key];
      out[key] = applyPatch(typeof base === 'object' && base && !Array.isArray(base) ? base : {}, value);
    } else out[key] = value;
  }
  return out;
}

describe('mergePatch', () => {
  it('treats keys named like built-in members as plain keys', () => {
    const previous = JSON.parse('{"labels":{"constructor":"a","__proto__":"b","x":"1"}}') as JsonObject;
    const next = JSON.parse('{"labels":{"__proto__":"c","x":"1"}}') as JsonObject;
    const patch = mergePatch(next, previous);
    expect(JSON.parse(JSON.stringify(patch))).toEqual(
      JSON.parse('{"labels":{"__proto__":"c","constructor":null}}'),
    );
  });

  it('is empty for equal objects, whatever the key order', () => {
    expect(mergePatch({ a: 1, b: { c: [1, 2], d: 'x' } }, { b: { d: 'x', c: [1, 2] }, a: 1 })).toEqual({});
  });

  it('removes a key dropped deep inside, so the next comparison is equal', () => {
    const previous: JsonObject = { veleroBackup: { status: { phase: 'InProgress', queuePosition: 3 } } };
    const next: JsonObject = { veleroBackup: { status: { phase: 'Completed' } } };
    const patch = mergePatch(next, previous);
    expect(patch).toEqual({ veleroBackup: { status: { phase: 'Completed', queuePosition: null } } });
    const merged = applyPatch(previous, patch);
    expect(merged).toEqual(next);
    expect(mergePatch(next, merged)).toEqual({});
  });

  it('replaces arrays and type changes whole, and removes top-level keys', () => {
    expect(mergePatch({ a: [1], b: 'x' }, { a: [1, 2], b: { c: 1 }, gone: true })).toEqual({
      a: [1],
      b: 'x',
      gone: null,
    });
  });

  it('sends only the changed branch of a large status', () => {
    const previous: JsonObject = {
      queueInfo: { estimatedQueuePosition: 5 },
      spec: { big: 'x'.repeat(1000) },
    };
    expect(mergePatch({ ...previous, queueInfo: { estimatedQueuePosition: 4 } }, previous)).toEqual({
      queueInfo: { estimatedQueuePosition: 4 },
    });
  });

  it('does not treat inherited names as present keys', () => {
    expect(mergePatch({ constructor: 'x' }, {})).toEqual({ constructor: 'x' });
  });
});
