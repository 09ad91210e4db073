// A tenant's backup and restore specs are judged whatever JSON types they hold: a namespace list that is a
// string or an object, or a spec that is a list, is refused with the field, never read as "nothing set"
// (the API server's CRD schema refuses these first today; an admin can edit a CRD).
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/backup/policy/enforce.ts';
import {
  backupSpecProblems,
  restoreSpecProblems,
  specShapeProblems,
} from '../../src/backup/policy/validate.ts';

const ns = 'team-a';

describe('backup and restore spec shapes', () => {
  it('refuses includedNamespaces that is not a list, and excludedNamespaces of any other kind', () => {
    for (const included of ['team-b', { 0: 'team-b' }, 7, true]) {
      const spec = { includedNamespaces: included } as unknown as JsonObject;
      expect(backupSpecProblems(ns, spec, {}), JSON.stringify(included)).toEqual([
        expect.stringContaining('spec.backupSpec.includedNamespaces must be a list'),
      ]);
      expect(restoreSpecProblems(ns, { ...spec, backupName: 'b' }, {})).toEqual([
        expect.stringContaining('spec.restoreSpec.includedNamespaces must be a list'),
      ]);
    }
    expect(backupSpecProblems(ns, { includedNamespaces: [ns] }, {})).toEqual([]);
    expect(backupSpecProblems(ns, { includedNamespaces: [ns, 'team-b'] }, {})).toHaveLength(1);
    for (const excluded of ['kube-system', { a: 1 }, ['x']]) {
      expect(backupSpecProblems(ns, { excludedNamespaces: excluded } as JsonObject, {})).toEqual([
        expect.stringContaining('excludedNamespaces is not allowed'),
      ]);
    }
    expect(backupSpecProblems(ns, { excludedNamespaces: [] }, {})).toEqual([]);
  });

  it('refuses label selectors Velero would fail the backup or restore for, naming the field and the term', () => {
    const bad = { matchLabels: { 'app/': 'x' } };
    expect(backupSpecProblems(ns, { labelSelector: bad } as JsonObject, {})).toEqual([
      expect.stringMatching(
        /^spec\.backupSpec\.labelSelector is invalid: matchLabels key "app\/" is not a label key/,
      ),
    ]);
    const or = [{ matchLabels: { app: 'ok' } }, { matchExpressions: [{ key: 'tier', operator: 'In' }] }];
    expect(backupSpecProblems(ns, { orLabelSelectors: or } as unknown as JsonObject, {})).toEqual([
      'spec.backupSpec.orLabelSelectors[1] is invalid: matchExpressions[0] (key tier): operator In needs at least one value',
    ]);
    expect(
      restoreSpecProblems(
        ns,
        { backupName: 'b', labelSelector: { matchLabels: { app: 'a b' } } } as JsonObject,
        {},
      ),
    ).toEqual([
      expect.stringMatching(/^spec\.restoreSpec\.labelSelector is invalid: matchLabels value "a b"/),
    ]);
    expect(backupSpecProblems(ns, { labelSelector: 'app=x' } as unknown as JsonObject, {})).toEqual([
      'spec.backupSpec.labelSelector must be a label selector (matchLabels, matchExpressions)',
    ]);
    const good = {
      matchLabels: { 'example.com/app': 'web' },
      matchExpressions: [{ key: 'tier', operator: 'Exists' }],
    };
    expect(
      backupSpecProblems(ns, { labelSelector: good, orLabelSelectors: [good] } as JsonObject, {}),
    ).toEqual([]);
  });

  it('refuses a spec or backupSpec that is not an object', () => {
    expect(specShapeProblems([], 'backupSpec')).toEqual(['spec must be an object with backupSpec']);
    expect(specShapeProblems({ backupSpec: ['x'] }, 'backupSpec')).toEqual([
      'spec.backupSpec must be an object (got a list)',
    ]);
    expect(specShapeProblems({ restoreSpec: 'x' }, 'restoreSpec')).toEqual([
      'spec.restoreSpec must be an object (got string)',
    ]);
    expect(specShapeProblems({ backupSpec: {} }, 'backupSpec')).toEqual([]);
    expect(specShapeProblems(undefined, 'backupSpec')).toEqual([]);
  });
});
