// Services and ingresses. A service is `usedBy` the pods its selector matches (ACM's edge), resolved by
// the indexer from the labels of whatever pods are indexed, now or later; an ingress is `usedBy` the
// services it routes to (the same edge name the rest of tenantkit search uses for it).
import type { EdgeRef } from '../model.ts';
import type { Derived, KindTransform } from './derived.ts';
import { asArray, asName, asNumber, asStringMap, at } from './json.ts';

/** `80/TCP`, or `80:30080/TCP` with a node port, as ACM writes `port`. */
function servicePort(port: unknown): string | undefined {
  const number = asNumber(at(port, 'port'));
  if (number === undefined) return undefined;
  const protocol = asName(at(port, 'protocol')) ?? 'TCP';
  const nodePort = asNumber(at(port, 'nodePort'));
  return nodePort ? `${number}:${nodePort}/${protocol}` : `${number}/${protocol}`;
}

export const service: KindTransform = (o, ns) => {
  const properties: Derived['properties'] = { type: asName(at(o, 'spec', 'type')) ?? 'ClusterIP' };
  const clusterIP = asName(at(o, 'spec', 'clusterIP'));
  if (clusterIP) properties.clusterIP = clusterIP;
  const ports = asArray(at(o, 'spec', 'ports'))
    .map(servicePort)
    .filter((p): p is string => p !== undefined);
  if (ports.length > 0) properties.port = ports;
  const externalIPs = asArray(at(o, 'spec', 'externalIPs')).filter(
    (ip): ip is string => typeof ip === 'string',
  );
  if (externalIPs.length > 0) properties.externalIPs = externalIPs.join(',');
  // A service without a selector (or with an empty one) selects no pods: its endpoints are managed by hand.
  const selector = asStringMap(at(o, 'spec', 'selector'));
  const edges: EdgeRef[] =
    ns && selector && Object.keys(selector).length > 0
      ? [{ type: 'usedBy', kind: 'Pod', namespace: ns, selector }]
      : [];
  return { properties, edges };
};

export const ingress: KindTransform = (o, ns) => {
  const hosts = new Set<string>();
  const services = new Set<string>();
  const backend = (b: unknown) => {
    const name = asName(at(b, 'service', 'name'));
    if (name) services.add(name);
  };
  backend(at(o, 'spec', 'defaultBackend'));
  for (const rule of asArray(at(o, 'spec', 'rules'))) {
    const host = asName(at(rule, 'host'));
    if (host) hosts.add(host);
    for (const path of asArray(at(rule, 'http', 'paths'))) backend(at(path, 'backend'));
  }
  const properties: Derived['properties'] = {};
  if (hosts.size > 0) properties.host = [...hosts];
  const edges: EdgeRef[] = ns
    ? [...services].map((name) => ({ type: 'usedBy', kind: 'Service', namespace: ns, name }))
    : [];
  return { properties, edges };
};
