// What a kind-specific transform adds to the common properties of an object.
import type { EdgeRef } from '../model.ts';

/** A property value as the index stores it (ACM's value types). */
export type PropertyValue = string | number | boolean | string[] | Record<string, string>;

export interface Derived {
  properties: Record<string, PropertyValue>;
  edges: EdgeRef[];
}

/** Reads an object (after sensitive fields are removed) and returns its kind's properties and edges. */
export type KindTransform = (object: Record<string, unknown>, namespace: string | undefined) => Derived;
