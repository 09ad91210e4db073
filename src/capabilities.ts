// The registry: the capabilities tenantkit runs, in the order their controllers and webhooks start. The
// contract they implement is capability.ts, beside this file; adding a capability means its folder and one
// line here. Every process may import this (the CLI looks commands up here, the console builds its
// allow-list from it), so each Capability object is declarations only and loads its parts when asked.
import { backup } from './backup/index.ts';
import type { Capability, Command, PolicyRule } from './capability.ts';
import { scopes } from './scopes/index.ts';
import { search } from './search/index.ts';
import { tenancy } from './tenancy/index.ts';

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

/** The command a capability adds under this name, if one does. */
export function capabilityCommand(name: string): Command | undefined {
  for (const c of capabilities) {
    const command = c.commands?.[name];
    if (command && Object.hasOwn(c.commands!, name)) return command;
  }
  return undefined;
}

export type { Capability, CapabilityContext, PolicyRule } from './capability.ts';
