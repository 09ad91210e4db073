// Namespace quota per organization, safe under concurrency and across webhook replicas. Counting the
// cache alone would let 20 parallel creates at quota-1 all pass; instead each admitted create reserves
// its name in a per-organization ConfigMap with a compare-and-swap on resourceVersion, so the API server
// orders the decisions. A reservation lapses once the namespace shows up in the cache, or after a
// minute if the create failed after our admission.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Organization } from '../api/tenancy.ts';
import { isAlreadyExists, isConflict, type KubeClient } from '../kube/client.ts';
import type { Informer } from '../kube/informer.ts';
import type { Manager } from '../kube/manager.ts';
import { type KubeObject, Resources } from '../kube/resources.ts';
import type { EffectiveConfig } from './config.ts';
import { type Directory, isTerminating } from './directory.ts';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

const reservationMs = 60_000;
const ledgerLabel = 'tenancy.tenantkit.io/ledger';
const ledgerValue = 'namespace-quota';
const ledgerSelector = `${ledgerLabel}=${ledgerValue}`;
const maxAttempts = 50;

/** How many namespaces an organization may own: its own number, else its usage profile's, else the default. */
export function namespaceQuotaOf(
  directory: Directory,
  organization: Organization,
  config: EffectiveConfig,
): number {
  return (
    organization.spec.namespaceQuota ??
    directory.profileFor(organization, config.activeUsageProfile)?.spec.namespaceCount ??
    config.defaultNamespaceQuota
  );
}

export type QuotaDecision = { ok: true; used: number } | { ok: false; used: number };

export class QuotaLedger {
  private readonly client: KubeClient;
  private readonly directory: Directory;
  private readonly cache: Informer<ConfigMap>;
  private readonly cachedNamespace: string;

  /** `namespace` is tenantkit's own: the ledger lives there unless the configuration moves it. */
  constructor(client: KubeClient, directory: Directory, manager: Manager, namespace: string) {
    this.client = client;
    this.directory = directory;
    this.cachedNamespace = namespace;
    this.cache = manager.informer<ConfigMap>({
      ...Resources.configMaps,
      labelSelector: ledgerSelector,
      watchNamespace: namespace,
    });
  }

  /** Namespaces an organization owns now (terminating ones do not count). */
  owned(organization: string, label: string): Set<string> {
    return new Set(
      this.directory
        .organizationNamespaces(organization, label)
        .filter((name) => !isTerminating(this.directory.namespace(name)!)),
    );
  }

  /** Admits `namespace` into `organization` if that keeps it within `limit`, reserving the slot. */
  async reserve(options: {
    organization: string;
    namespace: string;
    label: string;
    limit: number;
    ledgerNamespace: string;
    dryRun: boolean;
  }): Promise<QuotaDecision> {
    const name = `tenantkit-nsquota-${createHash('sha256').update(options.organization).digest('hex').slice(0, 16)}`;
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      // The first attempt trusts the cache (usually current); a stale copy only costs a 409 and a re-read.
      const current =
        attempt === 0 && options.ledgerNamespace === this.cachedNamespace
          ? this.cache.get(`${options.ledgerNamespace}/${name}`)
          : await this.client.get<ConfigMap>(Resources.configMaps, name, options.ledgerNamespace);
      const owned = this.owned(options.organization, options.label);
      const now = Date.now();
      const reservations: Record<string, number> = JSON.parse(current?.data?.reservations ?? '{}');
      // A reservation only bridges the gap until the namespace is in the cache; from then on the cache
      // (which leaves out terminating namespaces) is the truth.
      const live = Object.fromEntries(
        Object.entries(reservations).filter(([ns, until]) => until > now && !this.directory.namespace(ns)),
      );
      const used = new Set([...owned, ...Object.keys(live)]);
      if (used.has(options.namespace)) return { ok: true, used: used.size };
      if (used.size + 1 > options.limit) return { ok: false, used: used.size };
      if (options.dryRun) return { ok: true, used: used.size + 1 };
      live[options.namespace] = now + reservationMs;
      const body: ConfigMap = {
        metadata: {
          name,
          namespace: options.ledgerNamespace,
          labels: { [ledgerLabel]: ledgerValue },
          annotations: { 'tenancy.tenantkit.io/organization': options.organization },
          ...(current ? { resourceVersion: current.metadata.resourceVersion } : {}),
        },
        data: { reservations: JSON.stringify(live) },
      };
      try {
        if (current) await this.client.replace(Resources.configMaps, body);
        else await this.client.create(Resources.configMaps, body);
        return { ok: true, used: used.size + 1 };
      } catch (err) {
        if (!isConflict(err) && !isAlreadyExists(err)) throw err;
        await sleep(Math.random() * 20);
      }
    }
    throw new Error(
      `namespace quota ledger for ${options.organization} stayed contended after ${maxAttempts} attempts`,
    );
  }
}
