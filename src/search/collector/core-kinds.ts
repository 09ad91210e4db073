// Nodes, namespaces and secrets, with ACM's property names.
import { parseQuantity } from '../../kube/quantity.ts';
import type { Derived, KindTransform } from './derived.ts';
import { asArray, asName, asString, asStringMap, at } from './json.ts';

/** Roles as `kubectl get nodes` shows them (node-role.kubernetes.io/<role>, kubernetes.io/role); ACM's default is worker. */
export function nodeRoles(labels: Record<string, string> | undefined): string[] {
  const roles = new Set<string>();
  for (const [key, value] of Object.entries(labels ?? {})) {
    if (key.startsWith('node-role.kubernetes.io/') && key.length > 'node-role.kubernetes.io/'.length) {
      roles.add(key.slice('node-role.kubernetes.io/'.length));
    } else if (key === 'kubernetes.io/role' && value) roles.add(value);
  }
  return roles.size > 0 ? [...roles].sort() : ['worker'];
}

export const node: KindTransform = (o) => {
  const properties: Derived['properties'] = {
    role: nodeRoles(asStringMap(at(o, 'metadata', 'labels'))),
  };
  const architecture = asName(at(o, 'status', 'nodeInfo', 'architecture'));
  if (architecture) properties.architecture = architecture;
  const osImage = asName(at(o, 'status', 'nodeInfo', 'osImage'));
  if (osImage) properties.osImage = osImage;
  const cpu = parseQuantity(asName(at(o, 'status', 'capacity', 'cpu')));
  if (cpu !== undefined) properties.cpu = Math.floor(cpu);
  for (const [property, field] of [
    ['memoryCapacity', 'capacity'],
    ['memoryAllocatable', 'allocatable'],
  ] as const) {
    const bytes = parseQuantity(asName(at(o, 'status', field, 'memory')));
    if (bytes !== undefined) properties[property] = Math.round(bytes);
  }
  const internal = asArray(at(o, 'status', 'addresses')).find((a) => at(a, 'type') === 'InternalIP');
  const ipAddress = asName(at(internal, 'address'));
  if (ipAddress) properties.ipAddress = ipAddress;
  const condition: Record<string, string> = {};
  for (const c of asArray(at(o, 'status', 'conditions'))) {
    const type = asName(at(c, 'type'));
    const status = asString(at(c, 'status'));
    if (type && status !== undefined) condition[type] = status;
  }
  if (Object.keys(condition).length > 0) properties.condition = condition;
  return { properties, edges: [] };
};

export const namespace: KindTransform = (o) => ({
  properties: { status: asName(at(o, 'status', 'phase')) ?? '' },
  edges: [],
});

/** Only the type: a secret's data never leaves the transform (it is deleted before anything reads it). */
export const secret: KindTransform = (o) => {
  // The API server always sets a type; it is missing only when an admin listed it as sensitive.
  const type = asName(at(o, 'type'));
  const properties: Derived['properties'] = {};
  if (type) properties.type = type;
  return { properties, edges: [] };
};
