// Which namespaces a user sees as projects, from their access set: what lets them list Namespace objects
// there, names included, and the Table kubectl asks for.
import { describe, expect, it } from 'vitest';
import type { AccessSet } from '../../src/search/model.ts';
import { mayUseNamespace, projectOf, projectTable, wantsTable } from '../../src/search/projects/projects.ts';

const set = (partial: Partial<AccessSet>): AccessSet => ({
  all: false,
  clusterWide: [],
  namespaced: [],
  managedClusters: [],
  canSearch: true,
  digest: 'x',
  ...partial,
});

describe('projects', () => {
  it('shows a namespace where a grant covers Namespace objects, by name where the grant names them', () => {
    const s = set({
      namespaced: [
        { namespaces: ['a', 'b'], grants: [{ apiGroups: [''], resources: ['namespaces', 'pods'] }] },
        { namespaces: ['c'], grants: [{ apiGroups: [''], resources: ['configmaps'] }] },
        { namespaces: ['d'], grants: [{ apiGroups: ['*'], resources: ['*'] }] },
        { namespaces: ['e', 'f'], grants: [{ apiGroups: [''], resources: ['namespaces'], names: ['f'] }] },
      ],
    });
    expect(['a', 'b', 'c', 'd', 'e', 'f', 'g'].filter((n) => mayUseNamespace(s, n))).toEqual([
      'a',
      'b',
      'd',
      'f',
    ]);
    expect(mayUseNamespace(set({ clusterWide: [{ apiGroups: [''], resources: ['namespaces'] }] }), 'z')).toBe(
      true,
    );
    expect(mayUseNamespace(set({ all: true }), 'z')).toBe(true);
    expect(mayUseNamespace(set({}), 'z')).toBe(false);
  });

  it('answers kubectl with a Table and reads its Accept header', () => {
    const p = projectOf({
      metadata: {
        name: 'a',
        creationTimestamp: new Date().toISOString(),
        annotations: { 'openshift.io/display-name': 'A' },
      },
      status: { phase: 'Active' },
    });
    expect(p).toMatchObject({
      apiVersion: 'project.openshift.io/v1',
      kind: 'Project',
      status: { phase: 'Active' },
    });
    const table = projectTable([p], '7');
    expect(table.rows[0]!.cells.slice(0, 3)).toEqual(['a', 'A', 'Active']);
    expect(wantsTable('application/json;as=Table;v=v1;g=meta.k8s.io,application/json')).toBe(true);
    expect(wantsTable('application/json')).toBe(false);
  });
});
