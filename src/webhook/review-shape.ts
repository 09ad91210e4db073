// The shape of an AdmissionReview request, checked before any handler reads it: a body the API server
// would never send (wrong JSON types, missing metadata, nesting no Kubernetes object has) gets an answer
// that names the field and what was expected, never a JavaScript error. Handlers can then rely on the
// types of the envelope and of an object's metadata; a webhook may add a schema for the object's spec.
import { FormatRegistry, type TSchema, Type } from '@sinclair/typebox';
import { type TypeCheck, TypeCompiler } from '@sinclair/typebox/compiler';
import type { ValueError } from '@sinclair/typebox/errors';

// The formats tenantkit's schemas use, checked as the API server does (loosely: it already parsed them).
for (const [name, test] of [
  ['date-time', (v: string) => !Number.isNaN(Date.parse(v))],
  ['int64', () => true],
  ['int32', () => true],
  ['byte', (v: string) => /^[A-Za-z0-9+/]*={0,2}$/.test(v)],
] as const) {
  if (!FormatRegistry.Has(name)) FormatRegistry.Set(name, test);
}

const StringMap = Type.Record(Type.String(), Type.String());
const Timestamp = Type.Union([Type.String(), Type.Null()]);

const ObjectMeta = Type.Object({
  name: Type.Optional(Type.String()),
  generateName: Type.Optional(Type.String()),
  namespace: Type.Optional(Type.String()),
  uid: Type.Optional(Type.String()),
  resourceVersion: Type.Optional(Type.String()),
  generation: Type.Optional(Type.Integer()),
  // Go's omitempty: the API server leaves these out when empty, never null.
  labels: Type.Optional(StringMap),
  annotations: Type.Optional(StringMap),
  finalizers: Type.Optional(Type.Array(Type.String())),
  ownerReferences: Type.Optional(
    Type.Array(
      Type.Object({
        apiVersion: Type.String(),
        kind: Type.String(),
        name: Type.String(),
        uid: Type.String(),
        controller: Type.Optional(Type.Boolean()),
        blockOwnerDeletion: Type.Optional(Type.Boolean()),
      }),
    ),
  ),
  creationTimestamp: Type.Optional(Timestamp),
  deletionTimestamp: Type.Optional(Timestamp),
});

const KubeObjectShape = Type.Object({
  apiVersion: Type.Optional(Type.String()),
  kind: Type.Optional(Type.String()),
  metadata: ObjectMeta,
});

const Strings = Type.Union([Type.Array(Type.String()), Type.Null()]);

const AdmissionRequestShape = Type.Object({
  uid: Type.String({ minLength: 1, maxLength: 128 }),
  kind: Type.Object({ group: Type.String(), version: Type.String(), kind: Type.String() }),
  resource: Type.Object({ group: Type.String(), version: Type.String(), resource: Type.String() }),
  subResource: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  namespace: Type.Optional(Type.String()),
  operation: Type.Union([
    Type.Literal('CREATE'),
    Type.Literal('UPDATE'),
    Type.Literal('DELETE'),
    Type.Literal('CONNECT'),
  ]),
  userInfo: Type.Object({
    username: Type.String(),
    uid: Type.Optional(Type.String()),
    groups: Type.Optional(Strings),
    extra: Type.Optional(Type.Union([Type.Record(Type.String(), Strings), Type.Null()])),
  }),
  object: Type.Optional(Type.Union([KubeObjectShape, Type.Null()])),
  oldObject: Type.Optional(Type.Union([KubeObjectShape, Type.Null()])),
  dryRun: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
});

const requestCheck = TypeCompiler.Compile(AdmissionRequestShape);
const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** `/a/b/0` as `a.b[0]`, after `prefix`. */
function fieldOf(prefix: string, pointer: string): string {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let out = prefix;
  for (const p of parts) out += /^[0-9]+$/.test(p) ? `[${p}]` : `${out ? '.' : ''}${p}`;
  return out || prefix;
}

/**
 * A union's mismatch names the union ("expected union value"); what the caller needs is the field inside
 * it that is wrong: the deepest error of the union's variants (null variants say nothing useful).
 */
function mostSpecific(error: ValueError): ValueError {
  let best = error;
  for (const variant of error.errors) {
    for (const inner of variant) {
      const candidate = mostSpecific(inner);
      if (candidate.path.length > best.path.length) best = candidate;
    }
  }
  return best;
}

/** The first mismatch of `value` against `check`, as "field: expected …", or undefined. */
function firstProblem(check: TypeCheck<TSchema>, value: unknown, prefix: string): string | undefined {
  if (check.Check(value)) return undefined;
  const first = check.Errors(value).First();
  if (!first) return `${prefix}: does not have the expected shape`;
  const error = mostSpecific(first);
  const got = error.value === null ? 'null' : Array.isArray(error.value) ? 'array' : typeof error.value;
  return `${fieldOf(prefix, error.path)}: ${error.message.toLowerCase()} (got ${got})`;
}

/** What is wrong with an AdmissionReview's `request`, or undefined. */
export function requestProblem(request: unknown): string | undefined {
  const problem = firstProblem(requestCheck, request, 'request');
  if (problem) return problem;
  // The API server always sends the object being created or updated, and the old one of an update.
  const { operation, object, oldObject } = request as {
    operation: string;
    object?: unknown;
    oldObject?: unknown;
  };
  if ((operation === 'CREATE' || operation === 'UPDATE') && (object === undefined || object === null)) {
    return `request.object: required for ${operation}`;
  }
  if (operation === 'UPDATE' && (oldObject === undefined || oldObject === null)) {
    return 'request.oldObject: required for UPDATE';
  }
  return undefined;
}

/** What is wrong with `object.spec` (and `oldObject.spec`) against a webhook's spec schema, or undefined. */
export function specProblem(
  schema: TSchema,
  request: { object?: unknown; oldObject?: unknown },
  required = false,
): string | undefined {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  for (const field of ['object', 'oldObject'] as const) {
    const o = request[field] as { spec?: unknown } | null | undefined;
    if (!o) continue;
    if (o.spec === undefined) {
      if (required) return `request.${field}.spec: required`;
      continue;
    }
    const problem = firstProblem(check, o.spec, `request.${field}.spec`);
    if (problem) return problem;
  }
  return undefined;
}
