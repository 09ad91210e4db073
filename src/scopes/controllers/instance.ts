// ScopeInstance controller: one RoleBinding per target namespace and template role, or one
// ClusterRoleBinding per role when the instance names no namespaces and no selector.
// Order matters for access continuity: create and update first; prune stale bindings only where the
// new ones are in place and their ClusterRoles exist, so a subject never loses access it keeps.
// Namespace names are reused, so a listed namespace is bound only while its UID is the one pinned for
// the admitted spec (see pinNamespaces): a namespace deleted and re-created by someone else is not.
import { isDeepStrictEqual } from 'node:util';
import {
  type ScopeInstance,
  ScopeInstanceCrd,
  type ScopeTemplate,
  ScopeTemplateCrd,
} from '../../crds/scopes.ts';
import { mapLimit } from '../../kube/access.ts';
import type { ConditionInput } from '../../kube/conditions.ts';
import { type ReconcileContext, type ReconcileResult, ReconcilerOf } from '../../kube/controller.ts';
import { ensureOwned } from '../../kube/ensure.ts';
import { ByLabel, ByNamespace, ByOwner, type Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { Resources } from '../../kube/resources.ts';
import {
  AnyLabels,
  compileSelector,
  isEmptySelector,
  type LabelSelector,
  selectorAnchors,
} from '../../kube/selectors.ts';
import { StatusWriter } from '../../kube/status.ts';
import {
  type Binding,
  type ClusterRole,
  fieldManager,
  type Namespace,
  templateAnnotation,
} from '../model.ts';
import { bindingUpToDate, desiredBinding, ownedBy } from '../policy/desired.ts';
import { clusterRoleName } from '../policy/names.ts';
import {
  ByListedNamespace,
  BySelectorAnchor,
  ByTemplate,
  IndexFunctions,
  scopedClusterRoleBindings,
  scopedClusterRoles,
  scopedRoleBindings,
} from './caches.ts';

export interface Failure {
  namespace: string;
  reason: string;
  message: string;
}

/** Writes in flight per reconcile: enough to bind 1,000 namespaces in seconds, gentle on the API server. */
const writeConcurrency = 16;
const maxReportedFailures = 100;

/** What the instance controller reads, wired by registerInstanceController. */
export interface InstanceSources {
  instances: Informer<ScopeInstance>;
  templates: Informer<ScopeTemplate>;
  namespaces: Informer<Namespace>;
  roles: Informer<ClusterRole>;
  roleBindings: Informer<Binding>;
  clusterRoleBindings: Informer<Binding>;
}

/** The bindings an instance wants, where, and what stands in the way. */
export interface Plan {
  /** Why nothing can be bound (the Ready condition), if anything. */
  problem?: Omit<ConditionInput, 'observedGeneration'>;
  desired: Binding[];
  /** Namespaces that exist and are not being deleted (none when cluster-wide). */
  targets: string[];
  clusterWide: boolean;
  failures: Failure[];
  /** The listed namespaces' UIDs this spec generation is bound to (written to the status). */
  pins: NamespacePin[];
}

export interface NamespacePin {
  namespace: string;
  uid: string;
}

/** What the writes did. */
interface Outcome {
  created: number;
  updated: number;
  deleted: number;
  /** Namespaces whose bindings could not be written. */
  failed: Set<string>;
  pruneDeferred: boolean;
}

export function registerInstanceController(manager: Manager): void {
  const instances = manager.informer<ScopeInstance>(ScopeInstanceCrd.type);
  instances.addIndex(ByTemplate, IndexFunctions.template);
  instances.addIndex(ByListedNamespace, IndexFunctions.listedNamespace);
  instances.addIndex(BySelectorAnchor, IndexFunctions.selectorAnchor);
  const reconciler = new InstanceReconciler({
    instances,
    templates: manager.informer<ScopeTemplate>(ScopeTemplateCrd.type),
    namespaces: manager.informer<Namespace>(Resources.namespaces),
    roles: manager.informer<ClusterRole>(scopedClusterRoles),
    roleBindings: manager.informer<Binding>(scopedRoleBindings),
    clusterRoleBindings: manager.informer<Binding>(scopedClusterRoleBindings),
  });
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
    // A namespace's change concerns the instances that list it, those whose selector matches it now
    // (found through their anchors, not by trying all), and those holding a binding in it (to unbind).
    .watches(Resources.namespaces, (ns) => reconciler.concerning(ns as Namespace), {
      predicate: (previous, current) =>
        !previous ||
        !isDeepStrictEqual(previous.metadata.labels, current.metadata.labels) ||
        previous.metadata.deletionTimestamp !== current.metadata.deletionTimestamp ||
        (previous as Namespace).status?.phase !== (current as Namespace).status?.phase,
    })
    .concurrency(2)
    .complete(reconciler);

  // The fast path for a new or relabelled namespace: its bindings are written by a queue of their own,
  // without waiting for whole-instance reconciles (status, pruning) of large instances ahead of it.
  manager
    .controller('scopeinstance-namespace')
    .for(Resources.namespaces, (previous, current) => {
      const ns = current as Namespace;
      return (
        (!previous || !isDeepStrictEqual(previous.metadata.labels, ns.metadata.labels)) &&
        !ns.metadata.deletionTimestamp
      );
    })
    .concurrency(2)
    .complete(new NamespaceBindingsReconciler(reconciler));
}

/**
 * Keys are namespace names: every concerned instance's bindings in that namespace are created or updated
 * (nothing is deleted here: pruning, with its access-continuity rules, and the status stay with the
 * instance's own reconcile, which the new bindings' events queue).
 */
export class NamespaceBindingsReconciler extends ReconcilerOf<InstanceReconciler> {
  override async reconcile(namespace: string, ctx: ReconcileContext): Promise<undefined> {
    const instances = this.from;
    const ns = instances.namespace(namespace);
    if (!ns || ns.metadata.deletionTimestamp) return undefined;
    for (const name of instances.concerning(ns)) await instances.bindIn(ctx, name, namespace);
    return undefined;
  }
}

export class InstanceReconciler extends ReconcilerOf<InstanceSources> {
  /** Names of the instances a namespace's change concerns (see registerInstanceController). */
  concerning(ns: Namespace): string[] {
    const name = ns.metadata.name!;
    const labels = ns.metadata.labels ?? {};
    const anchors = [AnyLabels, ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)];
    const selecting = anchors
      .flatMap((a) => this.from.instances.byIndex(BySelectorAnchor, a))
      .filter((i) => {
        const compiled = compileSelector(i.spec.namespaceSelector ?? {});
        return compiled.ok && compiled.matches(labels);
      });
    const binding = this.from.roleBindings
      .byIndex(ByNamespace, name)
      .flatMap((b) => b.metadata.ownerReferences ?? [])
      .filter((r) => r.kind === 'ScopeInstance')
      .map((r) => r.name);
    return [
      ...new Set([
        ...this.from.instances.byIndex(ByListedNamespace, name).map((i) => i.metadata.name!),
        ...selecting.map((i) => i.metadata.name!),
        ...binding,
      ]),
    ];
  }

  namespace(name: string): Namespace | undefined {
    return this.from.namespaces.get(name);
  }

  /** Writes the bindings `name` wants in `namespace` (the same plan as a whole reconcile, cut to it). */
  async bindIn(ctx: ReconcileContext, name: string, namespace: string): Promise<void> {
    const instance = this.from.instances.get(name);
    if (!instance || instance.metadata.deletionTimestamp) return;
    // Each namespace is judged on its own, so the plan over this one namespace (and the listed ones) is
    // the whole plan cut to it, without matching every namespace the selector may reach.
    const only = this.from.namespaces.get(namespace);
    const plan = planBindings(
      instance,
      this.from.templates.get(instance.spec.scopeTemplateName),
      (ns) => this.from.namespaces.get(ns),
      () => (only && instance.spec.namespaceSelector ? [only] : []),
    );
    const desired = plan.desired.filter((b) => b.metadata.namespace === namespace);
    if (desired.length > 0) await this.apply(ctx, instance, { ...plan, desired, failures: [] });
  }

  private plan(instance: ScopeInstance, template: ScopeTemplate | undefined): Plan {
    return planBindings(
      instance,
      template,
      (ns) => this.from.namespaces.get(ns),
      () => this.candidates(instance),
    );
  }

  /** The namespaces an instance's selector may match: those with one of its anchors (all, when none). */
  private candidates(instance: ScopeInstance): Namespace[] {
    const selector = instance.spec.namespaceSelector;
    if (!selector) return [];
    const anchors = selectorAnchors(selector);
    if (anchors.includes(AnyLabels)) return this.from.namespaces.list();
    return [...new Set(anchors.flatMap((a) => this.from.namespaces.byIndex(ByLabel, a)))];
  }

  override async reconcile(name: string, ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const instance = this.from.instances.get(name);
    // Deleted: the garbage collector removes the bindings through their ownerReferences.
    if (!instance || instance.metadata.deletionTimestamp) return undefined;
    const template = this.from.templates.get(instance.spec.scopeTemplateName);
    const plan = this.plan(instance, template);
    const outcome = await this.apply(ctx, instance, plan);
    await this.prune(ctx, instance, template, plan, outcome);
    await this.report(ctx, instance, plan, outcome);
    // Write failures are retried with backoff; a deferred prune resumes when the role appears.
    if (plan.failures.some((f) => f.reason === 'WriteFailed'))
      throw new Error('some bindings could not be written');
    return outcome.pruneDeferred ? { requeueAfterMs: 10_000 } : undefined;
  }

  /** Creates and updates the wanted bindings (a name conflict or a failed write is recorded, not thrown). */
  private async apply({ client }: ReconcileContext, instance: ScopeInstance, plan: Plan): Promise<Outcome> {
    const outcome: Outcome = { created: 0, updated: 0, deleted: 0, failed: new Set(), pruneDeferred: false };
    await mapLimit(plan.desired, writeConcurrency, async (binding) => {
      const ns = binding.metadata.namespace;
      const type = ns ? Resources.roleBindings : Resources.clusterRoleBindings;
      const cache = ns ? this.from.roleBindings : this.from.clusterRoleBindings;
      try {
        const result = await ensureOwned({
          client,
          type,
          desired: binding,
          cached: cache.get(ns ? `${ns}/${binding.metadata.name}` : binding.metadata.name!),
          ownerUid: instance.metadata.uid!,
          upToDate: bindingUpToDate,
          fieldManager,
        });
        if (result.outcome === 'conflict') {
          outcome.failed.add(ns ?? '');
          plan.failures.push({ namespace: ns ?? '', reason: 'NameConflict', message: result.message });
        } else if (result.outcome === 'created') outcome.created++;
        else if (result.outcome === 'updated') outcome.updated++;
      } catch (err) {
        outcome.failed.add(ns ?? '');
        plan.failures.push({
          namespace: ns ?? '',
          reason: 'WriteFailed',
          message: err instanceof Error ? err.message : String(err),
        });
      }
    });
    return outcome;
  }

  /** Prunes what is no longer wanted, once its replacement is usable (access continuity). */
  private async prune(
    { client }: ReconcileContext,
    instance: ScopeInstance,
    template: ScopeTemplate | undefined,
    plan: Plan,
    outcome: Outcome,
  ): Promise<void> {
    const uid = instance.metadata.uid!;
    const rolesReady = template
      ? template.spec.clusterRoles.every((r) =>
          this.from.roles.get(clusterRoleName(template.metadata.name!, r.generateName)),
        )
      : true;
    const desiredKeys = new Set(plan.desired.map((b) => `${b.metadata.namespace ?? ''}/${b.metadata.name}`));
    const targetSet = new Set(plan.targets);
    const owned = [
      ...this.from.roleBindings.byIndex(ByOwner, uid),
      ...this.from.clusterRoleBindings.byIndex(ByOwner, uid),
    ].filter((b) => ownedBy(b, uid));
    await mapLimit(owned, writeConcurrency, async (binding) => {
      const ns = binding.metadata.namespace;
      if (desiredKeys.has(`${ns ?? ''}/${binding.metadata.name}`)) return;
      // Still-targeted scope whose replacement is not usable yet: keep the old access for now.
      const stillTargeted = ns ? targetSet.has(ns) : plan.clusterWide;
      if (stillTargeted && (!rolesReady || outcome.failed.has(ns ?? ''))) {
        outcome.pruneDeferred = true;
        return;
      }
      const type = ns ? Resources.roleBindings : Resources.clusterRoleBindings;
      const preconditions = { uid: binding.metadata.uid! };
      if (await client.delete(type, binding.metadata.name!, ns, { preconditions })) outcome.deleted++;
    });
  }

  /** Events for what changed or failed, and the status: Ready, counts and the failed namespaces. */
  private async report(
    ctx: ReconcileContext,
    instance: ScopeInstance,
    plan: Plan,
    outcome: Outcome,
  ): Promise<void> {
    const status = new StatusWriter<NonNullable<ScopeInstance['status']>>(
      ctx,
      ScopeInstanceCrd.type,
      instance,
    );
    const { created, updated, deleted } = outcome;
    if (created + updated + deleted > 0) {
      status.event({
        type: 'Normal',
        reason: 'BindingsSynced',
        action: 'Reconcile',
        message: `bindings: ${created} created, ${updated} updated, ${deleted} deleted`,
      });
    }
    const replaced = plan.failures.filter((f) => f.reason === 'NamespaceReplaced');
    if (replaced.length > 0) {
      status.event({
        type: 'Warning',
        reason: 'NamespaceReplaced',
        action: 'Reconcile',
        message: `${replaced.length} namespaces not bound, first: ${replaced[0]!.message}`,
      });
    }
    const conflicts = plan.failures.filter((f) => f.reason === 'NameConflict' || f.reason === 'WriteFailed');
    if (conflicts.length > 0) {
      status.event({
        type: 'Warning',
        reason: 'BindingFailed',
        action: 'Reconcile',
        message: `${conflicts.length} bindings failed, first: ${conflicts[0]!.message}`,
      });
    }
    const bound = plan.clusterWide ? 0 : plan.targets.filter((ns) => !outcome.failed.has(ns)).length;
    await status.write({
      observedGeneration: instance.metadata.generation ?? 0,
      conditions: status.condition(status.current, readyCondition(plan, bound)),
      namespaceCount: bound,
      bindingCount: plan.desired.length - conflicts.length,
      boundNamespaceUIDs: plan.pins,
      boundNamespaceUIDsGeneration: instance.metadata.generation ?? 0,
      failedNamespaces: plan.failures.slice(0, maxReportedFailures),
    });
  }
}

/**
 * The bindings `instance` wants: one per template role and target namespace, or one ClusterRoleBinding per
 * role when nothing limits the scope (a selector that matches nothing means nowhere). Pure.
 */
export function planBindings(
  instance: ScopeInstance,
  template: ScopeTemplate | undefined,
  namespace: (name: string) => Namespace | undefined,
  allNamespaces: () => Namespace[],
): Plan {
  const listed = instance.spec.namespaces ?? [];
  // Pinned first, so an early return (no template yet) keeps the pins of this generation.
  const pins = pinNamespaces(instance, listed, namespace);
  const plan: Plan = {
    desired: [],
    targets: [],
    clusterWide: false,
    failures: [],
    pins: [...pins].map(([ns, uid]) => ({ namespace: ns, uid })).sort(byNamespace),
  };
  const selector: LabelSelector | undefined = instance.spec.namespaceSelector;
  const compiled = isEmptySelector(selector) ? undefined : compileSelector(selector!);
  if (!template) {
    plan.problem = {
      type: 'Ready',
      status: 'False',
      reason: 'TemplateNotFound',
      message: `ScopeTemplate ${instance.spec.scopeTemplateName} does not exist; create it or fix spec.scopeTemplateName`,
    };
    return plan;
  }
  if (compiled && !compiled.ok) {
    plan.problem = {
      type: 'Ready',
      status: 'False',
      reason: 'InvalidSelector',
      message: `spec.namespaceSelector is invalid: ${compiled.error}`,
    };
    return plan;
  }
  plan.clusterWide = listed.length === 0 && !compiled;
  const wanted = new Set(listed);
  // A namespace the selector matches was admitted by a cluster-wide check, so its UID does not matter.
  const selected = new Set<string>();
  if (compiled?.ok)
    for (const ns of allNamespaces())
      if (compiled.matches(ns.metadata.labels)) {
        wanted.add(ns.metadata.name!);
        selected.add(ns.metadata.name!);
      }
  for (const ns of [...wanted].sort()) {
    const object = namespace(ns);
    const pinned = pins.get(ns);
    if (!object)
      plan.failures.push({
        namespace: ns,
        reason: 'NamespaceNotFound',
        message: `namespace ${ns} does not exist`,
      });
    else if (object.metadata.deletionTimestamp || object.status?.phase === 'Terminating') {
      plan.failures.push({
        namespace: ns,
        reason: 'NamespaceTerminating',
        message: `namespace ${ns} is being deleted`,
      });
    } else if (!selected.has(ns) && pinned !== undefined && pinned !== object.metadata.uid) {
      plan.failures.push({
        namespace: ns,
        reason: 'NamespaceReplaced',
        message: `namespace ${ns} was deleted and re-created (UID ${object.metadata.uid}, this instance was admitted for UID ${pinned}), so it is not bound: the new namespace may belong to someone else. To bind it, have someone entitled in the new namespace change the spec so it is checked again (e.g. kubectl replace --force -f the instance, or edit spec.namespaces)`,
      });
    } else plan.targets.push(ns);
  }
  for (const role of template.spec.clusterRoles) {
    if (plan.clusterWide) plan.desired.push(desiredBinding(instance, template, role, undefined));
    else for (const ns of plan.targets) plan.desired.push(desiredBinding(instance, template, role, ns));
  }
  return plan;
}

const byNamespace = (a: NamespacePin, b: NamespacePin) => a.namespace.localeCompare(b.namespace);

/**
 * The UID each listed namespace must have to be bound. The escalation guard checks the requester's rights
 * in the namespaces as they are at admission, by name; what it vouched for is those namespaces, not any
 * later namespace of the same name. The webhook cannot write the status and a tenant may write the
 * instance's annotations, so the controller records the UIDs, in the status, on the first reconcile of each
 * spec generation (the guard checks every listed namespace again on each spec change, so a new
 * generation means a fresh check and fresh UIDs). Later reconciles of the same generation keep the pins;
 * a listed namespace first seen later is pinned then: the guard can only have admitted a namespace that did
 * not exist for someone entitled cluster-wide (RBAC has no bindings in a missing namespace). The remaining
 * gap is a namespace replaced between admission and that first reconcile (milliseconds while the
 * controller runs). Pure.
 */
export function pinNamespaces(
  instance: ScopeInstance,
  listed: string[],
  namespace: (name: string) => Namespace | undefined,
): Map<string, string> {
  const status = instance.status;
  const sameGeneration =
    status?.boundNamespaceUIDsGeneration !== undefined &&
    status.boundNamespaceUIDsGeneration === (instance.metadata.generation ?? 0);
  const recorded = new Map(
    sameGeneration ? (status?.boundNamespaceUIDs ?? []).map((p) => [p.namespace, p.uid] as const) : [],
  );
  const pins = new Map<string, string>();
  for (const ns of listed) {
    const uid = recorded.get(ns) ?? namespace(ns)?.metadata.uid;
    if (uid) pins.set(ns, uid);
  }
  return pins;
}

/** Ready: the plan's problem, some namespaces not bound, or all in place. */
function readyCondition(plan: Plan, bound: number): Omit<ConditionInput, 'observedGeneration'> {
  if (plan.problem) return plan.problem;
  const replaced = plan.failures.filter((f) => f.reason === 'NamespaceReplaced');
  if (replaced.length > 0) {
    return {
      type: 'Ready',
      status: 'False',
      reason: 'NamespaceReplaced',
      message: `${replaced.length} listed namespaces were deleted and re-created since this instance was admitted and are not bound (first: ${replaced[0]!.message}); see status.failedNamespaces`,
    };
  }
  if (plan.failures.length > 0) {
    return {
      type: 'Ready',
      status: 'False',
      reason: 'PartiallyBound',
      message: `${plan.failures.length} namespaces could not be bound; see status.failedNamespaces`,
    };
  }
  return {
    type: 'Ready',
    status: 'True',
    reason: plan.clusterWide ? 'BoundClusterWide' : 'Bound',
    message: plan.clusterWide
      ? `${plan.desired.length} ClusterRoleBindings in place`
      : `${plan.desired.length} RoleBindings in ${bound} namespaces`,
  };
}
