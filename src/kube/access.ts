// Asks the API server's authorizer what a user may do (SubjectAccessReview), so tenantkit's checks agree
// with RBAC (and any other authorizer) case for case instead of re-implementing it.
import type { KubeClient } from './client.ts';
import { type KubeObject, Resources } from './resources.ts';

/** A user as the API server authenticated it (the `userInfo` of reviews and admission requests). */
export interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ResourceAttributes {
  namespace?: string;
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  name?: string;
}

export interface NonResourceAttributes {
  path: string;
  verb: string;
}

export type AccessQuery = { resource: ResourceAttributes } | { nonResource: NonResourceAttributes };

interface SubjectAccessReview extends KubeObject {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

export async function subjectCan(client: KubeClient, user: UserInfo, query: AccessQuery): Promise<boolean> {
  const spec: Record<string, unknown> = {
    user: user.username,
    groups: user.groups ?? [],
    ...(user.uid ? { uid: user.uid } : {}),
    ...(user.extra ? { extra: user.extra } : {}),
  };
  if ('resource' in query) spec.resourceAttributes = query.resource;
  else spec.nonResourceAttributes = query.nonResource;
  const review = await client.create<SubjectAccessReview>(Resources.subjectAccessReviews, {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec,
  } as KubeObject);
  return review.status?.allowed === true;
}

/** Runs `fn` over `items` with at most `limit` in flight; results keep the input order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
