// How many namespaces an organization may own (the namespace policy holds it to it through the quota
// ledger; the organization reconciler reports it).
import type { Organization } from '../../crds/tenancy.ts';
import type { Directory, EffectiveConfig } from '../model.ts';

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
