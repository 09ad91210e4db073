// The serving certificate options every tenantkit server takes: --cert-dir (tls.crt and tls.key, re-read
// when they change) or --tls-secret (a certificate the server makes, rotates and keeps in that Secret,
// owned by --service-account, for the names of --service).
import type { Logger } from 'pino';
import { KubeClient } from '../kube/client.ts';
import type { ServingCertificate } from './https.ts';
import { SelfManagedTls, type SelfManagedTlsOptions } from './self-managed-tls.ts';

/** parseArgs options; `service` defaults to the component's Service name. */
export const servingTlsOptions = (service: string) =>
  ({
    'cert-dir': { type: 'string' },
    'tls-secret': { type: 'string' },
    service: { type: 'string', default: service },
    'service-account': { type: 'string' },
    namespace: { type: 'string' },
  }) as const;

export interface ServingTlsValues {
  'cert-dir'?: string | undefined;
  'tls-secret'?: string | undefined;
  service?: string | undefined;
  'service-account'?: string | undefined;
  namespace?: string | undefined;
}

export interface ServingTls {
  namespace: string;
  certificate: ServingCertificate;
  /** The self-managed certificate, to keep renewed (`tls.run`), when --tls-secret was given. */
  tls?: SelfManagedTls;
}

/**
 * The certificate the server starts with; `extra` adds options to the self-managed one (e.g. the webhook
 * configurations whose caBundle it keeps). Throws when neither option was given.
 */
export async function servingTls(
  values: ServingTlsValues,
  logger: Logger,
  extra: Partial<SelfManagedTlsOptions> = {},
  client?: KubeClient,
): Promise<ServingTls> {
  const namespace = values.namespace ?? process.env.POD_NAMESPACE ?? 'tenantkit-system';
  const secret = values['tls-secret'];
  if (!values['cert-dir'] && !secret) {
    throw new Error(
      '--cert-dir (a directory with tls.crt and tls.key) or --tls-secret (a Secret tenantkit keeps its own certificate in) is required',
    );
  }
  if (!secret) {
    const dir = values['cert-dir']!;
    return { namespace, certificate: { certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key` } };
  }
  const tls = new SelfManagedTls({
    client: client ?? KubeClient.fromDefault(),
    logger,
    namespace,
    secretName: secret,
    dnsNames: [`${values.service}.${namespace}.svc`, `${values.service}.${namespace}.svc.cluster.local`],
    ...(values['service-account'] ? { ownerServiceAccount: values['service-account'] } : {}),
    ...extra,
  });
  return { namespace, certificate: await tls.reconcile(), tls };
}
