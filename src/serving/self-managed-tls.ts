// The webhook server's own certificate, made and rotated without cert-manager (what Kyverno and Capsule
// do): a CA and a serving certificate kept in one Secret, the CA injected as caBundle into the webhook
// configurations that call this server. Every replica runs the same loop; the Secret's resourceVersion
// decides which replica's rotation wins, and the others serve what the Secret holds.
//
// Rotation never breaks a handshake: a new CA is added to caBundle beside the old one (which stays until
// it expires), and serving certificates are renewed well before they expire.
import { X509Certificate } from 'node:crypto';
import type { Logger } from 'pino';
import { Alarm } from '../kube/alarm.ts';
import { ApiError, type KubeClient } from '../kube/client.ts';
import { Informer } from '../kube/informer.ts';
import { type KubeObject, Resources, type ResourceType } from '../kube/resources.ts';
import { createCA, type KeyPair, loadCA } from './certs.ts';

const day = 24 * 60 * 60 * 1000;

export interface SelfManagedTlsOptions {
  client: KubeClient;
  logger: Logger;
  namespace: string;
  /** The Secret holding ca.crt (the bundle), ca.key, tls.crt and tls.key. */
  secretName: string;
  /** The names the API server calls: `<service>.<namespace>.svc` and its long form. */
  dnsNames: string[];
  /** Webhook configurations (by name) whose every webhook gets the CA bundle. */
  validatingWebhookConfigurations?: string[];
  mutatingWebhookConfigurations?: string[];
  /** APIServices (by name) served here: each gets the CA bundle as its spec.caBundle. */
  apiServices?: string[];
  /**
   * A ServiceAccount in `namespace` made the Secret's owner, so the Secret goes when the ServiceAccount
   * does (`helm uninstall` deletes the webhooks' ServiceAccount; the Secret is not the chart's to delete).
   */
  ownerServiceAccount?: string;
  caValidDays?: number;
  servingValidDays?: number;
}

interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

interface WebhookConfiguration extends KubeObject {
  webhooks?: { name: string; clientConfig: { caBundle?: string } }[];
}

/** What the Secret holds, decoded. */
interface Material {
  caBundle: string;
  ca: KeyPair;
  serving: KeyPair;
}

const b64 = (text: string) => Buffer.from(text).toString('base64');
const unb64 = (text: string | undefined) => Buffer.from(text ?? '', 'base64').toString('utf8');

export class SelfManagedTls {
  private readonly options: SelfManagedTlsOptions;
  private readonly caValidDays: number;
  private readonly servingValidDays: number;

  constructor(options: SelfManagedTlsOptions) {
    this.options = options;
    this.caValidDays = options.caValidDays ?? 3650;
    this.servingValidDays = options.servingValidDays ?? 365;
  }

  /**
   * Makes sure the Secret holds a current CA and serving certificate and that every configured webhook
   * trusts the CA; returns the serving certificate to use. Safe to call from every replica at any time.
   */
  async reconcile(): Promise<KeyPair> {
    for (let attempt = 0; ; attempt++) {
      try {
        const material = await this.ensureSecret();
        await this.injectCaBundle(material.caBundle);
        return material.serving;
      } catch (err) {
        // Another replica wrote first: read what it wrote and go on from there.
        if (err instanceof ApiError && (err.status === 409 || err.reason === 'AlreadyExists') && attempt < 5)
          continue;
        throw err;
      }
    }
  }

  /**
   * Calls `reconcile` now, again whenever the Secret or a configuration given the CA changes (each watched
   * by name, so nothing is polled), and every `intervalMs` besides (renewal falls due by date, not by
   * event); hands each new serving certificate to `use`.
   */
  async run(use: (serving: KeyPair) => void, signal: AbortSignal, intervalMs = day): Promise<void> {
    let current = '';
    const alarm = new Alarm();
    const informers = this.watchedObjects().map(([type, name, namespace]) => {
      const informer = new Informer<KubeObject>(this.options.client, type, {
        ...(namespace ? { namespace } : {}),
        fieldSelector: `metadata.name=${name}`,
        logger: this.options.logger,
      });
      informer.addHandlers({ onAdd: alarm.ring, onUpdate: alarm.ring, onDelete: alarm.ring });
      return informer;
    });
    const watches = informers.map((informer) => informer.run(signal));
    // A change made after the first round but before a watch began (the Secret deleted, say) shows in no
    // event: one more round once every watch has listed covers it.
    void Promise.all(informers.map((informer) => informer.waitForSync())).then(alarm.ring);
    while (!signal.aborted) {
      try {
        const serving = await this.reconcile();
        if (serving.certPem !== current) {
          current = serving.certPem;
          use(serving);
          this.options.logger.info(
            { secret: this.options.secretName, notAfter: new X509Certificate(serving.certPem).validTo },
            'serving certificate in use',
          );
        }
      } catch (err) {
        this.options.logger.error({ err, secret: this.options.secretName }, 'certificate upkeep failed');
      }
      await alarm.sleep(intervalMs, signal);
    }
    await Promise.allSettled(watches);
  }

  /** The Secret and every object given the CA bundle: type, name and namespace. */
  private watchedObjects(): [ResourceType, string, string?][] {
    const o = this.options;
    return [
      [Resources.secrets, o.secretName, o.namespace],
      ...(o.validatingWebhookConfigurations ?? []).map(
        (n) => [Resources.validatingWebhookConfigurations, n] as [ResourceType, string],
      ),
      ...(o.mutatingWebhookConfigurations ?? []).map(
        (n) => [Resources.mutatingWebhookConfigurations, n] as [ResourceType, string],
      ),
      ...(o.apiServices ?? []).map((n) => [Resources.apiServices, n] as [ResourceType, string]),
    ];
  }

  private async ensureSecret(): Promise<Material> {
    const { client, namespace, secretName } = this.options;
    const secret = await client.get<Secret>(Resources.secrets, secretName, namespace);
    const held = secret ? this.decode(secret) : undefined;
    const next = await this.renew(held);
    if (next === held) return held;
    const data = {
      'ca.crt': b64(next.caBundle),
      'ca.key': b64(next.ca.keyPem),
      'tls.crt': b64(next.serving.certPem),
      'tls.key': b64(next.serving.keyPem),
    };
    if (!secret) {
      await client.create(Resources.secrets, {
        metadata: {
          name: secretName,
          namespace,
          labels: { 'app.kubernetes.io/managed-by': 'tenantkit' },
          ...(await this.ownerReferences()),
        },
        type: 'kubernetes.io/tls',
        data,
      } as Secret);
    } else {
      // resourceVersion makes this a compare-and-swap: a replica that rotated first wins.
      await client.replace(Resources.secrets, { ...secret, type: 'kubernetes.io/tls', data } as Secret);
    }
    this.options.logger.info(
      { secret: secretName, newCa: next.ca !== held?.ca },
      held ? 'rotated the serving certificate' : 'made the CA and serving certificate',
    );
    return next;
  }

  private async ownerReferences(): Promise<{ ownerReferences?: KubeObject['metadata']['ownerReferences'] }> {
    const name = this.options.ownerServiceAccount;
    if (!name) return {};
    const owner = await this.options.client.get<KubeObject>(
      Resources.serviceAccounts,
      name,
      this.options.namespace,
    );
    if (!owner?.metadata.uid)
      throw new Error(`ServiceAccount ${this.options.namespace}/${name} (the Secret's owner) not found`);
    return { ownerReferences: [{ apiVersion: 'v1', kind: 'ServiceAccount', name, uid: owner.metadata.uid }] };
  }

  private decode(secret: Secret): Material | undefined {
    const d = secret.data ?? {};
    const material = {
      caBundle: unb64(d['ca.crt']),
      ca: { certPem: firstCertificate(unb64(d['ca.crt'])), keyPem: unb64(d['ca.key']) },
      serving: { certPem: unb64(d['tls.crt']), keyPem: unb64(d['tls.key']) },
    };
    try {
      new X509Certificate(material.ca.certPem);
      new X509Certificate(material.serving.certPem);
      return material;
    } catch {
      return undefined; // unreadable: start over
    }
  }

  /** The material to hold: `held` itself while it is good, otherwise a renewed copy. */
  private async renew(held: Material | undefined): Promise<Material> {
    const now = Date.now();
    let { ca, caBundle } = held ?? { ca: undefined, caBundle: '' };
    let newCa = false;
    if (!ca || expiresWithin(ca.certPem, now, (this.caValidDays / 3) * day)) {
      const fresh = await createCA(`tenantkit-webhooks@${Math.floor(now / 1000)}`, this.caValidDays);
      ca = { certPem: fresh.certPem, keyPem: fresh.keyPem };
      // The previous CA stays trusted until it expires: serving certificates it signed still verify.
      const previous = splitCertificates(caBundle).filter((c) => !expiresWithin(c, now, 0));
      caBundle = [fresh.certPem, ...previous].map((c) => c.trim()).join('\n');
      newCa = true;
    }
    const serving = held?.serving;
    if (
      held &&
      !newCa &&
      serving &&
      !expiresWithin(serving.certPem, now, (this.servingValidDays / 3) * day) &&
      coversNames(serving.certPem, this.options.dnsNames) &&
      new X509Certificate(serving.certPem).checkIssued(new X509Certificate(ca.certPem))
    ) {
      return held;
    }
    const issuer = await loadCA(ca);
    const [first] = this.options.dnsNames;
    const fresh = await issuer.issue({
      commonName: first ?? 'webhooks',
      dnsNames: this.options.dnsNames,
      usage: 'server',
      validDays: this.servingValidDays,
    });
    return { caBundle, ca, serving: fresh };
  }

  private async injectCaBundle(bundle: string): Promise<void> {
    const encoded = b64(bundle);
    const { client } = this.options;
    const targets = [
      ...(this.options.validatingWebhookConfigurations ?? []).map(
        (n) => [Resources.validatingWebhookConfigurations, n] as const,
      ),
      ...(this.options.mutatingWebhookConfigurations ?? []).map(
        (n) => [Resources.mutatingWebhookConfigurations, n] as const,
      ),
    ];
    for (const [type, name] of targets) {
      const config = await client.get<WebhookConfiguration>(type, name);
      if (!config?.webhooks?.some((w) => w.clientConfig.caBundle !== encoded)) continue;
      for (const w of config.webhooks) w.clientConfig.caBundle = encoded;
      await client.replace(type, config);
      this.options.logger.info({ configuration: name }, 'injected the webhook CA bundle');
    }
    for (const name of this.options.apiServices ?? []) {
      const service = await client.get<KubeObject & { spec?: { caBundle?: string } }>(
        Resources.apiServices,
        name,
      );
      if (!service?.spec || service.spec.caBundle === encoded) continue;
      service.spec.caBundle = encoded;
      await client.replace(Resources.apiServices, service);
      this.options.logger.info({ apiService: name }, 'injected the CA bundle into the APIService');
    }
  }
}

function expiresWithin(pem: string, now: number, margin: number): boolean {
  return new Date(new X509Certificate(pem).validTo).getTime() - now <= margin;
}

function coversNames(pem: string, names: string[]): boolean {
  const san = new X509Certificate(pem).subjectAltName ?? '';
  return names.every((n) => san.split(', ').includes(`DNS:${n}`));
}

function splitCertificates(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

function firstCertificate(bundle: string): string {
  return splitCertificates(bundle)[0] ?? '';
}
