// Hostile JSON for fuzzing: mutations of a valid document (a field replaced by another JSON type, a
// prototype key added, a string with NUL or odd unicode, a huge or fractional number, deep nesting), and
// the checks every answer to such input must pass. Shared by the webhook and search fuzz tests; FUZZ_RUNS
// (npm run fuzz) raises the number of inputs from the suite's few seconds per property.
import fc from 'fast-check';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Inputs per property: a few seconds' worth in `npm test`, FUZZ_RUNS under `npm run fuzz`. */
export const fuzzRuns = Number(process.env.FUZZ_RUNS ?? 0) || undefined;
/** Options for fc.assert: seeded (FUZZ_SEED replays a failure; fast-check prints the seed and path). */
export function fuzzOptions(defaultRuns: number, timeLimitMs: number): fc.Parameters<unknown> {
  const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
  return {
    numRuns: fuzzRuns ?? defaultRuns,
    ...(fuzzRuns ? {} : { interruptAfterTimeLimit: timeLimitMs, markInterruptAsFailure: false }),
    ...(seed !== undefined ? { seed } : {}),
    endOnFailure: true,
  };
}

export const prototypeKeys = [
  '__proto__',
  'constructor',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'prototype',
];

/** Strings a parser or a database may choke on. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    ...prototypeKeys,
    '\u0000',
    'a\u0000b',
    '\uD800',
    '\uFEFF',
    '../..',
    "' OR 1=1 --",
    '*',
    '%',
  ),
  fc.string({ unit: fc.constantFrom('a', '\u0000', '/', '"', '\\', '\u202e'), maxLength: 64 }),
  // Long strings as placeholders too (see serialize): fast-check prints every failing input in full.
  fc.integer({ min: 1000, max: 200_000 }).map((n) => `__fuzz_long_${n}__`),
);

/** Numbers outside what any field expects. */
export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(0, -0, -1, 1e308, -1e308, 2 ** 53 + 1, 2 ** 64, 0.5, 1e-300),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

/**
 * A placeholder for arrays or objects nested `depth` levels deep: kept as a short string while fast-check
 * holds, copies and prints inputs (its printer recurses), expanded to text only by serialize().
 */
export const nested = (depth: number, asArray: boolean): Json =>
  `__fuzz_deep_${depth}_${asArray ? 'a' : 'o'}__`;

/** JSON text of `doc`, with the nesting placeholders expanded. */
export function serialize(doc: Json): string {
  return JSON.stringify(doc).replace(/"__fuzz_deep_(\d+)_([ao])__"/g, (_m, d: string, kind: string) => {
    const depth = Number(d);
    return kind === 'a'
      ? `${'['.repeat(depth)}1${']'.repeat(depth)}`
      : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  });
}

export const hostileValue: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<Json> },
  { weight: 3, arbitrary: hostileString },
  { weight: 2, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom<Json>(null, true, false, [], {}, [null], { '': '' }) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.integer({ min: 20, max: 6000 }), fc.boolean()).map(([d, a]) => nested(d, a)),
  },
);

/** Every path to a value in `doc` (objects and arrays included), as key lists. */
export function pathsOf(doc: Json, prefix: (string | number)[] = [], out: (string | number)[][] = []) {
  out.push(prefix);
  if (Array.isArray(doc)) {
    for (const [i, v] of doc.entries()) pathsOf(v, [...prefix, i], out);
  } else if (doc && typeof doc === 'object') {
    for (const [k, v] of Object.entries(doc)) pathsOf(v, [...prefix, k], out);
  }
  return out;
}

/** Sets an own property, even one named `__proto__` (an assignment would change the prototype). */
function setOwn(target: Json[] | { [key: string]: Json }, key: string | number, value: Json) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export type Mutation =
  | { op: 'replace'; path: (string | number)[]; value: Json }
  | { op: 'add'; path: (string | number)[]; key: string; value: Json }
  | { op: 'delete'; path: (string | number)[] };

/** A copy of `doc` with `m` applied (a path that no longer exists is ignored). */
export function applyMutation(doc: Json, m: Mutation): Json {
  const copy = structuredClone(doc);
  if (m.op === 'replace' && m.path.length === 0) return m.value;
  let parent: Json = copy;
  const last = m.op === 'add' ? undefined : m.path[m.path.length - 1];
  const walk = m.op === 'add' ? m.path : m.path.slice(0, -1);
  for (const key of walk) {
    if (!parent || typeof parent !== 'object') return copy;
    parent = (parent as Record<string, Json>)[key as string] as Json;
  }
  if (!parent || typeof parent !== 'object') return copy;
  const container = parent as Json[] | { [key: string]: Json };
  // An earlier mutation may have turned an object into a list: keys are added to objects only (a list
  // with an own "constructor" would break the splice below, in the fuzzer rather than the server).
  if (m.op === 'add') {
    if (!Array.isArray(container)) setOwn(container, m.key, m.value);
  } else if (m.op === 'replace') setOwn(container, last!, m.value);
  else if (Array.isArray(container)) container.splice(last as number, 1);
  else delete (container as Record<string, Json>)[last as string];
  return copy;
}

/** One to three mutations of `doc`, on paths that exist in it. */
export function mutationsOf(doc: Json): fc.Arbitrary<Mutation[]> {
  const paths = pathsOf(doc);
  const objects = paths.filter((p) => {
    let v: Json = doc;
    for (const k of p) v = (v as Record<string, Json>)[k as string] as Json;
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  });
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    fc.record({ op: fc.constant('replace' as const), path: fc.constantFrom(...paths), value: hostileValue }),
    fc.record({
      op: fc.constant('add' as const),
      path: fc.constantFrom(...objects),
      key: fc.oneof(fc.constantFrom(...prototypeKeys), hostileString),
      value: hostileValue,
    }),
    fc.record({
      op: fc.constant('delete' as const),
      path: fc.constantFrom(...paths.filter((p) => p.length > 0)),
    }),
  );
  return fc.array(mutation, { minLength: 1, maxLength: 3 });
}

/** Text that shows a JavaScript, Node or PostgreSQL error reached the client. */
export const leakedError =
  /TypeError|RangeError|SyntaxError|ReferenceError|Cannot read propert|is not a function|is not iterable|undefined \(reading|Maximum call stack|\bat \S+\.(ts|js):\d+|invalid byte sequence|syntax error at or near|relation "|column "/;
