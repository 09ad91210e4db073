// Bounds on a GraphQL document, checked while it is parsed and before graphql-js validates it: graphql-js
// walks fragments recursively, so a chain of a few thousand nested fragments (about 200 KB) overflowed the
// stack in validation (an empty 500 over HTTP, close code 4500 over the websocket). A token budget bounds
// the size, and a depth bound that follows fragment spreads bounds the nesting; both answer with a code
// and the limit, as 400 over HTTP and as an error message over the websocket.
import {
  type DocumentNode,
  type FragmentDefinitionNode,
  GraphQLError,
  Kind,
  parse,
  type SelectionSetNode,
  type Source,
} from 'graphql';

/** Most tokens a document may have (ACM's console sends a few hundred). */
export const MaxTokens = 10_000;
/**
 * Most fragment definitions (ACM's console sends none or a few): graphql-js follows spreads recursively,
 * and a chain of 1,100 fragments already aborts its validation.
 */
export const MaxFragments = 100;
/** Deepest selection nesting, fragments expanded (ACM's deepest query nests 4). */
export const MaxDepth = 32;

const tooDeep = () =>
  new GraphQLError(
    `the query nests selections deeper than ${MaxDepth} levels (fragments expanded); flatten it`,
    { extensions: { code: 'QUERY_TOO_DEEP' } },
  );

/**
 * The depth of a selection set with fragment spreads expanded. Throws as soon as `depth` passes the
 * limit, so the recursion never goes deeper than MaxDepth frames; a fragment's own depth is kept once
 * known, so shared fragments cost once. Cycles are skipped here (validation reports them).
 */
function depthOf(
  set: SelectionSetNode,
  depth: number,
  fragments: Map<string, FragmentDefinitionNode>,
  known: Map<string, number>,
  visiting: Set<string>,
): number {
  if (depth > MaxDepth) throw tooDeep();
  let deepest = depth;
  for (const selection of set.selections) {
    let below = depth;
    if (selection.kind === Kind.FRAGMENT_SPREAD) {
      const name = selection.name.value;
      const fragment = fragments.get(name);
      if (!fragment || visiting.has(name)) continue;
      const own = known.get(name);
      if (own !== undefined) {
        below = depth + own;
        if (below > MaxDepth) throw tooDeep();
      } else {
        visiting.add(name);
        below = depthOf(fragment.selectionSet, depth, fragments, known, visiting);
        visiting.delete(name);
        known.set(name, below - depth);
      }
    } else if (selection.selectionSet) {
      below = depthOf(selection.selectionSet, depth + 1, fragments, known, visiting);
    }
    deepest = Math.max(deepest, below);
  }
  return deepest;
}

/** graphql's parse with the token budget and the depth bound. */
export function parseBounded(source: string | Source): DocumentNode {
  let document: DocumentNode;
  try {
    document = parse(source, { maxTokens: MaxTokens });
  } catch (err) {
    if (err instanceof GraphQLError && /contains more \w+ \d+ tokens/.test(err.message)) {
      throw new GraphQLError(`the query has more than ${MaxTokens} tokens; split it into several requests`, {
        extensions: { code: 'QUERY_TOO_LARGE' },
      });
    }
    throw err;
  }
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  }
  if (fragments.size > MaxFragments) {
    throw new GraphQLError(
      `the query defines ${fragments.size} fragments; at most ${MaxFragments} are allowed, so inline some of them`,
      { extensions: { code: 'QUERY_TOO_COMPLEX' } },
    );
  }
  const known = new Map<string, number>();
  for (const d of document.definitions) {
    if (d.kind === Kind.OPERATION_DEFINITION) depthOf(d.selectionSet, 1, fragments, known, new Set());
  }
  return document;
}
