// Scoped RBAC API (operators.coreos.com/v1alpha1, as in the Oria design): a ScopeTemplate names
// ClusterRoles and the subjects to bind; a ScopeInstance binds a template in chosen namespaces.
import { Type } from '@sinclair/typebox';
import { ConditionsSchema, defineCrd, type ObjectOf } from './schema.ts';

const dnsLabel = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

export const SubjectSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('User'), Type.Literal('Group'), Type.Literal('ServiceAccount')], {
      description: 'User, Group or ServiceAccount.',
    }),
    name: Type.String({ minLength: 1, maxLength: 253 }),
    namespace: Type.Optional(
      Type.String({ maxLength: 63, description: 'Required for ServiceAccount subjects.' }),
    ),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: "self.kind != 'ServiceAccount' || (has(self.namespace) && self.namespace != '')",
        message: 'a ServiceAccount subject needs a namespace',
      },
    ],
  },
);

export const PolicyRuleSchema = Type.Object({
  verbs: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 32 }),
  apiGroups: Type.Optional(Type.Array(Type.String(), { maxItems: 64 })),
  resources: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 64 })),
  resourceNames: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 256 })),
  nonResourceURLs: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 64 })),
});

export const LabelSelectorSchema = Type.Object({
  matchLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
  matchExpressions: Type.Optional(
    Type.Array(
      Type.Object({
        key: Type.String({ minLength: 1 }),
        operator: Type.Union([
          Type.Literal('In'),
          Type.Literal('NotIn'),
          Type.Literal('Exists'),
          Type.Literal('DoesNotExist'),
        ]),
        values: Type.Optional(Type.Array(Type.String())),
      }),
      { maxItems: 32 },
    ),
  ),
});

export const ScopeTemplateCrd = defineCrd({
  group: 'operators.coreos.com',
  version: 'v1alpha1',
  kind: 'ScopeTemplate',
  plural: 'scopetemplates',
  singular: 'scopetemplate',
  scope: 'Cluster',
  shortNames: ['sctpl'],
  categories: ['tenantkit'],
  description:
    'ClusterRoles, and the subjects to bind to them, that ScopeInstances grant in chosen namespaces.',
  spec: Type.Object({
    clusterRoles: Type.Array(
      Type.Object({
        generateName: Type.String({
          minLength: 1,
          maxLength: 200,
          description: 'Prefix of the generated ClusterRole name; unique within the template.',
        }),
        rules: Type.Array(PolicyRuleSchema, { maxItems: 256 }),
        subjects: Type.Array(SubjectSchema, { minItems: 1, maxItems: 256 }),
      }),
      {
        minItems: 1,
        maxItems: 32,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['generateName'],
      },
    ),
  }),
  status: Type.Object({
    observedGeneration: Type.Optional(Type.Integer()),
    conditions: Type.Optional(ConditionsSchema),
    clusterRoles: Type.Optional(
      Type.Array(Type.Object({ generateName: Type.String(), name: Type.String() }), { maxItems: 32 }),
    ),
  }),
  printerColumns: [
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
  ],
});

export const ScopeInstanceCrd = defineCrd({
  group: 'operators.coreos.com',
  version: 'v1alpha1',
  kind: 'ScopeInstance',
  plural: 'scopeinstances',
  singular: 'scopeinstance',
  scope: 'Cluster',
  shortNames: ['scinst'],
  categories: ['tenantkit'],
  description:
    'Binds the ClusterRoles of a ScopeTemplate in the listed and selected namespaces, or cluster-wide when neither is given.',
  spec: Type.Object({
    scopeTemplateName: Type.String({ minLength: 1, maxLength: 253 }),
    namespaces: Type.Optional(
      Type.Array(Type.String({ maxLength: 63, pattern: dnsLabel }), {
        maxItems: 10000,
        'x-kubernetes-list-type': 'set',
      }),
    ),
    namespaceSelector: Type.Optional(LabelSelectorSchema),
  }),
  status: Type.Object({
    observedGeneration: Type.Optional(Type.Integer()),
    conditions: Type.Optional(ConditionsSchema),
    namespaceCount: Type.Optional(
      Type.Integer({ description: 'Namespaces where every binding is in place.' }),
    ),
    bindingCount: Type.Optional(Type.Integer()),
    boundNamespaceUIDs: Type.Optional(
      Type.Array(Type.Object({ namespace: Type.String(), uid: Type.String() }), {
        maxItems: 10000,
        description:
          'The UID of each listed namespace as it was when the current spec was admitted; a namespace of the same name with another UID is not bound.',
      }),
    ),
    boundNamespaceUIDsGeneration: Type.Optional(
      Type.Integer({ description: 'The spec generation boundNamespaceUIDs were recorded for.' }),
    ),
    failedNamespaces: Type.Optional(
      Type.Array(Type.Object({ namespace: Type.String(), reason: Type.String(), message: Type.String() }), {
        maxItems: 1000,
      }),
    ),
  }),
  printerColumns: [
    { name: 'Template', type: 'string', jsonPath: '.spec.scopeTemplateName' },
    { name: 'Namespaces', type: 'integer', jsonPath: '.status.namespaceCount' },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    {
      name: 'Reason',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      priority: 1,
    },
  ],
});

export type ScopeTemplate = ObjectOf<typeof ScopeTemplateCrd>;
export type ScopeInstance = ObjectOf<typeof ScopeInstanceCrd>;
