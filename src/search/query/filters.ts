// ACM's search language as SQL conditions. A filter is a property and values: values OR together,
// filters AND together. A value may start with an operator (= != ! > >= < <=), may hold `*` wildcards
// (case-sensitive), and for dates may be `hour`, `day`, `week`, `month` or `year` ("within the last").
// `kind` matches case-insensitively; `label` values are `key=value`; keywords match any property value,
// case-insensitively. Property names and values only ever reach SQL as bind parameters.
import { QueryError, type SearchFilter, type SearchInput } from '../model.ts';
import { and, type Columns, likeLiteral, likePattern, or, type Params } from './sql.ts';

export interface FilterLimits {
  maxFilters: number;
  maxValues: number;
  maxKeywords: number;
  maxValueLength: number;
}

export const defaultFilterLimits: FilterLimits = {
  maxFilters: 30,
  maxValues: 200,
  maxKeywords: 10,
  maxValueLength: 1024,
};

const operators = ['<=', '>=', '!=', '!', '=', '<', '>'] as const;
type Operator = (typeof operators)[number];

const periods: Record<string, number> = {
  hour: 3600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
  month: 30 * 86_400_000,
  year: 365 * 86_400_000,
};

const numeric = /^-?\d+(\.\d+)?$/;

/** The conditions (to be ANDed) that `input`'s keywords and filters put on rows described by `cols`. */
export function inputConditions(
  input: SearchInput | undefined,
  cols: Columns,
  p: Params,
  limits: FilterLimits = defaultFilterLimits,
  now = Date.now(),
): string[] {
  if (!input) return [];
  const keywords = (input.keywords ?? []).filter((k) => typeof k === 'string' && k.trim() !== '');
  const filters = input.filters ?? [];
  if (keywords.length > limits.maxKeywords) {
    throw new QueryError(
      'TOO_MANY_KEYWORDS',
      `at most ${limits.maxKeywords} keywords per search; remove some`,
    );
  }
  if (filters.length > limits.maxFilters) {
    throw new QueryError('TOO_MANY_FILTERS', `at most ${limits.maxFilters} filters per search; remove some`);
  }
  const conditions: string[] = [];
  for (const keyword of keywords) {
    checkLength(keyword, 'keyword', limits);
    conditions.push(
      `jsonb_path_query_array(${cols.data}, 'strict $.*')::text ILIKE ${p.add(`%${likeLiteral(keyword.trim())}%`)}`,
    );
  }
  for (const filter of filters) conditions.push(filterCondition(filter, cols, p, limits, now));
  return conditions;
}

function checkLength(value: string, what: string, limits: FilterLimits): void {
  if (value.length > limits.maxValueLength) {
    throw new QueryError('VALUE_TOO_LONG', `a ${what} may be at most ${limits.maxValueLength} characters`);
  }
}

function filterCondition(filter: SearchFilter, cols: Columns, p: Params, limits: FilterLimits, now: number) {
  const property = filter?.property;
  if (typeof property !== 'string' || property.trim() === '') {
    throw new QueryError(
      'BAD_FILTER',
      'every filter needs a property name, e.g. {property: "kind", values: ["Pod"]}',
    );
  }
  checkLength(property, 'property name', limits);
  const values = (filter.values ?? []).filter((v): v is string => typeof v === 'string');
  if (values.length === 0) {
    throw new QueryError('BAD_FILTER', `filter "${property}" has no values; give at least one`);
  }
  if (values.length > limits.maxValues) {
    throw new QueryError('TOO_MANY_VALUES', `filter "${property}" has more than ${limits.maxValues} values`);
  }
  const positive: string[] = [];
  const negative: string[] = [];
  for (const raw of values) {
    checkLength(raw, 'filter value', limits);
    const op = operators.find((o) => raw.startsWith(o)) ?? '=';
    const value = raw.startsWith(op) ? raw.slice(op.length) : raw;
    if (op === '!' || op === '!=')
      negative.push(`NOT coalesce(${match(property, '=', value, cols, p, now)}, FALSE)`);
    else positive.push(match(property, op, value, cols, p, now));
  }
  // "status:Running,Pending" is either; "namespace:!=a,!=b" is neither.
  return and([...(positive.length > 0 ? [or(positive)] : []), ...negative]);
}

function match(property: string, op: Operator, value: string, cols: Columns, p: Params, now: number): string {
  // Own keys only: "constructor" or "__proto__" as a value must not find Object.prototype's members.
  const key = value.toLowerCase();
  const period = Object.hasOwn(periods, key) ? periods[key] : undefined;
  if (period !== undefined && (op === '=' || op === '>' || op === '>=')) {
    // "created:hour": within the last hour. Timestamps are RFC 3339 in UTC, which sort as text.
    return `(${cols.data}->>${p.add(property)}) >= ${p.add(new Date(now - period).toISOString().replace(/\.\d{3}Z$/, 'Z'))}`;
  }
  if (property === 'label') return labelMatch(op, value, cols, p);
  const column = columnOf(property, cols);
  if (column) {
    const v = property === 'kind' ? value.toLowerCase() : value;
    if (op === '=')
      return value.includes('*') ? `${column} LIKE ${p.add(likePattern(v))}` : `${column} = ${p.add(v)}`;
    return `${column} ${op} ${p.add(v)}`;
  }
  const json = `${cols.data}->${p.add(property)}`;
  if (op === '=') {
    if (value.includes('*')) {
      const pattern = p.add(likePattern(value));
      return `(${json} #>> '{}' LIKE ${pattern} OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(
        CASE WHEN jsonb_typeof(${json}) = 'array' THEN ${json} ELSE '[]'::jsonb END) e WHERE e LIKE ${pattern}))`;
    }
    // A scalar equal to the value, or an array (container, image, ...) holding it.
    const v = p.add(value);
    return `(${json} #>> '{}' = ${v} OR jsonb_exists(${json}, ${v}))`;
  }
  if (numeric.test(value)) {
    // Numbers compare as numbers, whether indexed as JSON numbers or numeric strings; never a cast error.
    return `(CASE WHEN jsonb_typeof(${json}) = 'number' THEN (${json})::numeric
      WHEN ${json} #>> '{}' ~ '^-?[0-9]+(\\.[0-9]+)?$' THEN (${json} #>> '{}')::numeric END) ${op} ${p.add(value)}::numeric`;
  }
  return `(${json} #>> '{}') ${op} ${p.add(value)}`;
}

function columnOf(property: string, cols: Columns): string | undefined {
  switch (property) {
    case 'cluster':
      return cols.cluster;
    case 'kind':
      return cols.kind;
    case 'namespace':
      return cols.namespace;
    case 'name':
      return cols.name;
    default:
      return undefined;
  }
}

/** `label:app=web` (exact), `label:app=web*` (wildcard value), `label:app` (has the key). */
function labelMatch(op: Operator, value: string, cols: Columns, p: Params): string {
  const labels = `${cols.data}->'label'`;
  const eq = value.indexOf('=');
  if (eq < 0) return `jsonb_exists(${labels}, ${p.add(value)})`;
  const key = value.slice(0, eq).trim();
  const wanted = value.slice(eq + 1).trim();
  if (op !== '=') {
    return `(${labels}->>${p.add(key)}) ${op} ${p.add(wanted)}`;
  }
  if (wanted.includes('*')) {
    return `(${labels}->>${p.add(key)}) LIKE ${p.add(likePattern(wanted))}`;
  }
  return `${labels} @> ${p.add(JSON.stringify({ [key]: wanted }))}::jsonb`;
}

/** `orderBy` ("name desc") as an ORDER BY list; unknown directions are refused, not guessed. */
export function orderBy(spec: string | undefined, cols: Columns, p: Params): string | undefined {
  if (spec === undefined || spec === null || spec.trim() === '') return undefined;
  const m = /^\s*(\S+)(?:\s+(asc|desc))?\s*$/i.exec(spec);
  if (!m) {
    throw new QueryError(
      'BAD_ORDER',
      `orderBy must be "<property> asc" or "<property> desc", got ${JSON.stringify(spec)}`,
    );
  }
  const property = m[1]!;
  const direction = (m[2] ?? 'asc').toLowerCase() === 'desc' ? 'DESC' : 'ASC';
  const column =
    property === 'kind'
      ? `${cols.data}->>'kind'`
      : (columnOf(property, cols) ?? `${cols.data}->${p.add(property)}`);
  return `${column} ${direction} NULLS LAST`;
}
