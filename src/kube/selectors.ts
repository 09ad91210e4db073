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

/** Compiles a selector, or explains why it is invalid (the error text is meant for status messages). */
export function compileSelector(
  selector: LabelSelector,
): { ok: true; matches: Matcher } | { ok: false; error: string } {
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
