// ScopeInstance controller: one RoleBinding per target namespace and template role, or one
// ClusterRoleBinding per role when the instance names no namespaces and no selector.
// Order matters for access continuity: create and update first; prune stale bindings only where the
// new ones are in place and their ClusterRoles exist, so a subject never loses access it keeps.
import { type ScopeInstance, ScopeInstanceCrd, type ScopeTemplate, ScopeTemplateCrd } from '../api/scopes.ts';
import { mapLimit } from '../kube/access.ts';
import { type Condition, setCondition } from '../kube/conditions.ts';
import { ensureOwned } from '../kube/ensure.ts';
import { ByOwner } from '../kube/informer.ts';
import type { Manager } from '../kube/manager.ts';
import { type KubeObject, Resources } from '../kube/resources.ts';
import { compileSelector, isEmptySelector } from '../kube/selectors.ts';
import { type Binding, bindingUpToDate, type ClusterRole, desiredBinding, ownedBy } from './desired.ts';
import { clusterRoleName, fieldManager, templateAnnotation } from './names.ts';
import { statusChanged } from './status.ts';
import {
  ByListedNamespace,
  BySelector,
  ByTemplate,
  IndexFunctions,
  scopedClusterRoleBindings,
  scopedClusterRoles,
  scopedRoleBindings,
} from './types.ts';

interface Namespace extends KubeObject {
  status?: { phase?: string };
}

interface Failure {
  namespace: string;
  reason: string;
  message: string;
}

/** Writes in flight per reconcile: enough to bind 1,000 namespaces in seconds, gentle on the API server. */
const writeConcurrency = 16;
const maxReportedFailures = 100;

export function registerInstanceController(manager: Manager): void {
  const instances = manager.informer<ScopeInstance>(ScopeInstanceCrd.type);
  const templates = manager.informer<ScopeTemplate>(ScopeTemplateCrd.type);
  const namespaces = manager.informer<Namespace>(Resources.namespaces);
  const roles = manager.informer<ClusterRole>(scopedClusterRoles);
  const roleBindings = manager.informer<Binding>(scopedRoleBindings);
  const clusterRoleBindings = manager.informer<Binding>(scopedClusterRoleBindings);
  instances.addIndex(ByTemplate, IndexFunctions.template);
  instances.addIndex(ByListedNamespace, IndexFunctions.listedNamespace);
  instances.addIndex(BySelector, IndexFunctions.selector);

  const instancesOfTemplate = (template: string) =>
    instances.byIndex(ByTemplate, template).map((i) => i.metadata.name!);

  manager
    .controller('scopeinstance')
    .for(ScopeInstanceCrd.type)
    .owns(scopedRoleBindings)
    .owns(scopedClusterRoleBindings)
    .watches(ScopeTemplateCrd.type, (t) => instancesOfTemplate(t.metadata.name!))
    // A ClusterRole appearing lets instances prune the bindings it replaces.
    .watches(scopedClusterRoles, (r) =>
      instancesOfTemplate(r.metadata.annotations?.[templateAnnotation] ?? ''),
    )
    .watches(
      Resources.namespaces,
      (ns) =>
        [
          ...instances.byIndex(ByListedNamespace, ns.metadata.name!),
          ...instances.byIndex(BySelector, 'yes'),
        ].map((i) => i.metadata.name!),
      (previous, current) =>
        !previous ||
        JSON.stringify(previous.metadata.labels) !== JSON.stringify(current.metadata.labels) ||
        previous.metadata.deletionTimestamp !== current.metadata.deletionTimestamp ||
        (previous as Namespace).status?.phase !== (current as Namespace).status?.phase,
    )
    .concurrency(2)
    .complete(async (name, { client, events }) => {
      const instance = instances.get(name);
      // Deleted: the garbage collector removes the bindings through their ownerReferences.
      if (!instance || instance.metadata.deletionTimestamp) return undefined;
      const uid = instance.metadata.uid!;
      const generation = instance.metadata.generation ?? 0;
      const template = templates.get(instance.spec.scopeTemplateName);

      let problem: Omit<Condition, 'lastTransitionTime'> | undefined;
      const failures: Failure[] = [];
      const desired: Binding[] = [];
      const targets: string[] = [];
      let clusterWide = false;
      const listed = instance.spec.namespaces ?? [];
      const selector = instance.spec.namespaceSelector;
      const compiled = isEmptySelector(selector) ? undefined : compileSelector(selector!);

      if (!template) {
        problem = {
          type: 'Ready',
          status: 'False',
          reason: 'TemplateNotFound',
          message: `ScopeTemplate ${instance.spec.scopeTemplateName} does not exist; create it or fix spec.scopeTemplateName`,
          observedGeneration: generation,
        };
      } else if (compiled && !compiled.ok) {
        problem = {
          type: 'Ready',
          status: 'False',
          reason: 'InvalidSelector',
          message: `spec.namespaceSelector is invalid: ${compiled.error}`,
          observedGeneration: generation,
        };
      } else {
        // Cluster-wide only when nothing limits the scope: a selector that matches nothing means nowhere.
        clusterWide = listed.length === 0 && !compiled;
        const wanted = new Set(listed);
        if (compiled?.ok)
          for (const ns of namespaces.list())
            if (compiled.matches(ns.metadata.labels)) wanted.add(ns.metadata.name!);
        for (const ns of [...wanted].sort()) {
          const object = namespaces.get(ns);
          if (!object)
            failures.push({
              namespace: ns,
              reason: 'NamespaceNotFound',
              message: `namespace ${ns} does not exist`,
            });
          else if (object.metadata.deletionTimestamp || object.status?.phase === 'Terminating') {
            failures.push({
              namespace: ns,
              reason: 'NamespaceTerminating',
              message: `namespace ${ns} is being deleted`,
            });
          } else targets.push(ns);
        }
        for (const role of template.spec.clusterRoles) {
          if (clusterWide) desired.push(desiredBinding(instance, template, role, undefined));
          else for (const ns of targets) desired.push(desiredBinding(instance, template, role, ns));
        }
      }

      // Create and update.
      const failedNamespaces = new Set<string>();
      let created = 0;
      let updated = 0;
      await mapLimit(desired, writeConcurrency, async (binding) => {
        const ns = binding.metadata.namespace;
        const type = ns ? Resources.roleBindings : Resources.clusterRoleBindings;
        const cache = ns ? roleBindings : clusterRoleBindings;
        try {
          const result = await ensureOwned({
            client,
            type,
            desired: binding,
            cached: cache.get(ns ? `${ns}/${binding.metadata.name}` : binding.metadata.name!),
            ownerUid: uid,
            upToDate: bindingUpToDate,
            fieldManager,
          });
          if (result.outcome === 'conflict') {
            failedNamespaces.add(ns ?? '');
            failures.push({ namespace: ns ?? '', reason: 'NameConflict', message: result.message });
          } else if (result.outcome === 'created') created++;
          else if (result.outcome === 'updated') updated++;
        } catch (err) {
          failedNamespaces.add(ns ?? '');
          failures.push({
            namespace: ns ?? '',
            reason: 'WriteFailed',
            message: err instanceof Error ? err.message : String(err),
          });
        }
      });

      // Prune what is no longer wanted, once its replacement is usable.
      const rolesReady = template
        ? template.spec.clusterRoles.every((r) =>
            roles.get(clusterRoleName(template.metadata.name!, r.generateName)),
          )
        : true;
      const desiredKeys = new Set(desired.map((b) => `${b.metadata.namespace ?? ''}/${b.metadata.name}`));
      const targetSet = new Set(targets);
      let deleted = 0;
      let pruneDeferred = false;
      const owned = [
        ...roleBindings.byIndex(ByOwner, uid),
        ...clusterRoleBindings.byIndex(ByOwner, uid),
      ].filter((b) => ownedBy(b, uid));
      await mapLimit(owned, writeConcurrency, async (binding) => {
        const ns = binding.metadata.namespace;
        if (desiredKeys.has(`${ns ?? ''}/${binding.metadata.name}`)) return;
        // Still-targeted scope whose replacement is not usable yet: keep the old access for now.
        const stillTargeted = ns ? targetSet.has(ns) : clusterWide;
        if (stillTargeted && (!rolesReady || failedNamespaces.has(ns ?? ''))) {
          pruneDeferred = true;
          return;
        }
        const type = ns ? Resources.roleBindings : Resources.clusterRoleBindings;
        if (
          await client.delete(type, binding.metadata.name!, ns, {
            preconditions: { uid: binding.metadata.uid! },
          })
        )
          deleted++;
      });

      if (created + updated + deleted > 0) {
        events.record(
          instance,
          'Normal',
          'BindingsSynced',
          'Reconcile',
          `bindings: ${created} created, ${updated} updated, ${deleted} deleted`,
        );
      }
      const conflicts = failures.filter((f) => f.reason === 'NameConflict' || f.reason === 'WriteFailed');
      if (conflicts.length > 0) {
        events.record(
          instance,
          'Warning',
          'BindingFailed',
          'Reconcile',
          `${conflicts.length} bindings failed, first: ${conflicts[0]!.message}`,
        );
      }

      const boundNamespaces = clusterWide ? 0 : targets.filter((ns) => !failedNamespaces.has(ns)).length;
      const ready: Omit<Condition, 'lastTransitionTime'> =
        problem ??
        (failures.length > 0
          ? {
              type: 'Ready',
              status: 'False',
              reason: 'PartiallyBound',
              message: `${failures.length} namespaces could not be bound; see status.failedNamespaces`,
              observedGeneration: generation,
            }
          : {
              type: 'Ready',
              status: 'True',
              reason: clusterWide ? 'BoundClusterWide' : 'Bound',
              message: clusterWide
                ? `${desired.length} ClusterRoleBindings in place`
                : `${desired.length} RoleBindings in ${boundNamespaces} namespaces`,
              observedGeneration: generation,
            });
      const status = {
        observedGeneration: generation,
        conditions: setCondition(instance.status?.conditions, ready),
        namespaceCount: boundNamespaces,
        bindingCount: desired.length - conflicts.length,
        failedNamespaces: failures.slice(0, maxReportedFailures),
      };
      if (statusChanged(instance.status, status)) {
        await client.apply(ScopeInstanceCrd.type, { metadata: { name }, status } as ScopeInstance, {
          fieldManager,
          force: true,
          subresource: 'status',
        });
      }
      // Write failures are retried with backoff; a deferred prune resumes when the role appears.
      if (failures.some((f) => f.reason === 'WriteFailed'))
        throw new Error('some bindings could not be written');
      return pruneDeferred ? { requeueAfterMs: 10_000 } : undefined;
    });
}
