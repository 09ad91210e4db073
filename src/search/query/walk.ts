// searchComplete's walks of a column's b-tree index: the column's distinct values in order, read a step
// at a time from after the last value seen (a loose index scan), so the cost grows with the values
// returned, not with the rows indexed. Each step descends into the index of every partition its
// predicate leaves in, so fewer steps matter where a predicate lets PostgreSQL keep to the index order.

/** How a walk reads: `rows` rows a step, over the rows `where` allows (none: every row). */
export interface Walk {
  /** The CTE's name (unique in the statement). */
  name: string;
  /** A column of search.resources aliased `r`, with a b-tree index that starts with it. */
  column: string;
  where?: string;
  /**
   * Rows read a step. More than one only where the predicate cannot draw PostgreSQL to another index
   * (none, or whole clusters): with a namespace list it may read a few rows by that index and sort them
   * at every step (528 ms for a user of 10 namespaces and one cluster, against 17 ms one row a step).
   */
  rows: number;
  /**
   * Another walk of the same statement (a bulk one) whose first `limit` values, once it has them all,
   * bound this one: no value past the largest of them can be among the first `limit` of the merge, so
   * this walk stops there. (Its one-row steps are the slow ones.)
   */
  boundedBy?: string;
}

/** The CTE holding the bound a walk named `name` sets for others, as in {@link Walk.boundedBy}. */
const boundOf = (name: string) => `${name}_bound`;

/** The `WITH RECURSIVE` member that walks, and the query of its values in order. */
export function walkSql(walk: Walk): { cte: string; values: string } {
  const { name, column, where, rows, boundedBy } = walk;
  const allowed = where ? ` AND ${where}` : '';
  const within = boundedBy ? ` AND NOT EXISTS (SELECT 1 FROM ${boundOf(boundedBy)} b WHERE w.v >= b.v)` : '';
  if (rows === 1) {
    return {
      cte: `${name}(v) AS (
          (SELECT r.${column} FROM search.resources r WHERE r.${column} IS NOT NULL${allowed}
            ORDER BY r.${column} LIMIT 1)
          UNION ALL
          SELECT (SELECT r.${column} FROM search.resources r WHERE r.${column} > w.v${allowed}
            ORDER BY r.${column} LIMIT 1) FROM ${name} w WHERE w.v IS NOT NULL${within})`,
      values: `SELECT v FROM ${name} WHERE v IS NOT NULL`,
    };
  }
  // Each step keeps the distinct values of its rows: a run of rows with one value costs one step.
  const step = (after: string) => `SELECT array_agg(DISTINCT x.v ORDER BY x.v) AS vs FROM (
      SELECT r.${column} AS v FROM search.resources r WHERE ${after}${allowed}
      ORDER BY r.${column} LIMIT ${rows}) x`;
  return {
    cte: `${name}(vs, last) AS (
        SELECT s.vs, s.vs[cardinality(s.vs)] FROM (${step(`r.${column} IS NOT NULL`)}) s
        UNION ALL
        SELECT s.vs, s.vs[cardinality(s.vs)] FROM ${name} w
          CROSS JOIN LATERAL (${step(`r.${column} > w.last`)}) s WHERE w.last IS NOT NULL)`,
    values: `SELECT unnest(vs) AS v FROM ${name} WHERE vs IS NOT NULL`,
  };
}

/**
 * The first `limit` (a bind parameter) distinct values of every walk, in order. Each walk stops once it
 * has given `limit` values (PostgreSQL evaluates a recursive CTE only as far as it is read).
 */
export function walksSql(walks: Walk[], limit: string): string {
  const parts = walks.map(walkSql);
  // A bound is the largest of the bounding walk's first `limit` values, once it has that many (any
  // `limit` distinct values have a largest at or past the limit-th smallest, so it never stops a walk
  // early); with fewer there is none.
  const bounds = [...new Set(walks.flatMap((w) => (w.boundedBy ? [w.boundedBy] : [])))].map((name) => {
    const bounding = parts[walks.findIndex((w) => w.name === name)]!;
    return `${boundOf(name)}(v) AS (SELECT max(x.v) FROM (${bounding.values} LIMIT ${limit}) x HAVING count(*) >= ${limit})`;
  });
  const ctes = `WITH RECURSIVE ${[...parts.map((w) => w.cte), ...bounds].join(',\n')}`;
  if (parts.length === 1) return `${ctes} ${parts[0]!.values} LIMIT ${limit}`;
  const each = parts.map((w) => `(${w.values} LIMIT ${limit})`).join(' UNION ');
  return `${ctes} SELECT v FROM (${each}) u ORDER BY v LIMIT ${limit}`;
}
