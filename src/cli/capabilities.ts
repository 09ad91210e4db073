// The capabilities tenantkit runs. Each capability folder exposes one entry point (the contract is
// ../capability.ts); the runtime (src/kube, src/webhook) never imports them, only the CLI wires them here.

import { backup } from '../backup/index.ts';
import type { Capability, PolicyRule } from '../capability.ts';
import { scopes } from '../scopes/index.ts';
import { search } from '../search/index.ts';
import { tenancy } from '../tenancy/index.ts';

export const capabilities: Capability[] = [scopes, tenancy, search, backup];

/** What every controllers process needs whatever capabilities it runs (leases are granted by a Role). */
export const baseControllerRules: PolicyRule[] = [
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];

/** The capabilities named in a comma-separated list (all when the list is empty or absent). */
export function selectCapabilities(list: string | undefined): Capability[] {
  const names = (list ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  if (names.length === 0) return capabilities;
  const unknown = names.filter((n) => !capabilities.some((c) => c.name === n));
  if (unknown.length > 0) {
    throw new Error(
      `unknown capabilities: ${unknown.join(', ')}; known: ${capabilities.map((c) => c.name).join(', ')}`,
    );
  }
  return capabilities.filter((c) => names.includes(c.name));
}

export type { Capability, CapabilityContext, PolicyRule } from '../capability.ts';
