// Namespace ownership by organizations: the tenancy capability's one entry point (its RBAC, its
// controllers and its webhooks, declared in admission/webhooks.ts).

import type { Capability } from '../capability.ts';
import { tenancyGroup as group } from './model.ts';
import { tenancyUserClusterRoles } from './policy/tenant-roles.ts';

const organizations = { group, version: 'v1alpha1', plural: 'organizations' };
const core = (plural: string) => ({ group: '', version: 'v1', plural });

export const tenancy: Capability = {
  name: 'tenancy',
  userClusterRoles: tenancyUserClusterRoles,
  controllerRules: [
    {
      apiGroups: [group],
      resources: ['organizations', 'tenancyconfigs', 'usageprofiles', 'tenantusers'],
      verbs: ['get', 'list', 'watch'],
    },
    // Patch: the labels and annotations organizations' guardrails require on their namespaces.
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch', 'patch'] },
    // The usage profile's guardrails in every organization namespace.
    {
      apiGroups: [''],
      resources: ['resourcequotas', 'limitranges'],
      verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
    },
    // Delete: its own bindings in a namespace that turns out to be reserved for the cluster.
    {
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['rolebindings'],
      verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
    },
    // The organization RoleBindings grant the configured ClusterRoles (default admin), which the
    // controller itself does not hold in those namespaces.
    { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['bind'] },
    // Organization status, and each organization's reader ClusterRole and binding (its members may get
    // their own Organization). The API server's escalation check keeps such a role within what this
    // controller itself holds.
    { apiGroups: [group], resources: ['organizations/status'], verbs: ['patch'] },
    // The classes each organization may use, in its status.
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['list', 'watch'] },
    { apiGroups: ['networking.k8s.io'], resources: ['ingressclasses'], verbs: ['list', 'watch'] },
    { apiGroups: ['scheduling.k8s.io'], resources: ['priorityclasses'], verbs: ['list', 'watch'] },
    { apiGroups: ['node.k8s.io'], resources: ['runtimeclasses'], verbs: ['list', 'watch'] },
    // Each isolated organization's AdminNetworkPolicy (owned by its Organization).
    {
      apiGroups: ['policy.networking.k8s.io'],
      resources: ['adminnetworkpolicies'],
      verbs: ['get', 'create', 'patch', 'delete'],
    },
    {
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['clusterroles', 'clusterrolebindings'],
      verbs: ['get', 'list', 'watch', 'create', 'patch'],
    },
  ],
  controllers: async (ctx) => (await import('./controllers/index.ts')).registerTenancyControllers(ctx),
  webhookRules: [
    {
      apiGroups: [group],
      resources: ['organizations', 'tenantusers', 'tenancyconfigs', 'usageprofiles'],
      verbs: ['get', 'list', 'watch'],
    },
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
    // Privileged bypass is granted through ClusterRoleBindings only, read from a cache.
    {
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['clusterrolebindings'],
      verbs: ['get', 'list', 'watch'],
    },
    // OpenShift only: default organizations annotated on User objects.
    { apiGroups: ['user.openshift.io'], resources: ['users'], verbs: ['get', 'list', 'watch'] },
    // Fair-use advice reads what namespaces' quotas report as used.
    { apiGroups: [''], resources: ['resourcequotas'], verbs: ['get', 'list', 'watch'] },
    // claim-volume reads, live, the volume a tenant's claim names, or every volume (is one reserved for
    // the claim, could the binder hand it an unreserved one?) and the claim's StorageClass.
    { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list'] },
    // The guardrails fill in an organization's default class where the cluster's default is not allowed.
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['networking.k8s.io'], resources: ['ingressclasses'], verbs: ['get', 'list', 'watch'] },
  ],
  // The namespace-quota ledger: one ConfigMap per organization, in tenantkit's namespace only.
  webhookNamespacedRules: [
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update'] },
  ],
  webhooks: async (ctx) => (await import('./admission/webhooks.ts')).tenancyWebhooks(ctx),
  consoleCalls: [
    // The organization page: organizations, a new namespace for one, its quotas and who has access.
    { methods: ['GET'], resource: organizations, namespaced: false, scope: 'collection' },
    { methods: ['GET'], resource: organizations, namespaced: false, scope: 'object' },
    { methods: ['POST'], resource: core('namespaces'), namespaced: false, scope: 'collection' },
    { methods: ['GET'], resource: core('resourcequotas'), namespaced: true, scope: 'collection' },
    {
      methods: ['GET'],
      resource: { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings' },
      namespaced: true,
      scope: 'collection',
    },
  ],
  devSeed: async (ctx) => (await import('./cli/dev-seed.ts')).seedExampleTenants(ctx),
};
