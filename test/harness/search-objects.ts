// Objects as a collector sends them, for tests that write to the search index directly.
import type { IndexedResource } from '../../src/search/model.ts';

/** The Deployment `web` of namespace `shop` in `cluster` (uid `<cluster>/<id>`), with no edges of its own. */
export const webDeployment = (cluster: string, id: string): IndexedResource => ({
  uid: `${cluster}/${id}`,
  data: {
    kind: 'Deployment',
    kind_plural: 'deployments',
    apigroup: 'apps',
    apiversion: 'v1',
    name: 'web',
    namespace: 'shop',
  },
  edges: [],
});
