// List rights in a canonical form, so that equal rights always give equal grants (and digests) however
// the roles that produce them are written. Rights map each (apiGroup, resource) pair, either of which may
// be '*', to the names it is limited to (null: every name). The canonical form drops what a wider pair
// already grants: (g, r) loses the names that (*, r), (g, *) or (*, *) grant, and (*, r) and (g, *) lose
// those of (*, *). Two rights maps allow the same requests exactly when their canonical forms are equal.
import type { ResourceGrant } from '../model.ts';
import type { RbacRule } from './rbac.ts';

/** Names a pair is limited to; null means every name. */
export type Names = ReadonlySet<string> | null;
export type Rights = Map<string, Names>;

const sep = '\u0000';
const pairKey = (group: string, resource: string) => `${group}${sep}${resource}`;
const splitKey = (key: string): [string, string] => {
  const i = key.indexOf(sep);
  return [key.slice(0, i), key.slice(i + 1)];
};

function mergeNames(a: Names | undefined, b: Names): Names {
  if (a === undefined) return b;
  if (a === null || b === null) return null;
  return new Set([...a, ...b]);
}

function addPair(rights: Rights, group: string, resource: string, names: Names): void {
  const key = pairKey(group, resource);
  rights.set(key, mergeNames(rights.get(key), names));
}

/**
 * Adds what `rule` grants for `list`. Rules for subresources (`pods/log`, `*\/scale`) never allow listing
 * the resource itself, so they add nothing. With resourceNames only those names may be listed (kube-apiserver
 * takes the name from a `metadata.name` field selector); a name '' matches a list without a selector, which
 * returns every object, so such a rule grants every name.
 */
export function addRuleRights(rights: Rights, rule: RbacRule): void {
  if (!rule.verbs.some((v) => v === 'list' || v === '*')) return;
  const listed = rule.resourceNames ?? [];
  const names: Names = listed.length === 0 || listed.includes('') ? null : new Set(listed);
  for (const group of rule.apiGroups ?? []) {
    for (const resource of rule.resources ?? []) {
      if (resource.includes('/')) continue;
      addPair(rights, group, resource, names);
    }
  }
}

export function rightsOfRules(rules: readonly RbacRule[]): Rights {
  const rights: Rights = new Map();
  for (const rule of rules) addRuleRights(rights, rule);
  return rights;
}

export function mergeRights(into: Rights, from: Rights): Rights {
  for (const [key, names] of from) into.set(key, mergeNames(into.get(key), names));
  return into;
}

/** Pairs whose grants also cover (group, resource), the pair itself included. */
function coveringKeys(group: string, resource: string): string[] {
  const keys = [pairKey(group, resource)];
  if (group !== '*') keys.push(pairKey('*', resource));
  if (resource !== '*') keys.push(pairKey(group, '*'));
  if (group !== '*' && resource !== '*') keys.push(pairKey('*', '*'));
  return keys;
}

/** The names `from` grants for `key` through any pair covering it (`self`: include `key` itself). */
function coveredNames(from: Rights, key: string, self: boolean): Names | undefined {
  const [group, resource] = splitKey(key);
  let out: Names | undefined;
  for (const k of coveringKeys(group, resource)) {
    if (!self && k === key) continue;
    const names = from.get(k);
    if (names !== undefined) out = mergeNames(out, names);
    if (out === null) return null;
  }
  return out;
}

const isWildcard = (key: string) => key.startsWith(`*${sep}`) || key.endsWith(`${sep}*`);

/** `rights` without what `cover` already grants; `self` also drops pairs `cover` holds exactly. */
function subtract(rights: Rights, cover: Rights, self: boolean): Rights {
  // Most roles name concrete pairs only; then a pair is covered by the same pair alone.
  let wildcards = false;
  for (const key of cover.keys()) {
    if (isWildcard(key)) {
      wildcards = true;
      break;
    }
  }
  if (!wildcards && !self) return new Map(rights);
  const out: Rights = new Map();
  for (const [key, names] of rights) {
    const covered = wildcards ? coveredNames(cover, key, self) : cover.get(key);
    if (covered === null) continue;
    if (covered === undefined || names === null) {
      out.set(key, names);
      continue;
    }
    const left = [...names].filter((n) => !covered.has(n));
    if (left.length > 0) out.set(key, new Set(left));
  }
  return out;
}

/** The canonical form of `rights`. */
export function canonicalRights(rights: Rights): Rights {
  return subtract(rights, rights, false);
}

/** The canonical rights of `extra` given that `base` (canonical) holds too: only what `base` lacks. */
export function rightsBeyond(extra: Rights, base: Rights): Rights {
  const total = canonicalRights(mergeRights(new Map(base), extra));
  return subtract(total, base, true);
}

/** Whether `rights` allow listing `name` (or, without a name, every object) of group/resource. */
export function rightsAllow(rights: Rights, group: string, resource: string, name?: string): boolean {
  for (const key of coveringKeys(group, resource)) {
    const names = rights.get(key);
    if (names === null) return true;
    if (names && name !== undefined && names.has(name)) return true;
  }
  return false;
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Canonical rights as few grants: unrestricted pairs grouped by API group, name-restricted ones by API
 * group and name list. The order is fixed, so equal rights serialise identically.
 */
export function rightsToGrants(rights: Rights): ResourceGrant[] {
  const groups = new Map<string, { apiGroup: string; names?: string[]; resources: string[] }>();
  for (const [key, names] of rights) {
    const [apiGroup, resource] = splitKey(key);
    const sortedNames = names === null ? undefined : [...names].sort(byText);
    // Group names and object names cannot contain NUL, so this identifies (group, names) exactly.
    const id = sortedNames ? `${apiGroup}${sep}${sortedNames.join(sep)}` : apiGroup;
    let entry = groups.get(id);
    if (!entry) {
      entry = { apiGroup, resources: [], ...(sortedNames ? { names: sortedNames } : {}) };
      groups.set(id, entry);
    }
    entry.resources.push(resource);
  }
  const grants = [...groups.values()].map(
    (e): ResourceGrant => ({
      apiGroups: [e.apiGroup],
      resources: e.resources.sort(byText),
      ...(e.names ? { names: e.names } : {}),
    }),
  );
  return grants
    .map((g) => ({ g, text: JSON.stringify(g) }))
    .sort((a, b) => byText(a.text, b.text))
    .map((x) => x.g);
}

export function grantsToRights(grants: readonly ResourceGrant[]): Rights {
  const rights: Rights = new Map();
  for (const grant of grants) {
    const names: Names = grant.names ? new Set(grant.names) : null;
    for (const group of grant.apiGroups)
      for (const resource of grant.resources) addPair(rights, group, resource, names);
  }
  return rights;
}

/** Pairs (as `group/resource`) whose names differ between two rights maps, for reports. */
export function rightsDifferences(
  a: Rights,
  b: Rights,
): { apiGroup: string; resource: string; a: string[] | 'all' | 'none'; b: string[] | 'all' | 'none' }[] {
  const show = (n: Names | undefined): string[] | 'all' | 'none' =>
    n === undefined ? 'none' : n === null ? 'all' : [...n].sort(byText);
  const out = [];
  for (const key of [...new Set([...a.keys(), ...b.keys()])].sort(byText)) {
    const x = show(a.get(key));
    const y = show(b.get(key));
    if (JSON.stringify(x) === JSON.stringify(y)) continue;
    const [apiGroup, resource] = splitKey(key);
    out.push({ apiGroup, resource, a: x, b: y });
  }
  return out;
}
