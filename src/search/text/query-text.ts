// The search bar's text, as ACM's console reads it: `property:value1,value2` terms are filters (values
// OR-ed, filters AND-ed; the same property twice adds its values), anything else is a keyword.
import type { SearchFilter, SearchInput } from '../model.ts';

/** A property name as ACM writes them: letters, digits, `_`, `.`, `-` and `/` (e.g. label keys). */
const term = /^([A-Za-z_][\w./-]*):(.*)$/;

export function parseSearchText(text: string): SearchInput {
  const keywords: string[] = [];
  const filters = new Map<string, string[]>();
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const match = term.exec(word);
    if (!match) {
      keywords.push(word);
      continue;
    }
    const property = match[1]!;
    const values = match[2]!.split(',').filter((v) => v !== '');
    if (values.length === 0) {
      throw new Error(`"${word}" has no value: write ${property}:VALUE (several: ${property}:a,b)`);
    }
    filters.set(property, [...(filters.get(property) ?? []), ...values]);
  }
  const input: SearchInput = {};
  if (keywords.length > 0) input.keywords = keywords;
  if (filters.size > 0) {
    input.filters = [...filters].map(([property, values]): SearchFilter => ({ property, values }));
  }
  return input;
}
