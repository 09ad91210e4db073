// ScopeTemplate controller: a template's ClusterRoles exist exactly while at least one ScopeInstance
// references the template. A ClusterRole is removed only once no binding of ours points at it any more,
// so a subject never loses access during a change (instances move their bindings first).
import {
  type ScopeInstance,
  ScopeInstanceCrd,
  type ScopeTemplate,
  ScopeTemplateCrd,
} from '../../crds/scopes.ts';
import type { ConditionInput } from '../../kube/conditions.ts';
import { type ReconcileContext, type ReconcileResult, ReconcilerOf } from '../../kube/controller.ts';
import { ensureOwned } from '../../kube/ensure.ts';
import { ByOwner, type Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { StatusWriter } from '../../kube/status.ts';
import { type Binding, type ClusterRole, fieldManager, templateAnnotation } from '../model.ts';
import { desiredClusterRole, roleUpToDate } from '../policy/desired.ts';
import {
  ByRoleRef,
  ByTemplate,
  boundBindings,
  IndexFunctions,
  scopedBindingTypes,
  scopedClusterRoles,
  templateOf,
} from './caches.ts';

/** What the template controller reads, wired by registerTemplateController. */
export interface TemplateSources {
  templates: Informer<ScopeTemplate>;
  instances: Informer<ScopeInstance>;
  roles: Informer<ClusterRole>;
  bindings: Informer<Binding>[];
}

/** What the writes did. */
interface Outcome {
  created: number;
  updated: number;
  deleted: number;
  /** Roles kept because bindings of ours still point at them (their deletions requeue the template). */
  waiting: number;
  conflicts: string[];
}

export function registerTemplateController(manager: Manager): void {
  const instances = manager.informer<ScopeInstance>(ScopeInstanceCrd.type);
  const bindings = scopedBindingTypes.map((t) => manager.informer<Binding>(t));
  instances.addIndex(ByTemplate, IndexFunctions.template);
  for (const b of bindings) b.addIndex(ByRoleRef, IndexFunctions.roleRef);
  const reconciler = new TemplateReconciler({
    templates: manager.informer<ScopeTemplate>(ScopeTemplateCrd.type),
    instances,
    roles: manager.informer<ClusterRole>(scopedClusterRoles),
    bindings,
  });
  const byAnnotation = (o: KubeObject) => {
    const t = o.metadata.annotations?.[templateAnnotation];
    return t ? [t] : [];
  };

  manager
    .controller('scopetemplate')
    .for(ScopeTemplateCrd.type)
    .owns(scopedClusterRoles)
    .watches(ScopeInstanceCrd.type, (o) => [templateOf(o)])
    .watches(scopedBindingTypes[0]!, byAnnotation)
    .watches(scopedBindingTypes[1]!, byAnnotation)
    .complete(reconciler);
}

export class TemplateReconciler extends ReconcilerOf<TemplateSources> {
  override async reconcile(name: string, ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const template = this.from.templates.get(name);
    // Deleted: the garbage collector removes the ClusterRoles through their ownerReferences.
    if (!template || template.metadata.deletionTimestamp) return undefined;
    const referenced = this.from.instances
      .byIndex(ByTemplate, name)
      .some((i) => !i.metadata.deletionTimestamp);
    const desired = referenced ? template.spec.clusterRoles.map((r) => desiredClusterRole(template, r)) : [];
    const outcome = await this.apply(ctx, template, desired);
    await this.prune(ctx, template, desired, outcome);
    await this.report(ctx, template, desired, referenced, outcome);
    // Roles still bound by bindings that are on their way out: the binding deletions requeue us.
    return outcome.waiting > 0 ? { requeueAfterMs: 30_000 } : undefined;
  }

  /** Creates and updates the wanted ClusterRoles (a name taken by someone else is a conflict, reported). */
  private async apply(
    { client }: ReconcileContext,
    template: ScopeTemplate,
    desired: ClusterRole[],
  ): Promise<Outcome> {
    const outcome: Outcome = { created: 0, updated: 0, deleted: 0, waiting: 0, conflicts: [] };
    for (const role of desired) {
      const result = await ensureOwned({
        client,
        type: Resources.clusterRoles,
        desired: role,
        cached: this.from.roles.get(role.metadata.name!),
        ownerUid: template.metadata.uid!,
        upToDate: roleUpToDate,
        fieldManager,
      });
      if (result.outcome === 'conflict') outcome.conflicts.push(result.message);
      if (result.outcome === 'created') outcome.created++;
      if (result.outcome === 'updated') outcome.updated++;
    }
    return outcome;
  }

  /** Removes roles no longer wanted, once no binding of ours points at them (access continuity). */
  private async prune(
    { client }: ReconcileContext,
    template: ScopeTemplate,
    desired: ClusterRole[],
    outcome: Outcome,
  ): Promise<void> {
    const desiredNames = new Set(desired.map((r) => r.metadata.name!));
    for (const role of this.from.roles.byIndex(ByOwner, template.metadata.uid!)) {
      const roleName = role.metadata.name!;
      if (desiredNames.has(roleName)) continue;
      if (boundBindings(this.from.bindings, roleName).length > 0) {
        outcome.waiting++;
        continue;
      }
      const preconditions = { uid: role.metadata.uid! };
      if (await client.delete(Resources.clusterRoles, roleName, undefined, { preconditions }))
        outcome.deleted++;
    }
  }

  /** Events for what changed or conflicted, and the status: Ready and the roles in place. */
  private async report(
    ctx: ReconcileContext,
    template: ScopeTemplate,
    desired: ClusterRole[],
    referenced: boolean,
    outcome: Outcome,
  ): Promise<void> {
    const status = new StatusWriter<NonNullable<ScopeTemplate['status']>>(
      ctx,
      ScopeTemplateCrd.type,
      template,
    );
    const { created, updated, deleted, conflicts } = outcome;
    if (created + updated + deleted > 0) {
      status.event({
        type: 'Normal',
        reason: 'ClusterRolesSynced',
        action: 'Reconcile',
        message: `ClusterRoles: ${created} created, ${updated} updated, ${deleted} deleted`,
      });
    }
    for (const message of conflicts)
      status.event({ type: 'Warning', reason: 'NameConflict', action: 'Reconcile', message });
    await status.write({
      observedGeneration: template.metadata.generation ?? 0,
      conditions: status.condition(status.current, readyCondition(conflicts, referenced, desired.length)),
      clusterRoles: desired.map((r, i) => ({
        generateName: template.spec.clusterRoles[i]!.generateName,
        name: r.metadata.name!,
      })),
    });
  }
}

/** Ready: names taken by others, the roles in place, or none needed while nothing references the template. */
function readyCondition(
  conflicts: string[],
  referenced: boolean,
  roles: number,
): Omit<ConditionInput, 'observedGeneration'> {
  if (conflicts.length > 0) {
    return { type: 'Ready', status: 'False', reason: 'NameConflict', message: conflicts.join('; ') };
  }
  if (referenced)
    return { type: 'Ready', status: 'True', reason: 'RolesReady', message: `${roles} ClusterRoles in place` };
  return {
    type: 'Ready',
    status: 'True',
    reason: 'Unreferenced',
    message: 'no ScopeInstance references this template, so it has no ClusterRoles',
  };
}
