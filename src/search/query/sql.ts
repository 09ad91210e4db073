// Building blocks for the SQL the query engine writes. Every value a user sends travels as a bind
// parameter; the only text spliced into SQL is the engine's own.

/** Collects bind parameters and hands out their placeholders. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
  /** A text[] parameter. */
  list(values: readonly string[]): string {
    return `${this.add(values)}::text[]`;
  }
}

/**
 * Where the properties the engine filters on live in the row being tested: the generated columns of
 * `search.resources`, or expressions over a JSON document (watch events have no such columns).
 */
export interface Columns {
  cluster: string;
  data: string;
  /** lower(kind) */
  kind: string;
  namespace: string;
  name: string;
  /** `<apigroup>/<kind_plural>`, '' for the core group. */
  gr: string;
}

export const resourceColumns = (alias = 'r'): Columns => ({
  cluster: `${alias}.cluster`,
  data: `${alias}.data`,
  kind: `${alias}._kind`,
  namespace: `${alias}._ns`,
  name: `${alias}._name`,
  gr: `${alias}._gr`,
});

/** The same properties computed from a data document and a cluster expression. */
export const documentColumns = (data: string, cluster: string): Columns => ({
  cluster,
  data,
  kind: `lower(${data}->>'kind')`,
  namespace: `(${data}->>'namespace')`,
  name: `(${data}->>'name')`,
  gr: `(coalesce(${data}->>'apigroup', '') || '/' || coalesce(${data}->>'kind_plural', ''))`,
});

/** `value` escaped for LIKE, so it matches itself only. */
export function likeLiteral(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** A LIKE pattern matching `value` literally, with `*` as the only wildcard. */
export function likePattern(value: string): string {
  return likeLiteral(value).replace(/\*/g, '%');
}

export const or = (terms: string[]): string =>
  terms.length === 0 ? 'FALSE' : terms.length === 1 ? terms[0]! : `(${terms.join(' OR ')})`;
export const and = (terms: string[]): string =>
  terms.length === 0 ? 'TRUE' : terms.length === 1 ? terms[0]! : `(${terms.join(' AND ')})`;
