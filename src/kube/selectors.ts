// Label selectors (metav1.LabelSelector) evaluated locally against cached objects, with the API
// server's semantics: all matchLabels and all matchExpressions must hold; an empty selector matches all.

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export type Matcher = (labels: Record<string, string> | undefined) => boolean;

const labelName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a label key (a Kubernetes qualified name: [prefix/]name), or undefined when it is one. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !dnsSubdomain.test(prefix)))
    return 'its prefix must be a DNS subdomain of at most 253 characters (lower case letters, digits, - and ., e.g. example.com)';
  if (name.length === 0 || name.length > 63 || !labelName.test(name))
    return "its name must be 1 to 63 characters: letters, digits, '-', '_' or '.', starting and ending with a letter or digit (e.g. app, my.name, 123-abc)";
  return undefined;
}

/** Why `value` is not a label value, or undefined when it is one (the empty value is one). */
export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63 || !labelName.test(value))
    return "it must be at most 63 characters: letters, digits, '-', '_' or '.', starting and ending with a letter or digit";
  return undefined;
}

/** The first key or value of `selector` that is not a valid label key or value, said as a status message. */
function invalidTerm(selector: LabelSelector): string | undefined {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) return `matchLabels key ${JSON.stringify(key)} is not a label key: ${keyProblem}`;
    const valueProblem = typeof value === 'string' ? labelValueProblem(value) : 'it must be a string';
    if (valueProblem)
      return `matchLabels value ${JSON.stringify(value)} (key ${key}) is not a label value: ${valueProblem}`;
  }
  for (const [i, e] of (selector.matchExpressions ?? []).entries()) {
    const keyProblem = typeof e.key === 'string' ? labelKeyProblem(e.key) : 'it must be a string';
    if (keyProblem)
      return `matchExpressions[${i}] key ${JSON.stringify(e.key)} is not a label key: ${keyProblem}`;
    for (const value of e.values ?? []) {
      const valueProblem = typeof value === 'string' ? labelValueProblem(value) : 'it must be a string';
      if (valueProblem)
        return `matchExpressions[${i}] (key ${e.key}) value ${JSON.stringify(value)} is not a label value: ${valueProblem}`;
    }
  }
  return undefined;
}

/**
 * Compiles a selector, or explains why it is invalid (the error text is meant for status messages): keys
 * and values are checked as the API server checks them for built-in objects, which it does not for
 * custom resources.
 */
export function compileSelector(
  selector: LabelSelector,
): { ok: true; matches: Matcher } | { ok: false; error: string } {
  const invalid = invalidTerm(selector);
  if (invalid) return { ok: false, error: invalid };
  const expressions = selector.matchExpressions ?? [];
  for (const [i, e] of expressions.entries()) {
    const values = e.values ?? [];
    if ((e.operator === 'In' || e.operator === 'NotIn') && values.length === 0) {
      return {
        ok: false,
        error: `matchExpressions[${i}] (key ${e.key}): operator ${e.operator} needs at least one value`,
      };
    }
    if ((e.operator === 'Exists' || e.operator === 'DoesNotExist') && values.length > 0) {
      return {
        ok: false,
        error: `matchExpressions[${i}] (key ${e.key}): operator ${e.operator} takes no values`,
      };
    }
    if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(e.operator)) {
      return {
        ok: false,
        error: `matchExpressions[${i}] (key ${e.key}): unknown operator ${String(e.operator)}`,
      };
    }
  }
  const required = Object.entries(selector.matchLabels ?? {});
  return {
    ok: true,
    matches: (labels = {}) =>
      required.every(([k, v]) => labels[k] === v) &&
      expressions.every((e) => {
        const has = Object.hasOwn(labels, e.key);
        switch (e.operator) {
          case 'In':
            return has && (e.values ?? []).includes(labels[e.key]!);
          case 'NotIn':
            return !has || !(e.values ?? []).includes(labels[e.key]!);
          case 'Exists':
            return has;
          case 'DoesNotExist':
            return !has;
        }
        return false;
      }),
  };
}

export function isEmptySelector(selector: LabelSelector | undefined): boolean {
  return (
    !selector ||
    (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0)
  );
}

/** The anchor of a selector that no cached object can narrow: every object must be checked. */
export const AnyLabels = '*';

/**
 * `key=value` pairs of which every object the selector matches has at least one: its first matchLabels
 * pair, or else the values of an `In` expression; [AnyLabels] when it names none (only NotIn, Exists,
 * DoesNotExist). An index of objects by label then yields the candidates, instead of a scan of all.
 */
export function selectorAnchors(selector: LabelSelector): string[] {
  const [first] = Object.entries(selector.matchLabels ?? {});
  if (first) return [`${first[0]}=${first[1]}`];
  const within = (selector.matchExpressions ?? []).find((e) => e.operator === 'In');
  if (within) return (within.values ?? []).map((v) => `${within.key}=${v}`);
  return [AnyLabels];
}
