// Writing a key into a plain object as one of its own properties, whatever the key. `o[k] = v` with k
// `__proto__` does not add a key: it changes the object's prototype (an object value) or does nothing
// (any other value), so a key a tenant chose would vanish without a word. JSON.parse, the API server and
// Object.fromEntries all keep `__proto__` as an ordinary key; whoever copies their objects key by key
// must too.

/** Sets `key` on `object` as an own, enumerable, writable property (`__proto__` included). */
export function setOwn<T>(object: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') {
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    object[key] = value;
  }
}
