// Namespace ownership API (tenancy.tenantkit.io/v1alpha1): organizations own namespaces; a TenantUser
// records a user's default organization (vanilla Kubernetes has no User objects); TenancyConfig is the
// one live configuration of the namespace policies.
import { type Static, Type } from '@sinclair/typebox';
import { ConditionsSchema, defineCrd, type ObjectOf } from './schema.ts';
import { LabelSelectorSchema } from './scopes.ts';

const group = 'tenancy.tenantkit.io';
/** A Kubernetes quantity (500m, 2Gi, 10, 1e3). */
const quantityPattern =
  '^[+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$';
const version = 'v1alpha1';
const patterns = (description: string) =>
  Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description, maxItems: 256 }));

/** Which cluster-scoped classes of one kind an organization may use, and the one it gets when it names none. */
const allowedClasses = (kind: string) =>
  Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
      maxItems: 64,
      description: `${kind} names (wildcard *) the organization may use; absent: any, empty: none.`,
    }),
  );
/** Classes an object names by itself, and a default for one that names none. */
const defaultedClassRule = (kind: string) =>
  Type.Optional(
    Type.Object({
      allowed: allowedClasses(kind),
      default: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 253,
          description: `The ${kind} the organization's objects get when they name none, or when the cluster's default ${kind} filled in is not allowed.`,
        }),
      ),
    }),
  );
/**
 * Classes a Pod names: checked only. Kubernetes' own admission fills in a Pod's priority and overhead from
 * its class before webhooks run, so a class a webhook put in would not match them.
 */
const podClassRule = (kind: string) => Type.Optional(Type.Object({ allowed: allowedClasses(kind) }));

/**
 * Guardrails on what an organization's namespaces may use. In TenancyConfig they are every organization's
 * defaults; an Organization's own replace them field by field. Only admins write either.
 */
const guardrailFields = {
  storageClasses: defaultedClassRule('StorageClass'),
  ingressClasses: defaultedClassRule('IngressClass'),
  priorityClasses: podClassRule('PriorityClass'),
  runtimeClasses: podClassRule('RuntimeClass'),
  ingressHostnames: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
      maxItems: 64,
      description:
        'Host names (wildcard * for any run of characters) Ingresses may serve; absent: any, empty: none. A host an Ingress names must match one.',
    }),
  ),
  registries: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 512 }), {
      maxItems: 64,
      description:
        'Image repositories containers may come from: a registry host ("registry.example.com") or a repository prefix ("ghcr.io/acme"), * standing for any run of characters within one path segment; images without a registry are docker.io\'s ("nginx" is docker.io/library/nginx). Absent: any, empty: none.',
    }),
  ),
  namespaceLabels: Type.Optional(
    Type.Record(Type.String({ minLength: 1, maxLength: 316 }), Type.String({ maxLength: 63 }), {
      description:
        "Labels every namespace of the organization carries (Pod Security Admission's levels, say); tenants may not change or remove them.",
    }),
  ),
  namespaceAnnotations: Type.Optional(
    Type.Record(Type.String({ minLength: 1, maxLength: 316 }), Type.String({ maxLength: 4096 }), {
      description:
        'Annotations every namespace of the organization carries; tenants may not change or remove them.',
    }),
  ),
};
const guardrails = (description: string) => Type.Object(guardrailFields, { description });
/**
 * The label naming a namespace's organization unless TenancyConfig says otherwise (APPUiO's, which tenancy
 * follows); backup records it as a namespace's organization too.
 */
export const DefaultOrganizationLabel = 'appuio.io/organization';

export const GuardrailsSchema = guardrails('What namespaces of an organization may use.');
export type Guardrails = Static<typeof GuardrailsSchema>;

export const OrganizationCrd = defineCrd({
  group,
  version,
  kind: 'Organization',
  plural: 'organizations',
  singular: 'organization',
  scope: 'Cluster',
  shortNames: ['org'],
  categories: ['tenantkit'],
  description: 'An organization: it owns namespaces labelled with its name, and its members administer them.',
  spec: Type.Object({
    displayName: Type.Optional(Type.String({ maxLength: 256 })),
    members: Type.Optional(
      Type.Object({
        users: Type.Optional(
          Type.Array(Type.String({ minLength: 1 }), { maxItems: 10000, 'x-kubernetes-list-type': 'set' }),
        ),
        groups: Type.Optional(
          Type.Array(Type.String({ minLength: 1 }), { maxItems: 1000, 'x-kubernetes-list-type': 'set' }),
        ),
      }),
    ),
    namespaceQuota: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'Overrides the default number of namespaces this organization may own.',
      }),
    ),
    usageProfile: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'UsageProfile for this organization instead of the active one.',
      }),
    ),
    guardrails: Type.Optional(
      guardrails(
        "What this organization's namespaces may use; each field set here replaces the TenancyConfig's default.",
      ),
    ),
    quota: Type.Optional(
      Type.Object({
        hard: Type.Record(
          Type.String({ minLength: 1, maxLength: 253 }),
          Type.String({ pattern: quantityPattern, maxLength: 64 }),
          {
            description:
              "Limits summed over all the organization's namespaces, by the resource names of a ResourceQuota (requests.cpu, limits.memory, requests.storage, pods, count/deployments.apps, ...). Each namespace gets a part as its ResourceQuota organization-quota; the parts never add up to more.",
          },
        ),
      }),
    ),
  }),
  status: Type.Object({
    observedGeneration: Type.Optional(Type.Integer()),
    conditions: Type.Optional(ConditionsSchema),
    namespaceCount: Type.Optional(
      Type.Integer({ description: 'Namespaces the organization owns now (terminating ones not counted).' }),
    ),
    namespaceQuota: Type.Optional(
      Type.Integer({
        description:
          'How many namespaces it may own: spec.namespaceQuota, else its UsageProfile, else the TenancyConfig default.',
      }),
    ),
    namespaces: Type.Optional(
      Type.Array(Type.String(), {
        maxItems: 1000,
        description: 'Names of the namespaces it owns (the first 1000, sorted).',
      }),
    ),
    namespaceLabel: Type.Optional(
      Type.String({
        description: 'The label that puts a namespace in this organization (its value: the name).',
      }),
    ),
    readerRole: Type.Optional(
      Type.String({ description: 'The ClusterRole that lets its members read this Organization.' }),
    ),
    classes: Type.Optional(
      Type.Object(
        {
          storageClasses: Type.Optional(Type.Array(Type.String())),
          ingressClasses: Type.Optional(Type.Array(Type.String())),
          priorityClasses: Type.Optional(Type.Array(Type.String())),
          runtimeClasses: Type.Optional(Type.Array(Type.String())),
        },
        {
          description:
            "The cluster's classes of each kind its namespaces may use now (its guardrails applied to the classes that exist).",
        },
      ),
    ),
    quota: Type.Optional(
      Type.Record(
        Type.String(),
        Type.Object({ hard: Type.String(), used: Type.String(), remaining: Type.String() }),
        {
          description:
            'Per resource of spec.quota.hard: the total, what its namespaces use together, what is left.',
        },
      ),
    ),
  }),
  printerColumns: [
    { name: 'Display Name', type: 'string', jsonPath: '.spec.displayName' },
    { name: 'Namespaces', type: 'integer', jsonPath: '.status.namespaceCount' },
    { name: 'Quota', type: 'integer', jsonPath: '.status.namespaceQuota' },
    {
      name: 'Isolated',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="NetworkIsolated")].status',
    },
  ],
});

export const TenantUserCrd = defineCrd({
  group,
  version,
  kind: 'TenantUser',
  plural: 'tenantusers',
  singular: 'tenantuser',
  scope: 'Cluster',
  categories: ['tenantkit'],
  description: "A user's tenancy settings: the organization their new namespaces belong to by default.",
  spec: Type.Object({
    username: Type.String({ minLength: 1, description: 'The user name as the API server authenticates it.' }),
    defaultOrganization: Type.String({ minLength: 1 }),
  }),
  status: Type.Object({ conditions: Type.Optional(ConditionsSchema) }),
  printerColumns: [
    { name: 'User', type: 'string', jsonPath: '.spec.username' },
    { name: 'Default Organization', type: 'string', jsonPath: '.spec.defaultOrganization' },
  ],
});

export const tenancyConfigKeys = [
  'organizationLabel',
  'privilegedUsers',
  'privilegedGroups',
  'privilegedClusterRoles',
  'reservedNamespaces',
  'allowedLabels',
  'allowedAnnotations',
  'defaultOrganizationClusterRoles',
  'defaultNamespaceQuota',
  'quotaNamespace',
  'namespaceQuotaHoldSeconds',
  'runOnceActiveDeadlineSeconds',
  'runOnceActiveDeadlineMaxSeconds',
  'runOnceActiveDeadlineAnnotation',
  'defaultNodeSelector',
  'nodeSelectorAnnotation',
  'fairUseRatios',
  'activeUsageProfile',
  'disabledPolicies',
  'networkIsolation',
  'guardrails',
] as const;

/** The namespace policies an admin may switch off (TenancyConfig.spec.disabledPolicies). */
export const switchablePolicies = [
  'namespace-organization',
  'namespace-policy',
  'pod-defaults',
  'pod-fair-use',
  'projectrequest-organization',
  'project-organization',
  'reserved-quota',
  'claim-volume',
  'guardrails',
] as const;

/** Namespaces a peer of a network allowance names. */
const namespacePeer = Type.Object({ namespaceSelector: LabelSelectorSchema });

export const TenancyConfigCrd = defineCrd({
  group,
  version,
  kind: 'TenancyConfig',
  plural: 'tenancyconfigs',
  singular: 'tenancyconfig',
  scope: 'Cluster',
  categories: ['tenantkit'],
  description:
    'The configuration of the namespace ownership policies; only the object named "cluster" is used.',
  spec: Type.Object(
    {
      organizationLabel: Type.Optional(
        Type.String({ minLength: 1, maxLength: 316, default: DefaultOrganizationLabel }),
      ),
      privilegedUsers: patterns('User names (wildcard *) that bypass the namespace policies.'),
      privilegedGroups: patterns('Groups (wildcard *) that bypass the namespace policies.'),
      privilegedClusterRoles: patterns(
        'ClusterRoles (wildcard *) whose subjects bypass the policies, when bound by a ClusterRoleBinding.',
      ),
      reservedNamespaces: patterns(
        'Namespace name patterns (wildcard *) nobody but privileged users may create.',
      ),
      allowedLabels: patterns('Namespace label keys (wildcard *) tenants may set, change or remove.'),
      allowedAnnotations: patterns(
        'Namespace annotation keys (wildcard *) tenants may set, change or remove.',
      ),
      defaultOrganizationClusterRoles: patterns(
        'ClusterRoles granted to members in every organization namespace.',
      ),
      defaultNamespaceQuota: Type.Optional(Type.Integer({ minimum: 0 })),
      namespaceQuotaHoldSeconds: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 300,
          default: 10,
          description:
            'How long a namespace admitted but not yet stored counts against its organization (seconds): longer than the API server takes from admission to storing the namespace. A slot held for a name that never appears (an admission review no create followed) is free after it.',
        }),
      ),
      runOnceActiveDeadlineSeconds: Type.Optional(
        Type.Integer({
          minimum: 1,
          description: 'Default activeDeadlineSeconds for run-once pods that set none.',
        }),
      ),
      runOnceActiveDeadlineMaxSeconds: Type.Optional(
        Type.Integer({ minimum: 1, description: 'Upper bound for the per-namespace override.' }),
      ),
      runOnceActiveDeadlineAnnotation: Type.Optional(
        Type.String({
          description: 'Namespace annotation with which tenants override the default (seconds).',
        }),
      ),
      defaultNodeSelector: Type.Optional(Type.Record(Type.String(), Type.String())),
      nodeSelectorAnnotation: Type.Optional(
        Type.String({
          description:
            'Namespace annotation (key=value,...) with which tenants choose their default node class.',
        }),
      ),
      fairUseRatios: Type.Optional(
        Type.Array(
          Type.Object({
            nodeSelector: Type.Optional(Type.Record(Type.String(), Type.String())),
            memoryPerCpu: Type.String({ description: 'Fair-use memory per CPU requested, e.g. 4Gi.' }),
          }),
          { maxItems: 32 },
        ),
      ),
      disabledPolicies: Type.Optional(
        Type.Array(Type.Union(switchablePolicies.map((p) => Type.Literal(p))), {
          description: 'Policies to switch off; their webhooks then allow everything.',
          'x-kubernetes-list-type': 'set',
        }),
      ),
      activeUsageProfile: Type.Optional(
        Type.String({
          description: 'The UsageProfile every organization gets unless its Organization names another.',
        }),
      ),
      networkIsolation: Type.Optional(
        Type.Object({
          enabled: Type.Optional(
            Type.Boolean({
              default: true,
              description:
                'Isolate every organization on the network: its Pods accept connections only from namespaces of the same organization and those allowFrom names. Needs an AdminNetworkPolicy enforcer.',
            }),
          ),
          priority: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 1000,
              default: 900,
              description:
                "Priority of the organizations' AdminNetworkPolicies (lower wins): the admin's own policies with a lower number come first.",
            }),
          ),
          allowFrom: Type.Optional(
            Type.Array(namespacePeer, {
              maxItems: 20,
              description:
                "Namespaces every organization's Pods accept connections from (an ingress controller, monitoring); the organization's own NetworkPolicies still decide within that.",
            }),
          ),
          organizations: Type.Optional(
            Type.Array(
              Type.Object({
                name: Type.String({ minLength: 1, maxLength: 253 }),
                isolated: Type.Optional(
                  Type.Boolean({ description: 'false: this organization is not isolated.' }),
                ),
                allowFrom: Type.Optional(
                  Type.Array(namespacePeer, {
                    maxItems: 20,
                    description: "Namespaces this organization's Pods also accept connections from.",
                  }),
                ),
              }),
              {
                maxItems: 1000,
                description: 'Exceptions and allowances per organization.',
                'x-kubernetes-list-type': 'map',
                'x-kubernetes-list-map-keys': ['name'],
              },
            ),
          ),
        }),
      ),
      guardrails: Type.Optional(
        guardrails(
          "Every organization's guardrails, unless its Organization's spec.guardrails sets the field.",
        ),
      ),
      quotaNamespace: Type.Optional(
        Type.String({
          description: "Namespace that holds the namespace-quota reservations (tenantkit's own).",
        }),
      ),
    },
    {
      // Unknown keys are kept (not pruned) so that the tenancy-config webhook can reject a typo
      // instead of the API server silently dropping it.
      'x-kubernetes-preserve-unknown-fields': true,
    },
  ),
  status: Type.Object({ conditions: Type.Optional(ConditionsSchema) }),
  validations: [
    { rule: "self.metadata.name == 'cluster'", message: 'the TenancyConfig must be named "cluster"' },
  ],
});

export const UsageProfileCrd = defineCrd({
  group,
  version,
  kind: 'UsageProfile',
  plural: 'usageprofiles',
  singular: 'usageprofile',
  scope: 'Cluster',
  categories: ['tenantkit'],
  description:
    'How much an organization may use: its namespace count, and the ResourceQuotas and LimitRanges created in each of its namespaces.',
  spec: Type.Object({
    namespaceCount: Type.Optional(Type.Integer({ minimum: 0 })),
    resources: Type.Optional(
      Type.Record(
        Type.String(),
        Type.Object(
          {},
          {
            description: 'A ResourceQuota or LimitRange (apiVersion, kind, spec); its name is the map key.',
            'x-kubernetes-preserve-unknown-fields': true,
            'x-kubernetes-embedded-resource': true,
          },
        ),
      ),
    ),
  }),
  status: Type.Object({ conditions: Type.Optional(ConditionsSchema) }),
  printerColumns: [{ name: 'Namespaces', type: 'integer', jsonPath: '.spec.namespaceCount' }],
});

export type Organization = ObjectOf<typeof OrganizationCrd>;
export type UsageProfile = ObjectOf<typeof UsageProfileCrd>;
export type TenantUser = ObjectOf<typeof TenantUserCrd>;
export type TenancyConfig = ObjectOf<typeof TenancyConfigCrd>;
