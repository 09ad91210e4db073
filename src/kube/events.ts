// Kubernetes Events (events.k8s.io/v1) about the objects a controller manages, shown by
// `kubectl describe` and `kubectl events`. Repeats of the same event become a series (count + last
// time) instead of new objects. Recording never throws: an event is worth less than the reconcile.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { type KubeClient, PatchType } from './client.ts';
import { type KubeObject, Resources } from './resources.ts';
import { microTime } from './time.ts';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorder {
  record(regarding: KubeObject, type: EventType, reason: string, action: string, note: string): void;
  /** Resolves when every event recorded so far was written (or failed). For tests and shutdown. */
  flush(): Promise<void>;
}

interface Series {
  name: string;
  namespace: string;
  count: number;
  first: number;
}

/** Repeats within this window extend a series; later ones start a new event. */
const seriesWindowMs = 10 * 60 * 1000;

export function createEventRecorder(
  client: KubeClient,
  controller: string,
  instance: string,
  logger: Logger,
): EventRecorder {
  const series = new Map<string, Series>();
  const pending = new Set<Promise<void>>();

  async function write(regarding: KubeObject, type: EventType, reason: string, action: string, note: string) {
    const meta = regarding.metadata;
    const key = [meta.uid ?? `${meta.namespace}/${meta.name}`, type, reason, action, note].join('\u0000');
    const now = Date.now();
    const existing = series.get(key);
    if (existing && now - existing.first < seriesWindowMs) {
      existing.count++;
      await client.patch(
        Resources.events,
        existing.name,
        existing.namespace,
        { series: { count: existing.count, lastObservedTime: microTime() } },
        PatchType.merge,
      );
      return;
    }
    // Events about cluster-scoped objects live in "default", as the built-in recorders do.
    const namespace = meta.namespace ?? 'default';
    // An object's name may use all 253 characters an Event's name may have: cut it to leave room for the
    // suffix (client-go names Events the same way, without the cut).
    const suffix = `.${now.toString(16)}${randomBytes(3).toString('hex')}`;
    const name = `${(meta.name ?? '').slice(0, 253 - suffix.length).replace(/[-.]+$/, '')}${suffix}`;
    await client.create(Resources.events, {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name, namespace },
      eventTime: microTime(),
      reportingController: controller,
      reportingInstance: instance,
      action,
      reason,
      type,
      note: note.length > 1000 ? `${note.slice(0, 997)}...` : note,
      regarding: {
        apiVersion: regarding.apiVersion,
        kind: regarding.kind,
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
      },
    } as KubeObject);
    series.set(key, { name, namespace, count: 1, first: now });
    if (series.size > 10_000) series.clear();
  }

  return {
    record(regarding, type, reason, action, note) {
      const p = write(regarding, type, reason, action, note)
        .catch((err: unknown) => logger.warn({ err: String(err), reason }, 'could not record event'))
        .finally(() => pending.delete(p));
      pending.add(p);
    },
    async flush() {
      await Promise.all([...pending]);
    },
  };
}
