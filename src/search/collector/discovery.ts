// Which resource types the collector indexes: every type the API server serves that can be listed and
// watched, in one version per group and resource (the most preferred that serves it), without
// subresources and without Events (high churn, no lasting state; ACM leaves them out too).
//
// Aggregated discovery (two requests, /api and /apis, GA since Kubernetes 1.30) is used when the server
// offers it; older servers answer with the legacy documents and are walked one group-version at a time.
import type { KubeClient } from '../../kube/client.ts';
import type { ResourceType } from '../../kube/resources.ts';
import { asArray, asName, asObject, asString, at } from './json.ts';

export interface Discovery {
  types: ResourceType[];
  /**
   * Groups whose discovery failed or is stale (an aggregated API server that is down). Their types
   * may still exist: the collector keeps what it has for them instead of dropping their rows.
   */
  unavailableGroups: Set<string>;
}

const aggregatedAccept =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,' +
  'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

/** Types that are never collected, as `<group>/<plural>`. */
const skipped = new Set(['/events', 'events.k8s.io/events']);

export const typeKey = (t: Pick<ResourceType, 'group' | 'plural'>) => `${t.group}/${t.plural}`;

function collectable(group: string, plural: string, verbs: unknown): boolean {
  const v = asArray(verbs);
  return (
    !plural.includes('/') && !skipped.has(`${group}/${plural}`) && v.includes('list') && v.includes('watch')
  );
}

/** Adds a type unless an earlier (more preferred) version of the same group and resource was added. */
function add(into: Map<string, ResourceType>, type: ResourceType): void {
  const key = typeKey(type);
  if (!into.has(key)) into.set(key, type);
}

export interface DiscoverOptions {
  /** Use aggregated discovery when the server offers it (default true). */
  aggregated?: boolean;
  signal?: AbortSignal;
}

export async function discover(client: KubeClient, options: DiscoverOptions = {}): Promise<Discovery> {
  const types = new Map<string, ResourceType>();
  const unavailableGroups = new Set<string>();
  const useAggregated = options.aggregated ?? true;
  const aggregatedClient = useAggregated ? client.withHeaders({ Accept: aggregatedAccept }) : client;
  for (const root of ['/api', '/apis']) {
    const document = await aggregatedClient.request<unknown>('GET', root, { signal: options.signal });
    if (at(document, 'kind') === 'APIGroupDiscoveryList') readAggregated(document, types, unavailableGroups);
    else await readLegacy(client, root, document, types, unavailableGroups, options.signal);
  }
  return { types: [...types.values()], unavailableGroups };
}

function readAggregated(document: unknown, types: Map<string, ResourceType>, unavailable: Set<string>): void {
  for (const item of asArray(at(document, 'items'))) {
    const group = asString(at(item, 'metadata', 'name')) ?? '';
    // Versions come in preference order, so the first version that serves a resource is its preferred one.
    for (const version of asArray(at(item, 'versions'))) {
      const v = asName(at(version, 'version'));
      if (!v) continue;
      if (at(version, 'freshness') === 'Stale') {
        unavailable.add(group);
        continue;
      }
      for (const r of asArray(at(version, 'resources'))) {
        const plural = asName(at(r, 'resource'));
        const kind = asName(at(r, 'responseKind', 'kind'));
        if (!plural || !kind || !collectable(group, plural, at(r, 'verbs'))) continue;
        add(types, { group, version: v, plural, kind, namespaced: at(r, 'scope') === 'Namespaced' });
      }
    }
  }
}

async function readLegacy(
  client: KubeClient,
  root: string,
  document: unknown,
  types: Map<string, ResourceType>,
  unavailable: Set<string>,
  signal: AbortSignal | undefined,
): Promise<void> {
  // [group, version, path] in preference order: the preferred version of each group first.
  const groupVersions: [string, string, string][] = [];
  if (root === '/api') {
    for (const v of asArray(at(document, 'versions'))) {
      if (typeof v === 'string') groupVersions.push(['', v, `/api/${v}`]);
    }
  } else {
    for (const g of asArray(at(document, 'groups'))) {
      const name = asName(at(g, 'name'));
      if (!name) continue;
      const preferred = asName(at(g, 'preferredVersion', 'version'));
      const versions = asArray(at(g, 'versions'))
        .map((v) => asName(at(v, 'version')))
        .filter((v): v is string => v !== undefined);
      const ordered = preferred ? [preferred, ...versions.filter((v) => v !== preferred)] : versions;
      for (const v of ordered) groupVersions.push([name, v, `/apis/${name}/${v}`]);
    }
  }
  const lists = await Promise.all(
    groupVersions.map(([group, , path]) =>
      client.request<unknown>('GET', path, { signal }).catch(() => {
        unavailable.add(group);
        return undefined;
      }),
    ),
  );
  for (const [i, [group, version]] of groupVersions.entries()) {
    for (const r of asArray(at(lists[i], 'resources'))) {
      const plural = asName(at(r, 'name'));
      const kind = asName(at(r, 'kind'));
      if (!plural || !kind || !collectable(group, plural, at(r, 'verbs'))) continue;
      add(types, { group, version, plural, kind, namespaced: asObject(r)?.namespaced === true });
    }
  }
}
