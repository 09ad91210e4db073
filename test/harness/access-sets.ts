// Access sets for tests that query the search engine directly, without an RBAC provider.
import type { AccessSet } from '../../src/search/model.ts';

/** A cluster admin's: everything, in every cluster. */
export const allAccess: AccessSet = {
  all: true,
  clusterWide: [],
  namespaced: [],
  managedClusters: [],
  canSearch: true,
  digest: 'all',
};
