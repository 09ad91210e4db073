// Resumes Velero volume operations its node-agent left Accepted, and cancels those it left InProgress
// after their data mover Pod ended (step.ts says when and how). Keys are
// `namespace/name` of one kind of operation; one controller per kind. It acts only in the Velero
// namespace of the admin's policy, where tenants write nothing: operations and data mover Pods there are
// Velero's, so nothing a tenant makes can be annotated or canceled by it. Writes are guarded by the
// operation's resourceVersion (a cancel races nothing Velero did since it was read), and each is said in
// an Event on the operation and counted (`tenantkit_velero_volume_operations_resumed_total`).
import { Counter } from 'prom-client';
import type { NonAdminBackupConfig } from '../../../crds/backup.ts';
import { isConflict, isNotFound } from '../../../kube/client.ts';
import { type ReconcileContext, type ReconcileResult, ReconcilerOf } from '../../../kube/controller.ts';
import type { Informer } from '../../../kube/informer.ts';
import type { Manager } from '../../../kube/manager.ts';
import { registry } from '../../../kube/metrics.ts';
import { Resources, type ResourceType } from '../../../kube/resources.ts';
import { configType, currentPolicy } from '../../policy/config.ts';
import { formatDuration } from '../../policy/cron.ts';
import { VolumeOperationTypes } from '../progress.ts';
import {
  mayNeedStep,
  nextStep,
  type Pod,
  ResumedAtAnnotation,
  type Step,
  type VolumeOperation,
} from './step.ts';

const resumed = new Counter({
  name: 'tenantkit_velero_volume_operations_resumed_total',
  help: "Velero volume operations left by the node-agent that tenantkit acted on: action 'resume' annotated the running data mover Pod of an Accepted one, 'cancel' canceled an Accepted one without a data mover Pod or an InProgress one whose data mover Pod had ended.",
  labelNames: ['kind', 'action'],
  registers: [registry],
});

export interface ResumeSources {
  type: ResourceType;
  operations: Informer<VolumeOperation>;
  configs: Informer<NonAdminBackupConfig>;
}

export class VolumeOperationResumer extends ReconcilerOf<ResumeSources> {
  override async reconcile(key: string, ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const operation = this.from.operations.get(key);
    const policy = currentPolicy(this.from.configs);
    if (!operation || operation.metadata.namespace !== policy.veleroNamespace) return undefined;
    if (!mayNeedStep(operation)) return undefined;
    const ns = operation.metadata.namespace;
    const pod = await ctx.client.get<Pod>(Resources.pods, operation.metadata.name!, ns);
    const step = nextStep(operation, pod, Date.now(), policy.resumeStuckVolumeOperationsAfterMs);
    const after = formatDuration(policy.resumeStuckVolumeOperationsAfterMs);
    switch (step.action) {
      case 'none':
        return undefined;
      case 'wait':
        return { requeueAfterMs: step.ms + 100 };
      case 'resume':
        await this.resume(ctx, operation, pod!, after);
        return { requeueAfterMs: policy.resumeStuckVolumeOperationsAfterMs };
      case 'cancel':
        await this.cancel(ctx, operation, cancelNote(operation, step, after));
        return undefined;
    }
  }

  /** Annotates the running data mover Pod: the update the node-agent starts the operation on. */
  private async resume(ctx: ReconcileContext, operation: VolumeOperation, pod: Pod, after: string) {
    const at = new Date().toISOString();
    const patch = { metadata: { annotations: { [ResumedAtAnnotation]: at } } };
    try {
      await ctx.client.patch(Resources.pods, pod.metadata.name!, pod.metadata.namespace, patch);
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    resumed.inc({ kind: this.from.type.kind, action: 'resume' });
    this.record(
      ctx,
      operation,
      'Warning',
      'ResumedStuckOperation',
      'Resume',
      `Accepted for over ${after} while its data mover Pod ${pod.metadata.name} runs: the node-agent missed the Pod's start (restarted, most likely). Annotated the Pod ${ResumedAtAnnotation}=${at}, on which the node-agent starts the operation.`,
    );
  }

  /** Cancels the operation, Velero's way: the node-agent ends it Canceled, and its backup or restore ends. */
  private async cancel(ctx: ReconcileContext, operation: VolumeOperation, note: string) {
    const { name, namespace, resourceVersion } = operation.metadata;
    try {
      await ctx.client.patch(this.from.type, name!, namespace, {
        metadata: { resourceVersion },
        spec: { cancel: true },
      });
    } catch (err) {
      // Changed meanwhile (the node-agent moved it): the next reconcile sees its new phase.
      if (isNotFound(err) || isConflict(err)) return;
      throw err;
    }
    resumed.inc({ kind: this.from.type.kind, action: 'cancel' });
    this.record(ctx, operation, 'Warning', 'CanceledStuckOperation', 'Cancel', note);
  }

  private record(
    ctx: ReconcileContext,
    operation: VolumeOperation,
    type: 'Warning',
    reason: string,
    action: string,
    note: string,
  ) {
    const { group, version, kind } = this.from.type;
    ctx.events.record({ ...operation, apiVersion: `${group}/${version}`, kind }, type, reason, action, note);
  }
}

/** Why `operation` is canceled, and what follows, for its Event. */
function cancelNote(
  operation: VolumeOperation,
  step: Extract<Step, { action: 'cancel' }>,
  after: string,
): string {
  const owner = operation.metadata.labels?.['velero.io/restore-name'] ? 'restore' : 'backup';
  const then = `Set spec.cancel: Velero ends it Canceled and its ${owner} with its reason; retry it.`;
  if (step.stuck === 'unstarted')
    return `Accepted for over ${after} and no data mover Pod exists: the node-agent stopped before making it and will not start this operation (Velero would fail it only at its prepare timeout). ${then}`;
  return `InProgress while its data mover Pod ${operation.metadata.name} has been ${step.podPhase} for over ${after}: the node-agent was down when the Pod ended and does not take its end (Velero would cancel it only after its 10-minute resource timeout, holding its queue). ${then}`;
}

/** One controller per kind of volume operation; the admin's policy changes reconcile every one again. */
export function registerResumeControllers(manager: Manager): void {
  const configs = manager.informer<NonAdminBackupConfig>(configType);
  for (const type of VolumeOperationTypes) {
    const operations = manager.informer<VolumeOperation>(type);
    manager
      .controller(`velero-${type.plural}-resume`)
      .for(type)
      .watchesAll(configType)
      .complete(new VolumeOperationResumer({ type, operations, configs }));
  }
}
