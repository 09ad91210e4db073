// Scoped RBAC: the scopes capability's one entry point (ScopeTemplate / ScopeInstance controllers, and
// the escalation guard declared in admission/webhooks.ts).
import type { Capability } from '../capability.ts';
import { scopesGroup as group } from './model.ts';

export const scopes: Capability = {
  name: 'scopes',
  controllerRules: [
    { apiGroups: [group], resources: ['scopetemplates', 'scopeinstances'], verbs: ['get', 'list', 'watch'] },
    {
      apiGroups: [group],
      resources: ['scopetemplates/status', 'scopeinstances/status'],
      verbs: ['patch', 'update'],
    },
    // Owner references with blockOwnerDeletion need update on the owner's finalizers where enforced.
    {
      apiGroups: [group],
      resources: ['scopetemplates/finalizers', 'scopeinstances/finalizers'],
      verbs: ['update'],
    },
    // escalate: the template's rules are not ours; bind: the instance's bindings point at those roles.
    // The escalation guard webhook is what keeps these two verbs from being a hole.
    {
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['clusterroles'],
      verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'escalate', 'bind'],
    },
    {
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['rolebindings', 'clusterrolebindings'],
      verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
    },
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
  ],
  webhookRules: [
    { apiGroups: [group], resources: ['scopetemplates'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  ],
  async controllers({ manager }) {
    const [{ registerTemplateController }, { registerInstanceController }] = await Promise.all([
      import('./controllers/template.ts'),
      import('./controllers/instance.ts'),
    ]);
    registerTemplateController(manager);
    registerInstanceController(manager);
  },
  webhooks: async (ctx) => (await import('./admission/webhooks.ts')).scopesWebhooks(ctx),
  consoleCalls: [
    {
      methods: ['GET'],
      resource: { group, version: 'v1alpha1', plural: 'scopeinstances' },
      namespaced: false,
      scope: 'collection',
    },
  ],
};
