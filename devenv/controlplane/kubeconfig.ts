// Writes kubeconfig files that kubectl and @kubernetes/client-node both read.
import { stringify } from 'yaml';

export interface KubeconfigCredentials {
  clientCertPem?: string;
  clientKeyPem?: string;
  token?: string;
}

export function renderKubeconfig(options: {
  server: string;
  caPem: string;
  user: string;
  credentials: KubeconfigCredentials;
  namespace?: string;
}): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const user: Record<string, string> = {};
  if (options.credentials.clientCertPem)
    user['client-certificate-data'] = b64(options.credentials.clientCertPem);
  if (options.credentials.clientKeyPem) user['client-key-data'] = b64(options.credentials.clientKeyPem);
  if (options.credentials.token) user.token = options.credentials.token;
  const context: Record<string, string> = { cluster: 'tenantkit', user: options.user };
  if (options.namespace) context.namespace = options.namespace;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'tenantkit',
        cluster: { server: options.server, 'certificate-authority-data': b64(options.caPem) },
      },
    ],
    users: [{ name: options.user, user }],
    contexts: [{ name: options.user, context }],
    'current-context': options.user,
  });
}
