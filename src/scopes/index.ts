// Scoped RBAC: ScopeTemplate / ScopeInstance controllers and their escalation guard.
import { ScopeInstanceCrd, type ScopeTemplate, ScopeTemplateCrd } from '../api/scopes.ts';
import type { Capability } from '../capability.ts';
import { reviewInstance, reviewTemplate } from './escalation.ts';
import { registerInstanceController } from './instance-controller.ts';
import { registerTemplateController } from './template-controller.ts';

const group = 'operators.coreos.com';

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
  controllers({ manager }) {
    registerTemplateController(manager);
    registerInstanceController(manager);
  },
  webhooks({ client, manager }) {
    const templates = manager.informer<ScopeTemplate>(ScopeTemplateCrd.type);
    const rule = (resource: string) => ({
      operations: ['CREATE' as const, 'UPDATE' as const],
      apiGroups: ['operators.coreos.com'],
      apiVersions: ['v1alpha1'],
      resources: [resource],
    });
    return [
      {
        name: 'scopetemplates-escalation',
        type: 'validating',
        // Fail closed: an outage must not let anyone grant what they do not hold.
        failurePolicy: 'Fail',
        timeoutSeconds: 10,
        rules: [rule('scopetemplates')],
        specSchema: ScopeTemplateCrd.spec,
        specRequired: true,
        handler: (req) => reviewTemplate(client, req),
      },
      {
        name: 'scopeinstances-escalation',
        type: 'validating',
        failurePolicy: 'Fail',
        timeoutSeconds: 10,
        rules: [rule('scopeinstances')],
        specSchema: ScopeInstanceCrd.spec,
        specRequired: true,
        handler: (req) => reviewInstance(client, templates, req),
      },
    ];
  },
};
