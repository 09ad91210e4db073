// Pod defaults and fair-use advice, for pods in organization namespaces:
// - run-once pods (restartPolicy Never/OnFailure) without activeDeadlineSeconds get the namespace's
//   override annotation (bounded by the admin's maximum) or the configured default;
// - missing nodeSelector keys come from the namespace annotation (key=value,...) or the default;
// - a warning (never a denial) when the namespace's memory per requested CPU on a node class falls
//   below the fair-use ratio, counting what its ResourceQuotas already report as used.
import { ByNamespace, type Informer } from '../../kube/informer.ts';
import { parseQuantity } from '../../kube/quantity.ts';
import type { KubeObject } from '../../kube/resources.ts';
import { type AdmissionRequest, allow, deny, mutate, type Verdict } from '../../webhook/admission.ts';
import type { ConfigSource, Directory, EffectiveConfig, Namespace, PrivilegeCheck } from '../model.ts';

interface Container {
  name: string;
  resources?: { requests?: Record<string, string> };
}
export interface Pod extends KubeObject {
  spec: {
    restartPolicy?: string;
    activeDeadlineSeconds?: number;
    nodeSelector?: Record<string, string>;
    containers: Container[];
    initContainers?: Container[];
  };
}
interface ResourceQuota extends KubeObject {
  status?: { used?: Record<string, string> };
}

export interface PodPolicyDeps {
  config: ConfigSource;
  privileged: PrivilegeCheck;
  directory: Directory;
  quotas: Informer<ResourceQuota>;
}

/** The organization namespace a pod request is for, or undefined for namespaces we leave alone. */
function organizationNamespace(
  deps: PodPolicyDeps,
  config: EffectiveConfig,
  req: AdmissionRequest,
): Namespace | undefined {
  const ns = req.namespace ? deps.directory.namespace(req.namespace) : undefined;
  return ns?.metadata.labels?.[config.organizationLabel] ? ns : undefined;
}

export function parseSelector(text: string): Record<string, string> | string {
  const entries: [string, string][] = [];
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [key, value, extra] = part.split('=');
    if (!key || value === undefined || extra !== undefined) return `"${part}" is not key=value`;
    entries.push([key.trim(), value.trim()]);
  }
  // Own properties whatever the key: an assignment to `__proto__` would drop that pair without a word.
  return Object.fromEntries(entries);
}

/** The pod with the namespace's defaults filled in, or a denial when the namespace's annotations are bad. */
function defaultPod(
  config: EffectiveConfig,
  ns: Namespace,
  pod: Pod,
): { pod: Pod; warnings: string[] } | Verdict {
  // Only spec's own fields are set below: a copy of the object and its spec is enough, and the patch's
  // diff skips every part the copy shares with the request (same references).
  const mutated: Pod = { ...pod, spec: { ...pod.spec } };
  const warnings: string[] = [];
  const annotations = ns.metadata.annotations ?? {};

  const runOnce = pod.spec.restartPolicy === 'Never' || pod.spec.restartPolicy === 'OnFailure';
  if (runOnce && pod.spec.activeDeadlineSeconds === undefined) {
    let deadline = config.runOnceActiveDeadlineSeconds;
    const override = annotations[config.runOnceActiveDeadlineAnnotation];
    if (override !== undefined) {
      if (!/^\d+$/.test(override) || Number(override) < 1) {
        return deny(
          `pod defaults: namespace ${ns.metadata.name} has annotation ${config.runOnceActiveDeadlineAnnotation}="${override}", which is not a positive whole number of seconds; fix or remove the annotation, or set spec.activeDeadlineSeconds on the pod`,
          400,
          'BadRequest',
        );
      }
      deadline = Number(override);
      if (deadline > config.runOnceActiveDeadlineMaxSeconds) {
        warnings.push(
          `namespace override ${deadline}s for activeDeadlineSeconds exceeds the cluster maximum; using ${config.runOnceActiveDeadlineMaxSeconds}s`,
        );
        deadline = config.runOnceActiveDeadlineMaxSeconds;
      }
    }
    mutated.spec.activeDeadlineSeconds = deadline;
  }

  let defaults = config.defaultNodeSelector;
  const selectorText = annotations[config.nodeSelectorAnnotation];
  if (selectorText !== undefined) {
    const parsed = parseSelector(selectorText);
    if (typeof parsed === 'string') {
      return deny(
        `pod defaults: namespace ${ns.metadata.name} has annotation ${config.nodeSelectorAnnotation}="${selectorText}": ${parsed}; use key=value pairs separated by commas`,
        400,
        'BadRequest',
      );
    }
    defaults = parsed;
  }
  const selector = pod.spec.nodeSelector ?? {};
  const missing = Object.entries(defaults).filter(([k]) => !Object.hasOwn(selector, k));
  if (missing.length > 0)
    mutated.spec.nodeSelector = { ...pod.spec.nodeSelector, ...Object.fromEntries(missing) };
  return { pod: mutated, warnings };
}

/**
 * Both pod policies in one webhook call, so a Pod create waits for one round trip to tenantkit, not two:
 * the defaults (not for privileged users), then the fair-use advice on the defaulted pod (its node class
 * may come from the default node selector). Each policy can be switched off on its own.
 */
export function admitPod(
  deps: PodPolicyDeps,
  req: AdmissionRequest,
  policies: { defaults: boolean; fairUse: boolean },
): Verdict {
  if (req.operation !== 'CREATE') return allow();
  const config = deps.config();
  const ns = organizationNamespace(deps, config, req);
  if (!ns) return allow();
  const pod = req.object as Pod;
  // Not a Pod the API server would store (no spec object): nothing to default or advise on.
  if (typeof pod.spec !== 'object' || pod.spec === null || Array.isArray(pod.spec)) return allow();
  let defaulted: { pod: Pod; warnings: string[] } = { pod, warnings: [] };
  if (policies.defaults && !deps.privileged(req.userInfo, config)) {
    const result = defaultPod(config, ns, pod);
    if ('allowed' in result) return result;
    defaulted = result;
  }
  const advice = policies.fairUse ? fairUseAdvice(deps, config, ns, defaulted.pod) : undefined;
  return mutate(pod, defaulted.pod, advice ? [...defaulted.warnings, advice] : defaulted.warnings);
}

function requests(pod: Pod, resource: 'cpu' | 'memory'): number {
  const items = (list: unknown): Container[] =>
    Array.isArray(list) ? list.filter((c): c is Container => typeof c === 'object' && c !== null) : [];
  const sum = (list: Container[]) =>
    list.reduce((total, c) => total + (parseQuantity(c.resources?.requests?.[resource]) ?? 0), 0);
  // Init containers run one at a time before the others: the pod needs the larger of the two.
  return Math.max(sum(items(pod.spec.containers)), ...items(pod.spec.initContainers).map((c) => sum([c])));
}

const gib = 2 ** 30;

/** Fair-use advice (a warning, never a denial), or undefined when the pod keeps the namespace in its share. */
function fairUseAdvice(
  deps: PodPolicyDeps,
  config: EffectiveConfig,
  ns: Namespace,
  pod: Pod,
): string | undefined {
  if (config.fairUseRatios.length === 0) return undefined;
  const selector = pod.spec.nodeSelector ?? {};
  const rule =
    config.fairUseRatios.find(
      (r) =>
        Object.keys(r.nodeSelector ?? {}).length > 0 &&
        Object.entries(r.nodeSelector ?? {}).every(([k, v]) => selector[k] === v),
    ) ?? config.fairUseRatios.find((r) => Object.keys(r.nodeSelector ?? {}).length === 0);
  const ratio = parseQuantity(rule?.memoryPerCpu);
  if (!rule || !ratio) return undefined;
  // What the namespace already requests, as its quotas count it, plus this pod.
  let cpu = requests(pod, 'cpu');
  let memory = requests(pod, 'memory');
  const used = deps.quotas
    .byIndex(ByNamespace, ns.metadata.name!)
    .find((q) => q.status?.used?.['requests.cpu'])?.status?.used;
  cpu += parseQuantity(used?.['requests.cpu']) ?? 0;
  memory += parseQuantity(used?.['requests.memory']) ?? 0;
  if (cpu <= 0 || memory / cpu >= ratio) return undefined;
  const actual = (memory / cpu / gib).toFixed(2);
  const expected = (ratio / gib).toFixed(2);
  return `fair use: namespace ${ns.metadata.name} would request ${actual} GiB of memory per CPU, below the fair-use ratio of ${expected} GiB per CPU for this node class; CPU beyond the fair share may be billed extra`;
}
