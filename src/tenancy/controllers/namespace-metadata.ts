// The labels and annotations an organization's guardrails require (Pod Security Admission's level, a
// cost centre) on every namespace it owns: the namespace policy fills them in on create and refuses a
// tenant's change to them; this controller puts them on namespaces that were there before the admin set
// them, that moved into the organization, or whose policy was switched off for a while. It writes only
// the required keys (server-side apply under its own field manager) and only when one differs.
import { type Organization, OrganizationCrd, TenancyConfigCrd } from '../../crds/tenancy.ts';
import { isInvalid } from '../../kube/client.ts';
import type { ReconcileContext, ReconcileResult } from '../../kube/controller.ts';
import { generationChanged, ReconcilerOf } from '../../kube/controller.ts';
import type { Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { type ConfigSource, type Directory, isTerminating } from '../model.ts';
import { reservedFor } from '../policy/config.ts';
import { guardrailsOf, missingMetadata, type OrganizationGuardrails } from '../policy/guardrails.ts';

const fieldManager = 'tenantkit-guardrails';

interface Sources {
  organizations: Informer<Organization>;
  directory: Directory;
  config: ConfigSource;
}

export function registerNamespaceMetadataController(
  manager: Manager,
  config: ConfigSource,
  directory: Directory,
): void {
  const organizations = manager.informer<Organization>(OrganizationCrd.type);
  const namespacesOf = (org: KubeObject) =>
    directory.organizationNamespaces(org.metadata.name!, config().organizationLabel);
  manager
    .controller('namespace-metadata')
    .for(Resources.namespaces)
    .watches(OrganizationCrd.type, namespacesOf, { predicate: generationChanged })
    // The defaults of every organization live in the TenancyConfig.
    .watches(TenancyConfigCrd.type, () => directory.namespaces.list().map((n) => n.metadata.name!), {
      predicate: generationChanged,
    })
    .complete(new NamespaceMetadataReconciler({ organizations, directory, config }));
}

/** One namespace: the labels and annotations its organization's guardrails require, where one is missing. */
export class NamespaceMetadataReconciler extends ReconcilerOf<Sources> {
  override async reconcile(name: string, ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const config = this.from.config();
    if (config.disabledPolicies.includes('guardrails')) return undefined;
    const ns = this.from.directory.namespace(name);
    const organization = ns?.metadata.labels?.[config.organizationLabel];
    if (!ns || !organization || isTerminating(ns) || reservedFor(config, ns)) return undefined;
    const g = guardrailsOf(config, organization, this.from.organizations.get(organization));
    const missing = missingMetadata(g, ns);
    if (!missing) return undefined;
    const keys = [
      ...Object.entries(missing.labels).map(([k, v]) => `label ${k}=${v}`),
      ...Object.entries(missing.annotations).map(([k, v]) => `annotation ${k}=${v}`),
    ].join(', ');
    await this.applyRequired(ctx, ns, organization, g, keys);
    return undefined;
  }

  /**
   * Writes every required key (server-side apply, under its own field manager), with an Event; a value
   * the API server refuses (not a valid label value, say) waits for the admin's fix, with a warning.
   */
  private async applyRequired(
    ctx: ReconcileContext,
    ns: KubeObject,
    organization: string,
    g: OrganizationGuardrails,
    keys: string,
  ): Promise<void> {
    try {
      await ctx.client.apply(
        Resources.namespaces,
        {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: {
            name: ns.metadata.name,
            labels: { ...g.rules.namespaceLabels },
            annotations: { ...g.rules.namespaceAnnotations },
          },
        },
        { fieldManager, force: true },
      );
    } catch (err) {
      if (!isInvalid(err)) throw err;
      ctx.events.record(
        ns,
        'Warning',
        'GuardrailsNotApplied',
        'Reconcile',
        `organization "${organization}" requires ${keys} here, which the API server refuses: ${(err as Error).message}; a cluster admin corrects the organization's guardrails`,
      );
      return;
    }
    ctx.events.record(
      ns,
      'Normal',
      'GuardrailsApplied',
      'Reconcile',
      `set ${keys}, as organization "${organization}" requires`,
    );
  }
}
