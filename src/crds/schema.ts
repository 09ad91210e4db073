// One definition per CRD: a TypeBox schema gives both the TypeScript type (Static<>) and the CRD's
// structural OpenAPI schema. This module turns a definition into a CustomResourceDefinition object.
import {
  type SchemaOptions,
  type Static,
  type TNull,
  type TObject,
  type TSchema,
  type TUnion,
  Type,
} from '@sinclair/typebox';
import type { KubeObject, ResourceType } from '../kube/resources.ts';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface CrdDefinition<Spec extends TObject = TObject, Status extends TObject = TObject> {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  scope: 'Namespaced' | 'Cluster';
  shortNames?: string[];
  categories?: string[];
  description: string;
  spec: Spec;
  status: Status;
  printerColumns?: PrinterColumn[];
  /** CEL rules on the whole object (x-kubernetes-validations at the root). */
  validations?: { rule: string; message: string }[];
  /** Whether the object must have a spec (default true); upstream APIs that accept none set false. */
  requireSpec?: boolean;
}

export type ObjectOf<D extends CrdDefinition> = KubeObject & {
  spec: Static<D['spec']>;
  status?: Static<D['status']>;
};

export function defineCrd<Spec extends TObject, Status extends TObject>(
  def: CrdDefinition<Spec, Status>,
): CrdDefinition<Spec, Status> & { type: ResourceType } {
  return {
    ...def,
    type: {
      group: def.group,
      version: def.version,
      plural: def.plural,
      kind: def.kind,
      namespaced: def.scope === 'Namespaced',
    },
  };
}

/** metav1.Condition, shared by every status. */
export const ConditionSchema = Type.Object({
  type: Type.String({ maxLength: 316 }),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  reason: Type.String({ maxLength: 1024 }),
  message: Type.String({ maxLength: 32768 }),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
});

export const ConditionsSchema = Type.Array(ConditionSchema, {
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
});

/**
 * metav1.Condition with the validation Kubernetes' own types carry (CamelCase reason, qualified type,
 * int64 generation), for APIs that must match an upstream CRD generated from Go types.
 */
export const MetaV1ConditionSchema = Type.Object({
  type: Type.String({
    maxLength: 316,
    pattern:
      '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    description: 'Condition type, CamelCase or prefixed with a DNS subdomain (example.com/CamelCase).',
  }),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  observedGeneration: Type.Optional(
    Type.Integer({
      format: 'int64',
      minimum: 0,
      description: 'The metadata.generation this condition judged.',
    }),
  ),
  lastTransitionTime: Type.String({
    format: 'date-time',
    description: 'When the status last changed.',
  }),
  reason: Type.String({
    minLength: 1,
    maxLength: 1024,
    pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
    description: 'Machine-readable CamelCase reason for the last transition.',
  }),
  message: Type.String({ maxLength: 32768, description: 'Human-readable details; may be empty.' }),
});

/** A value that may also be JSON null: `nullable: true` in the CRD, `T | null` in TypeScript. */
export function Nullable<T extends TSchema>(schema: T, options: SchemaOptions = {}): TUnion<[T, TNull]> {
  return Type.Union([schema, Type.Null()], options);
}

/** Keywords a structural CRD schema accepts; TypeBox's own markers and JSON-Schema-only words are dropped. */
const passthrough = new Set([
  'type',
  'description',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'enum',
  'default',
  'nullable',
]);

type Json = Record<string, unknown>;

/** Converts a TypeBox schema to a structural OpenAPI v3 schema as CRDs require. */
export function toStructural(schema: TSchema): Json {
  const s = schema as unknown as Json;
  // A union with null (Nullable) is the other member with `nullable: true`.
  if (Array.isArray(s.anyOf) && (s.anyOf as Json[]).some((m) => m.type === 'null')) {
    const members = (s.anyOf as Json[]).filter((m) => m.type !== 'null');
    const inner = members.length === 1 ? members[0]! : { ...s, anyOf: members };
    const out: Json = { ...toStructural(inner as unknown as TSchema), nullable: true };
    if (s.description) out.description = s.description;
    if (s.default !== undefined) out.default = s.default;
    return out;
  }
  // A union of string literals is an enum.
  if (Array.isArray(s.anyOf) && (s.anyOf as Json[]).every((m) => typeof m.const === 'string')) {
    const out: Json = { type: 'string', enum: (s.anyOf as Json[]).map((m) => m.const) };
    if (s.description) out.description = s.description;
    if (s.default !== undefined) out.default = s.default;
    return out;
  }
  if (s.anyOf || s.oneOf || s.allOf) throw new Error('CRD schemas support unions of string literals only');
  const out: Json = {};
  for (const [key, value] of Object.entries(s)) {
    if (passthrough.has(key) || key.startsWith('x-kubernetes-')) out[key] = value;
  }
  if (typeof s.const === 'string') out.enum = [s.const];
  if (s.type === 'object') {
    if (s.properties && Object.keys(s.properties).length > 0) {
      const props: Json = {};
      for (const [name, child] of Object.entries(s.properties as Record<string, TSchema>)) {
        props[name] = toStructural(child);
      }
      out.properties = props;
      if (Array.isArray(s.required) && s.required.length > 0) out.required = s.required;
    }
    // Type.Record(String, X) is patternProperties in JSON Schema and additionalProperties in a CRD.
    const pattern = s.patternProperties as Record<string, TSchema> | undefined;
    if (pattern) {
      const value = Object.values(pattern)[0];
      if (value) out.additionalProperties = toStructural(value);
    } else if (typeof s.additionalProperties === 'object') {
      out.additionalProperties = toStructural(s.additionalProperties as TSchema);
    }
  }
  if (s.type === 'array' && s.items) out.items = toStructural(s.items as TSchema);
  return out;
}

export function crdManifest(def: CrdDefinition): Json {
  const root: Json = {
    type: 'object',
    description: def.description,
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec: toStructural(def.spec),
      status: toStructural(def.status),
    },
  };
  if (def.requireSpec !== false) root.required = ['spec'];
  if (def.validations?.length) root['x-kubernetes-validations'] = def.validations;
  const names: Json = {
    kind: def.kind,
    listKind: `${def.kind}List`,
    plural: def.plural,
    singular: def.singular,
  };
  if (def.shortNames?.length) names.shortNames = def.shortNames;
  if (def.categories?.length) names.categories = def.categories;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${def.plural}.${def.group}`,
      labels: { 'app.kubernetes.io/part-of': 'tenantkit' },
    },
    spec: {
      group: def.group,
      names,
      scope: def.scope,
      versions: [
        {
          name: def.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            ...(def.printerColumns ?? []),
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: { openAPIV3Schema: root },
        },
      ],
    },
  };
}
