// Every admission webhook of the scopes capability, declared in one place: the escalation guard of
// templates and instances (the reviews live in escalation.ts).

import type { CapabilityContext } from '../../capability.ts';
import { ScopeInstanceCrd, type ScopeTemplate, ScopeTemplateCrd } from '../../crds/scopes.ts';
import type { WebhookDefinition } from '../../webhook/registration.ts';
import { scopesGroup } from '../model.ts';
import { reviewInstance, reviewTemplate } from './escalation.ts';

export function scopesWebhooks({ client, manager }: CapabilityContext): WebhookDefinition[] {
  const templates = manager.informer<ScopeTemplate>(ScopeTemplateCrd.type);
  const rule = (resource: string) => ({
    operations: ['CREATE' as const, 'UPDATE' as const],
    apiGroups: [scopesGroup],
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
}
