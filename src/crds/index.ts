// Every CRD tenantkit owns. `npm run generate` writes them to config/crd/; a unit test fails when the
// checked-in YAML differs from what these definitions produce.
import { backupCrds } from './backup.ts';
import { ScopeInstanceCrd, ScopeTemplateCrd } from './scopes.ts';
import { OrganizationCrd, TenancyConfigCrd, TenantUserCrd, UsageProfileCrd } from './tenancy.ts';

export const allCrds = [
  ScopeTemplateCrd,
  ScopeInstanceCrd,
  OrganizationCrd,
  TenantUserCrd,
  TenancyConfigCrd,
  UsageProfileCrd,
  ...backupCrds,
];
