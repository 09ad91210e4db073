// Status writing, one way for every controller: the new status goes out as a nested merge patch of what
// differs from the cached one (an idle resync writes nothing; a field dropped deep inside is removed;
// a queue move sends one number, not the whole mirrored status), conditions carry the generation of the
// spec they judged, and an Event can go with the write so that `kubectl describe` tells the same story.
import type { KubeClient } from './client.ts';
import { PatchType } from './client.ts';
import { type Condition, type ConditionInput, setCondition } from './conditions.ts';
import type { ReconcileContext } from './controller.ts';
import type { EventRecorder, EventType } from './events.ts';
import { type JsonObject, mergePatch } from './merge-patch.ts';
import type { KubeObject, ResourceType } from './resources.ts';

export interface StatusEvent {
  type: EventType;
  reason: string;
  /** What the controller was doing (the Event's `action`). */
  action: string;
  message: string;
}

export interface WriteOptions {
  /** Fail (409, retried) unless the object is still at this resourceVersion. */
  ifVersion?: string;
  /** Recorded on the object with the write. */
  event?: StatusEvent;
}

/** The status of one object, as one reconcile of it reads and writes it. */
export class StatusWriter<S extends object> {
  private readonly client: KubeClient;
  private readonly events: EventRecorder | undefined;
  private readonly type: ResourceType;
  private readonly object: KubeObject & { status?: S };

  constructor(
    context: { client: KubeClient; events?: EventRecorder },
    type: ResourceType,
    object: KubeObject & { status?: S },
  ) {
    this.client = context.client;
    this.events = context.events;
    this.type = type;
    this.object = object;
  }

  /** A copy of the status the object had when this reconcile read it. */
  get current(): S {
    return { ...(this.object.status ?? ({} as S)) };
  }

  /** `status`'s conditions with `input` set, judged against the object's current generation. */
  condition(status: S, input: Omit<ConditionInput, 'observedGeneration'>): Condition[] {
    const conditions = (status as { conditions?: Condition[] }).conditions;
    return setCondition(conditions, { ...input, observedGeneration: this.object.metadata.generation });
  }

  /** The patch that turns the object's status into `next` (`{}` when they are equal). */
  patchFor(next: S): JsonObject {
    return mergePatch(next as JsonObject, (this.object.status ?? {}) as JsonObject);
  }

  /** Writes `next` as the object's status; returns whether anything was sent. */
  async write(next: S, options: WriteOptions = {}): Promise<boolean> {
    if (options.event) this.event(options.event);
    const patch = this.patchFor(next);
    if (Object.keys(patch).length === 0) return false;
    const { name, namespace } = this.object.metadata;
    const body = {
      ...(options.ifVersion ? { metadata: { resourceVersion: options.ifVersion } } : {}),
      status: patch,
    };
    await this.client.patch(this.type, name!, namespace, body, PatchType.merge, 'status');
    return true;
  }

  /** Records an Event on the object. */
  event(e: StatusEvent): void {
    this.events?.record(this.object, e.type, e.reason, e.action, e.message);
  }
}

/** What every step of one reconcile gets: the status as it was read, its writer, and the context. */
export interface StatusView<S extends object> {
  base: S;
  status: StatusWriter<S>;
  ctx: ReconcileContext;
}
