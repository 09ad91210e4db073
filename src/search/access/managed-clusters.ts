// The names of ACM's ManagedClusters, read by an informer only while the API server serves that API:
// a hub without ACM has no such type, and an informer on it would fail forever. Whether it is served is
// asked of the API server's discovery, at start and whenever a CustomResourceDefinition changes.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { untilAborted } from '../../kube/abort.ts';
import { isNotFound, type KubeClient } from '../../kube/client.ts';
import { Informer } from '../../kube/informer.ts';
import type { KubeObject, ResourceType } from '../../kube/resources.ts';

export const ManagedClusterType: ResourceType = {
  group: 'cluster.open-cluster-management.io',
  version: 'v1',
  plural: 'managedclusters',
  kind: 'ManagedCluster',
  namespaced: false,
};
export const ManagedClusterCrdName = `${ManagedClusterType.plural}.${ManagedClusterType.group}`;

interface CrdObject extends KubeObject {
  status?: { conditions?: { type: string; status: string }[] };
}

interface DiscoveryList {
  resources?: { name: string; verbs?: string[] }[];
}

/** How long discovery may lag behind an Established CRD before we stop asking again. */
const discoveryRetries = 20;
const discoveryRetryMs = 250;

export class ManagedClusterTracker {
  private readonly client: KubeClient;
  private readonly crds: Informer<CrdObject>;
  private readonly logger: Logger | undefined;
  private readonly onChange: () => void;
  private informer?: Informer<KubeObject>;
  private informerStop?: AbortController;
  private readonly current = new Set<string>();
  private checking?: Promise<void>;
  private recheck = false;
  private readonly initial: Promise<void>;
  private resolveInitial!: () => void;

  constructor(client: KubeClient, crds: Informer<CrdObject>, onChange: () => void, logger?: Logger) {
    this.client = client;
    this.crds = crds;
    this.onChange = onChange;
    this.logger = logger;
    this.initial = new Promise((resolve) => {
      this.resolveInitial = resolve;
    });
  }

  /** The ManagedCluster names now (empty while the API is not served). */
  names(): ReadonlySet<string> {
    return this.current;
  }

  /** Whether the ManagedCluster API was served at the last check. */
  served(): boolean {
    return this.informer !== undefined;
  }

  /** Resolves once the first check is done and, if the API is served, the informer has synced. */
  async waitForSync(): Promise<void> {
    await this.initial;
    await this.informer?.waitForSync();
  }

  /** Tracks the API until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const trigger = (crd: CrdObject) => {
      if (crd.metadata.name === ManagedClusterCrdName) this.check(signal);
    };
    await Promise.race([this.crds.waitForSync(), untilAborted(signal)]);
    this.crds.addHandlers({ onAdd: trigger, onUpdate: (_, crd) => trigger(crd), onDelete: trigger });
    this.check(signal);
    await untilAborted(signal);
    this.stopInformer();
  }

  /** Runs one check at a time; a trigger during a check runs one more after it. */
  private check(signal: AbortSignal): void {
    if (this.checking) {
      this.recheck = true;
      return;
    }
    this.checking = (async () => {
      do {
        this.recheck = false;
        await this.reconcile(signal).catch((err: unknown) =>
          this.logger?.warn({ err: String(err) }, 'checking the ManagedCluster API failed'),
        );
      } while (this.recheck && !signal.aborted);
      this.checking = undefined;
      this.resolveInitial();
    })();
  }

  private async reconcile(signal: AbortSignal): Promise<void> {
    let served = await this.discover();
    // Discovery can lag a moment behind the CRD turning Established (and behind its deletion). Without
    // a CRD, whatever discovery says stands (the API may come from an aggregated API server).
    const lagging = () =>
      this.crds.get(ManagedClusterCrdName) !== undefined && served !== this.crdEstablished();
    for (let i = 0; i < discoveryRetries && lagging() && !signal.aborted; i++) {
      await sleep(discoveryRetryMs, undefined, { signal }).catch(() => {});
      served = await this.discover();
    }
    if (signal.aborted) return;
    if (served && !this.informer) this.startInformer(signal);
    else if (!served && this.informer) this.stopInformer();
  }

  private crdEstablished(): boolean {
    const crd = this.crds.get(ManagedClusterCrdName);
    if (!crd || crd.metadata.deletionTimestamp) return false;
    return (crd.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
  }

  private async discover(): Promise<boolean> {
    const { group, version, plural } = ManagedClusterType;
    try {
      const list = await this.client.request<DiscoveryList>('GET', `/apis/${group}/${version}`);
      const resource = list.resources?.find((r) => r.name === plural);
      return !!resource && ['list', 'watch'].every((v) => resource.verbs?.includes(v));
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  private startInformer(signal: AbortSignal): void {
    const stop = new AbortController();
    signal.addEventListener('abort', () => stop.abort(), { once: true });
    const informer = new Informer<KubeObject>(this.client, ManagedClusterType, {
      ...(this.logger ? { logger: this.logger } : {}),
    });
    // Only names matter, and a name never changes: adds and deletes are all there is to follow.
    informer.addHandlers({
      onAdd: (cluster) => {
        this.current.add(cluster.metadata.name ?? '');
        this.onChange();
      },
      onDelete: (cluster) => {
        this.current.delete(cluster.metadata.name ?? '');
        this.onChange();
      },
    });
    this.informer = informer;
    this.informerStop = stop;
    informer
      .run(stop.signal)
      .catch((err: unknown) => this.logger?.warn({ err: String(err) }, 'ManagedCluster informer stopped'));
    this.logger?.info('ManagedCluster API served: watching managed clusters');
  }

  private stopInformer(): void {
    if (!this.informer) return;
    this.informerStop?.abort();
    this.informer = undefined;
    this.informerStop = undefined;
    if (this.current.size > 0) {
      this.current.clear();
      this.onChange();
    }
  }
}
