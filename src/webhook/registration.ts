// Webhook definitions and their registration as Validating/MutatingWebhookConfigurations.
import type { TSchema } from '@sinclair/typebox';
import type { KubeClient } from '../kube/client.ts';
import { type KubeObject, Resources } from '../kube/resources.ts';
import type { AdmissionHandler, Operation } from './admission.ts';

export interface RuleWithOperations {
  operations: (Operation | '*')[];
  apiGroups: string[];
  apiVersions: string[];
  resources: string[];
  scope?: 'Cluster' | 'Namespaced' | '*';
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }[];
}

export interface WebhookDefinition {
  /** Path segment and short name; registered as `<name>.tenantkit.io`. */
  name: string;
  type: 'validating' | 'mutating';
  handler: AdmissionHandler;
  rules: RuleWithOperations[];
  /** Fail (closed) where a tenant could gain from an outage; Ignore (open) for advice and defaults. */
  failurePolicy: 'Fail' | 'Ignore';
  timeoutSeconds?: number;
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  /** CEL conditions; all must be true for the webhook to be called. */
  matchConditions?: { name: string; expression: string }[];
  reinvocationPolicy?: 'Never' | 'IfNeeded';
  /** NoneOnDryRun for a handler that writes (a reservation) except on dry runs; default None. */
  sideEffects?: 'None' | 'NoneOnDryRun';
  /**
   * The schema of the object's spec (a CRD's), checked by the server before the handler runs, so the
   * handler never depends on the API server having checked it (an admin can edit a CRD's schema).
   */
  specSchema?: TSchema;
  /**
   * Also called for the control plane's own users (a workload controller creating a tenant's Pods): only
   * for a webhook whose namespace selector keeps the cluster's own namespaces out.
   */
  includeControlPlane?: boolean;
  /** Whether the object must have a spec (a CRD that requires one): a review without it is refused. */
  specRequired?: boolean;
}

export type WebhookEndpoint =
  | { url: string }
  | { service: { namespace: string; name: string; port: number } };

/**
 * Requests by the control plane's own components (and by tenantkit itself) never reach the webhooks,
 * so a webhook outage can never deadlock the cluster's own machinery.
 */
export const skipControlPlane = {
  name: 'not-control-plane',
  expression:
    "!(request.userInfo.username.startsWith('system:kube-') || request.userInfo.username == 'system:apiserver' || request.userInfo.username.startsWith('system:serviceaccount:kube-system:'))",
};

function clientConfig(endpoint: WebhookEndpoint, name: string, caBundle: string) {
  const ca = Buffer.from(caBundle).toString('base64');
  if ('url' in endpoint) return { url: `${endpoint.url.replace(/\/$/, '')}/${name}`, caBundle: ca };
  return { service: { ...endpoint.service, path: `/${name}` }, caBundle: ca };
}

function webhookEntry(def: WebhookDefinition, endpoint: WebhookEndpoint, caBundle: string) {
  return {
    name: `${def.name}.tenantkit.io`,
    clientConfig: clientConfig(endpoint, def.name, caBundle),
    rules: def.rules,
    failurePolicy: def.failurePolicy,
    matchPolicy: 'Equivalent',
    sideEffects: def.sideEffects ?? 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: def.timeoutSeconds ?? 5,
    namespaceSelector: def.namespaceSelector ?? {},
    objectSelector: def.objectSelector ?? {},
    matchConditions: [...(def.includeControlPlane ? [] : [skipControlPlane]), ...(def.matchConditions ?? [])],
    ...(def.type === 'mutating' ? { reinvocationPolicy: def.reinvocationPolicy ?? 'Never' } : {}),
  };
}

/** The two configuration objects that register `definitions` at `endpoint`. */
export function webhookConfigurations(
  configName: string,
  definitions: WebhookDefinition[],
  endpoint: WebhookEndpoint,
  caBundle: string,
): { validating: KubeObject; mutating: KubeObject } {
  const of = (type: WebhookDefinition['type']) =>
    definitions.filter((d) => d.type === type).map((d) => webhookEntry(d, endpoint, caBundle));
  return {
    validating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: configName, labels: { 'app.kubernetes.io/managed-by': 'tenantkit' } },
      webhooks: of('validating'),
    } as KubeObject,
    mutating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: configName, labels: { 'app.kubernetes.io/managed-by': 'tenantkit' } },
      webhooks: of('mutating'),
    } as KubeObject,
  };
}

/** Applies both configurations (server-side apply, so repeated registration is a no-op). */
export async function registerWebhooks(
  client: KubeClient,
  configName: string,
  definitions: WebhookDefinition[],
  endpoint: WebhookEndpoint,
  caBundle: string,
): Promise<void> {
  const { validating, mutating } = webhookConfigurations(configName, definitions, endpoint, caBundle);
  const options = { fieldManager: 'tenantkit-webhooks', force: true };
  await client.apply(Resources.validatingWebhookConfigurations, validating, options);
  await client.apply(Resources.mutatingWebhookConfigurations, mutating, options);
}
