// Fields an admin declares sensitive are removed from each object before it is transformed, so no
// property, label, annotation or relationship can ever be derived from them.
//
// Syntax of one entry (the `--sensitive-field` flag, repeatable):
//
//   [<apiGroup>/]<Kind>:<path>
//
// - `<apiGroup>/` is omitted for the core group (`Pod:...`, `ConfigMap:...`); `*/` matches every group.
// - `<Kind>` is the object's kind (`Deployment`), or `*` for every kind; a lone `*` (no group) is every
//   kind of every group.
// - `<path>` names the field from the object's root, segments separated by `.`; a segment in brackets is
//   taken literally, for map keys that contain dots or slashes; `*` is every key of a map or every item
//   of a list.
//
// Examples:
//   apps/Deployment:spec.template.metadata.annotations.foo
//   *:metadata.annotations[vault.hashicorp.com/agent-inject-token]
//   */Secret:metadata.labels[team.example.com/cost-center]
//   Pod:status.podIP
import { asObject } from './json.ts';

export interface SensitiveField {
  /** '' for the core group, '*' for any. */
  group: string;
  /** '*' for any. */
  kind: string;
  path: string[];
  /** The entry as the admin wrote it, for logs. */
  source: string;
}

export class SensitiveFieldError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SensitiveFieldError';
  }
}

const example = 'e.g. apps/Deployment:spec.template.metadata.annotations.foo';

/** Parses one entry; throws SensitiveFieldError with what to change when it is malformed. */
export function parseSensitiveField(spec: string): SensitiveField {
  const colon = spec.indexOf(':');
  if (colon <= 0 || colon === spec.length - 1) {
    throw new SensitiveFieldError(
      `sensitive field "${spec}" must look like [<group>/]<Kind>:<path> (${example})`,
    );
  }
  const type = spec.slice(0, colon).trim();
  const slash = type.lastIndexOf('/');
  const group = type === '*' ? '*' : slash < 0 ? '' : type.slice(0, slash);
  const kind = slash < 0 ? type : type.slice(slash + 1);
  if (!kind || (slash >= 0 && !group)) {
    throw new SensitiveFieldError(
      `sensitive field "${spec}": name a kind (and a group before "/"; leave both out for the core group) (${example})`,
    );
  }
  return { group, kind, path: parsePath(spec, spec.slice(colon + 1).trim()), source: spec };
}

function parsePath(spec: string, text: string): string[] {
  const segments: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] === '[') {
      const end = text.indexOf(']', i);
      if (end < 0) throw new SensitiveFieldError(`sensitive field "${spec}": "[" without "]"`);
      segments.push(text.slice(i + 1, end));
      i = end + 1;
      if (i < text.length && text[i] !== '.' && text[i] !== '[') {
        throw new SensitiveFieldError(`sensitive field "${spec}": expected "." or "[" after "]"`);
      }
      if (text[i] === '.') i++;
      continue;
    }
    let end = i;
    while (end < text.length && text[end] !== '.' && text[end] !== '[') end++;
    segments.push(text.slice(i, end));
    i = end < text.length && text[end] === '.' ? end + 1 : end;
  }
  if (segments.length === 0 || segments.some((s) => s === '')) {
    throw new SensitiveFieldError(`sensitive field "${spec}": the path has an empty segment (${example})`);
  }
  return segments;
}

/** The entries that apply to objects of (group, kind). */
export function fieldsFor(fields: SensitiveField[], group: string, kind: string): SensitiveField[] {
  return fields.filter((f) => (f.group === '*' || f.group === group) && (f.kind === '*' || f.kind === kind));
}

/** Removes every listed field from `object`, in place. */
export function removeFields(object: unknown, fields: SensitiveField[]): void {
  for (const f of fields) removeAt(object, f.path, 0);
}

function removeAt(node: unknown, path: string[], i: number): void {
  const segment = path[i]!;
  const last = i === path.length - 1;
  if (Array.isArray(node)) {
    const indexes = segment === '*' ? node.map((_, j) => j) : /^\d+$/.test(segment) ? [Number(segment)] : [];
    for (const j of indexes) {
      if (j >= node.length) continue;
      // Items are blanked, not spliced: removing one must not shift which item another path names.
      if (last) node[j] = null;
      else removeAt(node[j], path, i + 1);
    }
    return;
  }
  const o = asObject(node);
  if (!o) return;
  const keys = segment === '*' ? Object.keys(o) : Object.hasOwn(o, segment) ? [segment] : [];
  for (const key of keys) {
    if (last) delete o[key];
    else removeAt(o[key], path, i + 1);
  }
}
