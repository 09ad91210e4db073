// Least privilege of the collector. It indexes every type the cluster serves, CRDs that appear later
// included, so it needs `list` and `watch` on every resource of every group; it never reads single
// objects, writes or deletes anything. Discovery (/api, /apis, /version) is open to every authenticated
// user through the default `system:discovery` and `system:public-info-viewer` bindings.
//
// Listing Secrets returns their data to the collector; it deletes the data before anything reads the
// object, and config maps and every other kind without derived properties are read as metadata only.
import type { PolicyRule } from '../../capability.ts';

export const collectorRules: PolicyRule[] = [
  { apiGroups: ['*'], resources: ['*'], verbs: ['list', 'watch'] },
];
