// The client side of search for the CLI: where the service is (a flag, $TENANTKIT_SEARCH_URL, or the
// public ConfigMap the installation publishes), and GraphQL requests sent with the credentials of the
// user's kubeconfig, so `tenantkit search` acts as exactly that user.

import type { Agent, RequestOptions } from 'node:https';
import { request } from 'node:https';
import type { KubeClient } from '../../kube/client.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';

/** Published by the installation (and `tenantkit dev`) for every authenticated user to read. */
export const SearchEndpointConfigMap = { namespace: 'kube-public', name: 'tenantkit-search' };

export interface SearchEndpoint {
  /** Base URL of the search service, e.g. https://search.example.com */
  url: string;
  /** PEM bundle that signs the service's certificate (default: the system's trust store). */
  ca?: string;
}

export async function discoverEndpoint(kube: KubeClient): Promise<SearchEndpoint> {
  const cm = await kube.get<KubeObject & { data?: Record<string, string> }>(
    Resources.configMaps,
    SearchEndpointConfigMap.name,
    SearchEndpointConfigMap.namespace,
  );
  const url = cm?.data?.url;
  if (url) return { url, ...(cm.data?.['ca.crt'] ? { ca: cm.data['ca.crt'] } : {}) };
  throw new Error(
    `cannot find the search service: pass --search-url or set TENANTKIT_SEARCH_URL (the cluster publishes none in ConfigMap ${SearchEndpointConfigMap.namespace}/${SearchEndpointConfigMap.name})`,
  );
}

export interface GraphQLResponse<T> {
  data?: T;
  errors?: { message: string; extensions?: { code?: string } }[];
}

export class SearchRequestError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'SearchRequestError';
    this.status = status;
  }
}

/** Sends one GraphQL query as the kubeconfig's user; GraphQL errors reject with their messages. */
export async function graphql<T>(
  endpoint: SearchEndpoint,
  kube: KubeClient,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<T> {
  const url = new URL('/searchapi/graphql', endpoint.url);
  const options: RequestOptions = { method: 'POST', headers: {} };
  // The kubeconfig's credentials (token, exec plugin, ...), but the search service's own trust anchor.
  await kube.credentials.apply(options);
  // The kubeconfig's agent trusts the API server's CA; the search service has its own. Keep only the
  // client credentials from it.
  const agent = (options.agent as Agent | undefined)?.options;
  delete options.agent;
  delete options.ca;
  if (agent?.cert) options.cert = agent.cert;
  if (agent?.key) options.key = agent.key;
  if (endpoint.ca) options.ca = endpoint.ca;
  const body = JSON.stringify({ query, variables });
  const headers = {
    ...(options.headers as Record<string, string>),
    'content-type': 'application/json',
    accept: 'application/graphql-response+json, application/json',
    'content-length': String(Buffer.byteLength(body)),
  };
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(url, { ...options, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.setTimeout(60_000, () => req.destroy(new Error(`${url.origin} did not answer within 60 s`)));
    req.on('error', reject);
    req.end(body);
  });
  let parsed: GraphQLResponse<T> & { message?: string };
  try {
    parsed = JSON.parse(text) as GraphQLResponse<T> & { message?: string };
  } catch {
    throw new SearchRequestError(status, `the search service answered ${status}: ${text.slice(0, 300)}`);
  }
  if (parsed.errors?.length) {
    throw new SearchRequestError(status, parsed.errors.map((e) => e.message).join('; '));
  }
  if (status !== 200 || !parsed.data) {
    throw new SearchRequestError(status, parsed.message ?? `the search service answered ${status}`);
  }
  return parsed.data;
}
