// Which parts of a SearchResult the client asked for, read from the query itself, so that the engine
// runs only the SQL those parts need (a count-only query never fetches items, and so on).
import type { FieldNode, FragmentDefinitionNode, GraphQLResolveInfo, SelectionSetNode } from 'graphql';
import type { ResultSelection } from '../model.ts';

type Fragments = Record<string, FragmentDefinitionNode>;

/** Sub-fields selected under `sets`, by response name, following fragments (directives are ignored). */
function subFields(sets: (SelectionSetNode | undefined)[], fragments: Fragments): Map<string, FieldNode[]> {
  const fields = new Map<string, FieldNode[]>();
  const visit = (set: SelectionSetNode | undefined, seen: Set<string>) => {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === 'Field') {
        const name = selection.name.value;
        fields.set(name, [...(fields.get(name) ?? []), selection]);
      } else if (selection.kind === 'InlineFragment') {
        visit(selection.selectionSet, seen);
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        visit(fragments[selection.name.value]?.selectionSet, seen);
      }
    }
  };
  for (const set of sets) visit(set, new Set());
  return fields;
}

export function resultSelection(info: GraphQLResolveInfo): ResultSelection {
  const top = subFields(
    info.fieldNodes.map((f) => f.selectionSet),
    info.fragments,
  );
  const related = top.get('related');
  let relatedSelection: ResultSelection['related'] = false;
  if (related) {
    const inner = subFields(
      related.map((f) => f.selectionSet),
      info.fragments,
    );
    relatedSelection = { items: inner.has('items'), count: inner.has('count') };
  }
  return { items: top.has('items'), count: top.has('count'), related: relatedSelection };
}
