// A quota summed over an organization's namespaces (Organization spec.quota.hard, any resource a
// ResourceQuota counts: requests.cpu, limits.memory, requests.storage, pods, count/deployments.apps, ...),
// kept exact by Kubernetes itself: the organization's total is split into one ResourceQuota per namespace
// whose hard limits never add up to more than the total. Kubernetes' quota admission then holds each
// namespace to its part exactly, however many creates race in however many namespaces, so the sum of
// what they use cannot pass the total. The controller moves headroom between namespaces as their usage
// changes: it lowers a namespace's part only with a write conditioned on the quota object not having
// changed since it was read (Kubernetes counts each admitted object on that same object), and raises
// parts only after every lowering has landed, so the sum of the parts is within the total at every
// moment. The rules here are pure; the organization reconciler applies them (controllers/quota-sharing.ts).
import { parseQuantity } from '../../kube/quantity.ts';

export interface NamespacePart {
  namespace: string;
  /** Its ResourceQuota's hard limits now (absent: it has none yet). */
  hard?: Record<string, string>;
  /** What Kubernetes counts as used there now. */
  used: Record<string, string>;
}

export interface QuotaPlan {
  /** Each namespace's new hard limits. */
  parts: Map<string, Record<string, string>>;
  /** Per resource: the total, what all namespaces use together, and what is left. */
  summary: Record<string, { hard: string; used: string; remaining: string }>;
}

const amount = (text: string | undefined) => parseQuantity(text) ?? 0;

/** A quantity as Kubernetes writes it: whole units where whole, thousandths ("m") otherwise, never more. */
export function formatQuantity(value: number): string {
  if (value <= 0) return '0';
  if (Number.isInteger(value)) return String(value);
  return `${Math.floor(value * 1000 + 1e-6)}m`;
}

/**
 * The split of `total` over the namespaces: each keeps what it uses and gets an equal part of what is
 * left (in whole units for whole-unit totals, else thousandths); the parts never add up to more than the
 * total. A namespace using more than the total allows (the admin lowered it) keeps a part equal to its use.
 */
export function planQuota(total: Record<string, string>, given: NamespacePart[]): QuotaPlan {
  // The remainder of an uneven split goes to the namespaces with the least room left.
  const room = (n: NamespacePart) =>
    Math.min(...Object.keys(total).map((r) => amount(n.hard?.[r]) - amount(n.used[r])), Number.MAX_VALUE);
  const namespaces = [...given].sort((a, b) => room(a) - room(b) || a.namespace.localeCompare(b.namespace));
  const parts = new Map<string, Record<string, string>>(namespaces.map((n) => [n.namespace, {}]));
  const summary: QuotaPlan['summary'] = {};
  for (const [resource, text] of Object.entries(total)) {
    const limit = amount(text);
    const uses = namespaces.map((n) => amount(n.used[resource]));
    const used = uses.reduce((a, b) => a + b, 0);
    const free = Math.max(0, limit - used);
    // Counts (pods, count/...) and byte sizes move in whole units, CPU and fractional totals in thousandths.
    const whole = Number.isInteger(limit) && uses.every(Number.isInteger) && !resource.includes('cpu');
    const step = whole ? 1 : 0.001;
    const units = Math.floor(free / step + 1e-6);
    const n = namespaces.length;
    namespaces.forEach((ns, i) => {
      const extra = n === 0 ? 0 : Math.floor(units / n) + (i < units % n ? 1 : 0);
      parts.get(ns.namespace)![resource] = formatQuantity(uses[i]! + extra * step);
    });
    summary[resource] = {
      hard: text,
      used: formatQuantity(used),
      remaining: formatQuantity(free),
    };
  }
  return { parts, summary };
}

/** Whether `next` lowers any limit of `current` (or sets one where there was none): such a write waits. */
export function lowers(current: Record<string, string> | undefined, next: Record<string, string>): boolean {
  if (!current) return true;
  return Object.entries(next).some(([k, v]) => current[k] === undefined || amount(v) < amount(current[k]));
}

/** The least room (part minus use) any namespace has, per resource: what a new split should raise. */
function leastRoom(total: Record<string, string>, namespaces: NamespacePart[], parts?: QuotaPlan['parts']) {
  return Object.keys(total).map((resource) =>
    Math.min(
      ...namespaces.map(
        (n) => amount((parts?.get(n.namespace) ?? n.hard)?.[resource]) - amount(n.used[resource]),
      ),
    ),
  );
}

/**
 * Whether to write `plan`: always when a namespace lacks its part or has other resources than the total,
 * or the parts add up to another amount than the total; otherwise only when some namespace has less than a
 * quarter of an even share of what is left and the plan gives the namespace with the least room more.
 * So usage changes cost no write until a namespace runs low, and an uneven remainder does not move back
 * and forth between namespaces.
 */
export function worthSharing(
  total: Record<string, string>,
  namespaces: NamespacePart[],
  plan: QuotaPlan,
): boolean {
  if (namespaces.length === 0) return false;
  const resources = Object.keys(total).sort().join(',');
  if (namespaces.some((n) => !n.hard || Object.keys(n.hard).sort().join(',') !== resources)) return true;
  const before = leastRoom(total, namespaces);
  const after = leastRoom(total, namespaces, plan.parts);
  return Object.entries(total).some(([resource, text], i) => {
    const limit = amount(text);
    const parts = namespaces.reduce((sum, n) => sum + amount(n.hard?.[resource]), 0);
    if (Math.abs(parts - limit) > 1e-3 * namespaces.length + 1e-6) return true;
    const used = namespaces.reduce((sum, n) => sum + amount(n.used[resource]), 0);
    const low = Math.max((limit - used) / namespaces.length / 4, 1e-3);
    return before[i]! < low && after[i]! > before[i]! + 1e-6;
  });
}
