// Talks to a search service as a client would: a GraphQL POST over HTTPS with a bearer token (or other
// headers), trusting the test CA. Returns the status and the parsed JSON body.
import { type Agent, request } from 'node:https';

export interface GraphQLReply {
  status: number;
  body: {
    data?: Record<string, unknown>;
    errors?: { message: string; extensions?: { code?: string } }[];
    message?: string;
  };
}

export function postGraphQL(
  baseUrl: string,
  ca: string,
  token: string | undefined,
  query: string,
  variables: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  tls: TlsOptions = {},
): Promise<GraphQLReply> {
  return postGraphQLText(baseUrl, ca, token, JSON.stringify({ query, variables }), headers, tls);
}

export interface TlsOptions {
  /** The name to verify the certificate for, when the URL holds another (a Pod's address). */
  servername?: string;
  /** Connections to reuse (a keep-alive Agent, as a benchmark's client keeps them). */
  agent?: Agent;
}

/** The same, with the request body as text (for bodies JSON.stringify would not write, as a fuzzer sends). */
export function postGraphQLText(
  baseUrl: string,
  ca: string,
  token: string | undefined,
  body: string,
  headers: Record<string, string> = {},
  tls: TlsOptions = {},
): Promise<GraphQLReply> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${baseUrl}/searchapi/graphql`,
      {
        method: 'POST',
        ca,
        ...(tls.servername ? { servername: tls.servername } : {}),
        ...(tls.agent ? { agent: tls.agent } : {}),
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as GraphQLReply['body'] });
          } catch {
            reject(new Error(`HTTP ${res.statusCode}: not JSON: ${text.slice(0, 200)}`));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
