// Kubernetes time formats.

/** metav1.Time: RFC 3339 with seconds precision. */
export function timestamp(date = new Date()): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

/** metav1.MicroTime: RFC 3339 with microseconds (JavaScript has milliseconds; the rest is zero). */
export function microTime(date = new Date()): string {
  return `${date.toISOString().slice(0, 23)}000Z`;
}
