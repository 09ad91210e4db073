// ScopeTemplate controller: a template's ClusterRoles exist exactly while at least one ScopeInstance
// references the template. A ClusterRole is removed only once no binding of ours points at it any more,
// so a subject never loses access during a change (instances move their bindings first).
import { type ScopeInstance, ScopeInstanceCrd, type ScopeTemplate, ScopeTemplateCrd } from '../api/scopes.ts';
import type { ConditionInput } from '../kube/conditions.ts';
import { ensureOwned } from '../kube/ensure.ts';
import { ByOwner } from '../kube/informer.ts';
import type { Manager } from '../kube/manager.ts';
import { type KubeObject, Resources } from '../kube/resources.ts';
import { StatusWriter } from '../kube/status.ts';
import { type Binding, type ClusterRole, desiredClusterRole, roleUpToDate } from './desired.ts';
import { fieldManager, templateAnnotation } from './names.ts';
import {
  ByRoleRef,
  ByTemplate,
  boundBindings,
  IndexFunctions,
  scopedBindingTypes,
  scopedClusterRoles,
  templateOf,
} from './types.ts';

export function registerTemplateController(manager: Manager): void {
  const templates = manager.informer<ScopeTemplate>(ScopeTemplateCrd.type);
  const instances = manager.informer<ScopeInstance>(ScopeInstanceCrd.type);
  const roles = manager.informer<ClusterRole>(scopedClusterRoles);
  const bindingInformers = scopedBindingTypes.map((t) => manager.informer<Binding>(t));
  instances.addIndex(ByTemplate, IndexFunctions.template);
  for (const b of bindingInformers) b.addIndex(ByRoleRef, IndexFunctions.roleRef);

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
    .complete(async (name, ctx) => {
      const { client, events } = ctx;
      const template = templates.get(name);
      // Deleted: the garbage collector removes the ClusterRoles through their ownerReferences.
      if (!template || template.metadata.deletionTimestamp) return undefined;
      const uid = template.metadata.uid!;
      const referenced = instances.byIndex(ByTemplate, name).some((i) => !i.metadata.deletionTimestamp);
      const desired = referenced
        ? template.spec.clusterRoles.map((r) => desiredClusterRole(template, r))
        : [];
      const desiredNames = new Set(desired.map((r) => r.metadata.name!));

      const conflicts: string[] = [];
      let created = 0;
      let updated = 0;
      for (const role of desired) {
        const result = await ensureOwned({
          client,
          type: Resources.clusterRoles,
          desired: role,
          cached: roles.get(role.metadata.name!),
          ownerUid: uid,
          upToDate: roleUpToDate,
          fieldManager,
        });
        if (result.outcome === 'conflict') conflicts.push(result.message);
        if (result.outcome === 'created') created++;
        if (result.outcome === 'updated') updated++;
      }

      let deleted = 0;
      let waiting = 0;
      for (const role of roles.byIndex(ByOwner, uid)) {
        const roleName = role.metadata.name!;
        if (desiredNames.has(roleName)) continue;
        if (boundBindings(bindingInformers, roleName).length > 0) {
          waiting++;
          continue;
        }
        if (
          await client.delete(Resources.clusterRoles, roleName, undefined, {
            preconditions: { uid: role.metadata.uid! },
          })
        )
          deleted++;
      }
      if (created + updated + deleted > 0) {
        events.record(
          template,
          'Normal',
          'ClusterRolesSynced',
          'Reconcile',
          `ClusterRoles: ${created} created, ${updated} updated, ${deleted} deleted`,
        );
      }
      for (const message of conflicts)
        events.record(template, 'Warning', 'NameConflict', 'Reconcile', message);

      const ready: Omit<ConditionInput, 'observedGeneration'> =
        conflicts.length > 0
          ? { type: 'Ready', status: 'False', reason: 'NameConflict', message: conflicts.join('; ') }
          : referenced
            ? {
                type: 'Ready',
                status: 'True',
                reason: 'RolesReady',
                message: `${desired.length} ClusterRoles in place`,
              }
            : {
                type: 'Ready',
                status: 'True',
                reason: 'Unreferenced',
                message: 'no ScopeInstance references this template, so it has no ClusterRoles',
              };
      const status = new StatusWriter<NonNullable<ScopeTemplate['status']>>(
        ctx,
        ScopeTemplateCrd.type,
        template,
      );
      await status.write({
        observedGeneration: template.metadata.generation ?? 0,
        conditions: status.condition(status.current, ready),
        clusterRoles: desired.map((r, i) => ({
          generateName: template.spec.clusterRoles[i]!.generateName,
          name: r.metadata.name!,
        })),
      });
      // Roles still bound by bindings that are on their way out: the binding deletions requeue us.
      return waiting > 0 ? { requeueAfterMs: 30_000 } : undefined;
    });
}
