// Verification for clusters whose authorizer is not (only) RBAC, e.g. a webhook authorizer: search
// computes access from RBAC objects alone, so an admin can compare, per user and namespace, what search
// computed with what the API server itself reports in a SelfSubjectRulesReview made as that user (by
// impersonation, which the search service account must be allowed: see accessVerificationRules).
import type { KubeClient } from '../../kube/client.ts';
import type { AccessSet, SearchUser } from '../model.ts';
import type { RbacRule } from './rbac.ts';
import {
  canonicalRights,
  grantsToRights,
  mergeRights,
  type Rights,
  rightsDifferences,
  rightsOfRules,
} from './rights.ts';

/** Headers that make a request act as `user` (kube-apiserver's user impersonation). */
export function impersonationHeaders(user: SearchUser): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = { 'Impersonate-User': user.username };
  if (user.groups.length > 0) headers['Impersonate-Group'] = [...user.groups];
  if (user.uid) headers['Impersonate-Uid'] = user.uid;
  for (const [key, values] of Object.entries(user.extra ?? {})) {
    // Header names are case-insensitive and limited in characters, so the key is percent-encoded.
    headers[`Impersonate-Extra-${encodeURIComponent(key)}`] = [...values];
  }
  return headers;
}

interface SelfSubjectRulesReview {
  status?: {
    resourceRules?: RbacRule[];
    incomplete?: boolean;
    evaluationError?: string;
  };
}

/** One (apiGroup, resource) pair on which the two sides disagree; names, 'all' or 'none'. */
export interface AccessDifference {
  apiGroup: string;
  resource: string;
  computed: string[] | 'all' | 'none';
  reviewed: string[] | 'all' | 'none';
}

export interface RulesReviewComparison {
  namespace: string;
  /** The API server could not list every rule (e.g. a webhook authorizer): differences may be incomplete. */
  incomplete: boolean;
  evaluationError?: string;
  differences: AccessDifference[];
}

/** The list rights `set` gives in `namespace`, cluster-wide ones included. */
export function rightsInNamespace(set: AccessSet, namespace: string): Rights {
  if (set.all) return grantsToRights([{ apiGroups: ['*'], resources: ['*'] }]);
  const rights = grantsToRights(set.clusterWide);
  for (const entry of set.namespaced) {
    if (entry.namespaces.includes(namespace)) mergeRights(rights, grantsToRights(entry.grants));
  }
  return canonicalRights(rights);
}

/**
 * Compares `set` (computed for `user`) in `namespace` with a SelfSubjectRulesReview made as `user`
 * through `client` (which must be allowed to impersonate). No differences means both agree on every
 * (apiGroup, resource, name) the user may list there.
 */
export async function compareWithRulesReview(
  client: KubeClient,
  user: SearchUser,
  set: AccessSet,
  namespace: string,
): Promise<RulesReviewComparison> {
  const review = await client
    .withHeaders(impersonationHeaders(user))
    .request<SelfSubjectRulesReview>('POST', '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectRulesReview',
        spec: { namespace },
      },
    });
  const reviewed = canonicalRights(rightsOfRules(review.status?.resourceRules ?? []));
  const computed = rightsInNamespace(set, namespace);
  return {
    namespace,
    incomplete: review.status?.incomplete === true,
    ...(review.status?.evaluationError ? { evaluationError: review.status.evaluationError } : {}),
    differences: rightsDifferences(computed, reviewed).map((d) => ({
      apiGroup: d.apiGroup,
      resource: d.resource,
      computed: d.a,
      reviewed: d.b,
    })),
  };
}
