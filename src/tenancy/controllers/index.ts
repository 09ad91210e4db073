// Tenancy's controllers, registered on a manager over the caches they share (the effective configuration
// and the directory of organizations and their namespaces).
import type { CapabilityContext } from '../../capability.ts';
import { configSource } from '../caches/config.ts';
import { directory } from '../caches/directory.ts';
import { registerNamespaceMetadataController } from './namespace-metadata.ts';
import { registerOrgRbacController } from './org-rbac.ts';
import { registerOrganizationController } from './organization.ts';
import { registerUsageProfileController } from './usage-profile.ts';

export function registerTenancyControllers({ manager, namespace }: CapabilityContext): void {
  const config = configSource(manager, namespace);
  const dir = directory(manager);
  registerOrgRbacController(manager, config, dir);
  registerOrganizationController(manager, config, dir);
  registerUsageProfileController(manager, config, dir);
  registerNamespaceMetadataController(manager, config, dir);
}
