// kube-apiserver's client certificate for calling webhooks (AdmissionConfiguration `kubeConfigFile`), as
// an admin sets it up: its own CA, a certificate it presents to every webhook ('*'), and the flag that
// points kube-apiserver at the configuration. Test webhook servers verify it (startTestWebhooks), so
// every integration test shows that the API server's calls carry it.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createCA } from '../../src/serving/certs.ts';

export interface WebhookClientAuth {
  /** The CA a webhook server is given to verify callers. */
  caPem: string;
  /** The certificate kube-apiserver presents (tests use it to stand for a caller it cannot tell apart). */
  certPem: string;
  keyPem: string;
  /** kube-apiserver flags that make it present the certificate. */
  apiserverFlags: string[];
}

export async function writeWebhookClientAuth(dir: string): Promise<WebhookClientAuth> {
  const ca = await createCA('tenantkit-test-webhook-client-ca');
  const pair = await ca.issue({ commonName: 'kube-apiserver-webhook-client', usage: 'client' });
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const kubeconfig = join(dir, 'webhook-client.kubeconfig');
  await writeFile(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      users: [
        {
          name: '*',
          user: { 'client-certificate-data': b64(pair.certPem), 'client-key-data': b64(pair.keyPem) },
        },
      ],
    }),
    { mode: 0o600 },
  );
  const webhookConfig = {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'WebhookAdmissionConfiguration',
    kubeConfigFile: kubeconfig,
  };
  const admission = join(dir, 'admission-configuration.yaml');
  await writeFile(
    admission,
    stringify({
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AdmissionConfiguration',
      plugins: [
        { name: 'ValidatingAdmissionWebhook', configuration: webhookConfig },
        { name: 'MutatingAdmissionWebhook', configuration: webhookConfig },
      ],
    }),
  );
  return {
    caPem: ca.certPem,
    certPem: pair.certPem,
    keyPem: pair.keyPem,
    apiserverFlags: [`--admission-control-config-file=${admission}`],
  };
}
