// The floor of a webhook call on this node: an admission webhook that allows everything and changes
// nothing, running as 2 Pods behind a Service over TLS like tenantkit's, registered for the same
// operations with the same rules and match conditions. Two of them: a few lines of Go (the workload
// image's `admit`), what any webhook costs here before its own work; and a few lines of Node's own
// `https` server in tenantkit's image, what the runtime tenantkit uses costs. The rest is tenantkit's.

import type { KubeClient } from '../src/kube/client.ts';
import { type KubeObject, Resources } from '../src/kube/resources.ts';
import { createCA } from '../src/serving/certs.ts';

/** An allow-all webhook on Node's `https` module, kept alive as tenantkit's webhook server keeps it. */
const nodeFloor = `
const fs = require('node:fs');
const server = require('node:https').createServer(
  { key: fs.readFileSync('/tls/tls.key'), cert: fs.readFileSync('/tls/tls.crt') },
  (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      let uid;
      try { uid = JSON.parse(body).request.uid; } catch { return void res.writeHead(400).end(); }
      const review = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } };
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(review));
    });
  },
);
server.keepAliveTimeout = 65000;
server.listen(9443);
`;

export type FloorRuntime = 'go' | 'node';
const apply = { fieldManager: 'bench', force: true };

interface Webhook {
  name: string;
  clientConfig: Record<string, unknown>;
  rules?: { resources?: string[] }[];
}

export interface Floor {
  /**
   * Registers (true) or removes (false) a MutatingWebhookConfiguration that copies `like`'s webhooks for
   * `resources` (rules, match conditions, timeouts), pointed at the floor instead.
   */
  set(on: boolean, like: KubeObject & { webhooks?: Webhook[] }, resources: string[]): Promise<void>;
  remove(): Promise<void>;
}

/**
 * Starts a floor webhook's Pods and Service in namespace `bench-floor-<runtime>`; resolves once both are
 * ready. `image`: the workload image for Go, tenantkit's for Node.
 */
export async function startFloor(admin: KubeClient, runtime: FloorRuntime, image: string): Promise<Floor> {
  const name = `bench-floor-${runtime}`;
  const container =
    runtime === 'go'
      ? { args: ['admit', '9443', '/tls/tls.crt', '/tls/tls.key'] }
      : { command: ['node', '-e', nodeFloor] };
  const ca = await createCA(name);
  const serving = await ca.issue({ commonName: name, usage: 'server', dnsNames: [`${name}.${name}.svc`] });
  const b64 = (pem: string) => Buffer.from(pem).toString('base64');
  await admin.apply(Resources.namespaces, { metadata: { name } }, apply);
  await admin.apply(
    Resources.secrets,
    {
      metadata: { name, namespace: name },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': b64(serving.certPem), 'tls.key': b64(serving.keyPem) },
    } as KubeObject,
    apply,
  );
  const labels = { app: name };
  await admin.apply(
    Resources.deployments,
    {
      metadata: { name, namespace: name },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'admit',
                image,
                imagePullPolicy: 'IfNotPresent',
                ...container,
                ports: [{ containerPort: 9443 }],
                readinessProbe: { tcpSocket: { port: 9443 }, periodSeconds: 1 },
                volumeMounts: [{ name: 'tls', mountPath: '/tls', readOnly: true }],
              },
            ],
            volumes: [{ name: 'tls', secret: { secretName: name } }],
          },
        },
      },
    } as KubeObject,
    apply,
  );
  await admin.apply(
    Resources.services,
    {
      metadata: { name, namespace: name },
      spec: { selector: labels, ports: [{ port: 443, targetPort: 9443 }] },
    } as KubeObject,
    apply,
  );
  for (let waited = 0; ; waited += 500) {
    const d = await admin.get<KubeObject & { status?: { readyReplicas?: number } }>(
      Resources.deployments,
      name,
      name,
    );
    if (d?.status?.readyReplicas === 2) break;
    if (waited > 120_000) throw new Error(`the floor webhook's 2 Pods were not ready within 2 minutes`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const type = Resources.mutatingWebhookConfigurations;
  return {
    async set(on, like, resources) {
      const webhooks = (like.webhooks ?? [])
        .filter((w) => w.rules?.some((r) => r.resources?.some((x) => resources.includes(x))))
        .map((w) => ({
          ...w,
          name: `${w.name.split('.')[0]}.${name}.tenantkit.io`,
          clientConfig: {
            service: { namespace: name, name, port: 443, path: '/' },
            caBundle: b64(ca.certPem),
          },
        }));
      if (on) await admin.create(type, { metadata: { name }, webhooks } as unknown as KubeObject);
      else await admin.delete(type, name);
      // kube-apiserver picks the change up from its own watch (milliseconds); leave it a moment more.
      await new Promise((r) => setTimeout(r, 1000));
    },
    async remove() {
      await admin.delete(type, name).catch(() => undefined);
      await admin.delete(Resources.namespaces, name);
    },
  };
}
