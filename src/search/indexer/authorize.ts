// Which clusters a collector's identity may write: a SubjectAccessReview on the hub for
// `update clusters.search.tenantkit.io/<cluster>`, remembered for a minute per (user, cluster) so a
// busy collector costs one review a minute, and a revoked grant stops it within that minute.
import { subjectCan } from '../../kube/access.ts';
import type { KubeClient } from '../../kube/client.ts';
import { userCacheKey } from '../access/index.ts';
import type { SearchUser } from '../model.ts';
import { clusterWriteAttributes } from './http.ts';

export function clusterWriteAuthorizer(client: KubeClient, ttlMs = 60_000) {
  const cache = new Map<string, { allowed: boolean; until: number }>();
  return async (user: SearchUser, cluster: string): Promise<boolean> => {
    const key = `${userCacheKey(user)}\n${cluster}`;
    const hit = cache.get(key);
    if (hit && hit.until > Date.now()) return hit.allowed;
    const allowed = await subjectCan(client, user, { resource: clusterWriteAttributes(cluster) });
    if (cache.size > 10_000) cache.clear();
    cache.set(key, { allowed, until: Date.now() + ttlMs });
    return allowed;
  };
}
