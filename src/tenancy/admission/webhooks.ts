// Every admission webhook of tenancy, declared in one place: names, rules, failure policies and the
// live switches (TenancyConfig.spec.disabledPolicies). Setup only: the reviews live beside this file.

import type { CapabilityContext } from '../../capability.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { allow } from '../../webhook/admission.ts';
import type { WebhookDefinition } from '../../webhook/registration.ts';
import { configSource } from '../caches/config.ts';
import { directory } from '../caches/directory.ts';
import { tenancyGroup as group, notForTenantsLabel, reservedLabel } from '../model.ts';
import { policiesOn } from '../policy/config.ts';
import { QuotaLedger } from '../quota/ledger.ts';
import { decidesVolume, validateClaimVolume } from './claim-volume.ts';
import {
  admitClaimGuardrails,
  admitIngressGuardrails,
  imageChanges,
  setsStorageClass,
  validatePodGuardrails,
} from './guardrails.ts';
import { privilegeChecker } from './identity.ts';
import { admitNewNamespace, validateNamespace } from './namespace-policy.ts';
import { admitPod } from './pod-policy.ts';
import { mutateProject, validateProjectRequest } from './project-policy.ts';
import { validateReservedObject } from './reserved-objects.ts';
import { validateTenancyConfig } from './tenancy-config.ts';

/** One admission rule: these operations on these resources of one group version. */
const matching = (
  operations: ('CREATE' | 'UPDATE' | 'DELETE')[],
  apiGroup: string,
  apiVersion: string,
  resources: string[],
) => [{ operations, apiGroups: [apiGroup], apiVersions: [apiVersion], resources }];

/** What the reviews read: the configuration, privilege, the directory, the ledger and the caches. */
function admissionParts({ client, manager, namespace }: CapabilityContext) {
  const config = configSource(manager, namespace);
  const privileged = privilegeChecker(manager);
  const dir = directory(manager);
  const quotas = manager.informer<KubeObject>(Resources.resourceQuotas);
  return {
    client,
    config,
    privileged,
    deps: { config, privileged, directory: dir, quota: new QuotaLedger(client, dir, manager, namespace) },
    podDeps: { config, privileged, directory: dir, quotas },
    guardrailDeps: {
      client,
      config,
      privileged,
      directory: dir,
      storageClasses: manager.informer<KubeObject>(Resources.storageClasses),
      ingressClasses: manager.informer<KubeObject>(Resources.ingressClasses),
      quotas,
    },
    // Pods of the control plane's and tenantkit's own namespaces never wait for these webhooks.
    notSystem: {
      matchExpressions: [
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn' as const,
          values: [
            ...new Set(['kube-system', 'kube-public', 'kube-node-lease', 'tenantkit-system', namespace]),
          ],
        },
      ],
    },
  };
}

type Parts = ReturnType<typeof admissionParts>;

const namespaces = (operations: ('CREATE' | 'UPDATE')[]) => [
  { operations, apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'] },
];
const pods = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];

/** A namespace's creation (organization and policy in one call) and its later changes. */
function namespaceWebhooks({ config, deps }: Parts): WebhookDefinition[] {
  return [
    {
      // A new namespace in one call: its organization filled in and the namespace policy checked on
      // the result (see admitNewNamespace); both switch off on their own.
      name: 'namespace-create',
      type: 'mutating',
      // Fail closed: ownership and quota are exactly what a tenant would gain from an outage.
      failurePolicy: 'Fail',
      timeoutSeconds: 10,
      rules: namespaces(['CREATE']),
      // Called again if a later mutating webhook changes the namespace: what is stored is checked.
      reinvocationPolicy: 'IfNeeded',
      // The namespace quota reserves a slot in its ledger, except on dry runs.
      sideEffects: 'NoneOnDryRun',
      handler: (req) =>
        admitNewNamespace(
          deps,
          req,
          policiesOn(config, { organization: 'namespace-organization', policy: 'namespace-policy' }),
        ),
    },
    {
      // Changes to a namespace (labels, transfers between organizations).
      name: 'namespace-policy',
      type: 'validating',
      // Fail closed: ownership and quota are exactly what a tenant would gain from an outage.
      failurePolicy: 'Fail',
      timeoutSeconds: 10,
      rules: namespaces(['UPDATE']),
      // A transfer reserves a slot in the receiving organization's quota, except on dry runs.
      sideEffects: 'NoneOnDryRun',
      handler: (req) => validateNamespace(deps, req),
    },
  ];
}

/** Every Pod of an organization's namespaces: defaults and advice, and the organization's guardrails. */
function podWebhooks({ config, podDeps, guardrailDeps, notSystem }: Parts): WebhookDefinition[] {
  return [
    {
      // Defaults and fair-use advice in one call (see admitPod); both switch off on their own.
      name: 'pod-defaults',
      type: 'mutating',
      // Fail open: an outage must not stop every workload in the cluster; it only skips defaults and
      // advice (which never denies).
      failurePolicy: 'Ignore',
      timeoutSeconds: 3,
      rules: pods,
      namespaceSelector: notSystem,
      reinvocationPolicy: 'IfNeeded',
      handler: (req) =>
        admitPod(podDeps, req, policiesOn(config, { defaults: 'pod-defaults', fairUse: 'pod-fair-use' })),
    },
    {
      // Images, priority and runtime classes of every Pod in an organization's namespaces, whoever
      // creates it: a workload controller's Pods too (so the control plane is not skipped here; the
      // namespace selector keeps the cluster's own namespaces out).
      name: 'pod-guardrails',
      type: 'validating',
      // Fail closed: an image from anywhere is what a tenant would gain from an outage.
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
      rules: matching(['CREATE', 'UPDATE'], '', 'v1', ['pods', 'pods/ephemeralcontainers']),
      namespaceSelector: {
        matchExpressions: [
          ...notSystem.matchExpressions,
          { key: notForTenantsLabel, operator: 'NotIn' as const, values: ['true'] },
        ],
      },
      includeControlPlane: true,
      // Updates matter only when an image changes (the API server allows no other container change).
      matchConditions: [imageChanges],
      handler: (req) => validatePodGuardrails(guardrailDeps, req),
    },
  ];
}

/** Claims, Ingresses, OpenShift's projects, the configuration and the objects tenantkit reserves. */
function objectWebhooks({ client, config, privileged, deps, guardrailDeps }: Parts): WebhookDefinition[] {
  return [
    {
      name: 'claim-guardrails',
      type: 'mutating',
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
      rules: matching(['CREATE', 'UPDATE'], '', 'v1', ['persistentvolumeclaims']),
      matchConditions: [setsStorageClass],
      reinvocationPolicy: 'IfNeeded',
      handler: (req) => admitClaimGuardrails(guardrailDeps, req),
    },
    {
      name: 'ingress-guardrails',
      type: 'mutating',
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
      rules: matching(['CREATE', 'UPDATE'], 'networking.k8s.io', 'v1', ['ingresses']),
      reinvocationPolicy: 'IfNeeded',
      handler: (req) => admitIngressGuardrails(guardrailDeps, req),
    },
    // OpenShift's project flow; these rules match nothing where project.openshift.io is not served.
    {
      name: 'projectrequest-organization',
      type: 'validating',
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
      rules: matching(['CREATE'], 'project.openshift.io', 'v1', ['projectrequests']),
      handler: (req) => validateProjectRequest(deps, req),
    },
    {
      name: 'project-organization',
      type: 'mutating',
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
      rules: matching(['CREATE'], 'project.openshift.io', 'v1', ['projects']),
      handler: (req) => mutateProject(deps, req),
    },
    {
      name: 'tenancy-config',
      type: 'validating',
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
      rules: matching(['CREATE', 'UPDATE'], group, 'v1alpha1', ['tenancyconfigs']),
      handler: validateTenancyConfig,
    },
    {
      name: 'claim-volume',
      type: 'validating',
      // Fail closed: a volume another tenant's data is on is what a tenant would gain from an outage.
      // Creates, and updates that fill in a volume name, are sent (decidesVolume); the rest never wait.
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
      rules: matching(['CREATE', 'UPDATE'], '', 'v1', ['persistentvolumeclaims']),
      matchConditions: [decidesVolume],
      handler: (req) => validateClaimVolume({ client, config, privileged }, req),
    },
    {
      name: 'reserved-quota',
      type: 'validating',
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
      rules: matching(['UPDATE', 'DELETE'], '', 'v1', ['resourcequotas', 'limitranges']),
      objectSelector: { matchLabels: { [reservedLabel]: 'true' } },
      handler: (req) => validateReservedObject(config, privileged, req),
    },
  ];
}

/**
 * Every policy but the configuration check itself can be switched off, live (the pod policies and the
 * namespace create check their switches themselves); the three guardrail webhooks switch off together.
 */
function switchable(definitions: WebhookDefinition[], config: Parts['config']): WebhookDefinition[] {
  const switchName = (d: WebhookDefinition) => (d.name.endsWith('-guardrails') ? 'guardrails' : d.name);
  return definitions.map((d) =>
    d.name === 'tenancy-config' || d.name === 'pod-defaults' || d.name === 'namespace-create'
      ? d
      : {
          ...d,
          handler: (req, signal) =>
            config().disabledPolicies.includes(switchName(d)) ? allow() : d.handler(req, signal),
        },
  );
}

export function tenancyWebhooks(ctx: CapabilityContext): WebhookDefinition[] {
  const parts = admissionParts(ctx);
  return switchable(
    [...namespaceWebhooks(parts), ...podWebhooks(parts), ...objectWebhooks(parts)],
    parts.config,
  );
}
