// The search API's resolvers: each turns GraphQL arguments into one call on the backend, always within
// the caller's access set. Refusals the caller can fix come back as GraphQL errors with a code and a
// message saying what to change; anything else is logged and reported without internals.
import { randomUUID } from 'node:crypto';
import { GraphQLError, type GraphQLResolveInfo } from 'graphql';
import type { Logger } from 'pino';
import {
  type AccessSet,
  QueryError,
  type SearchBackend,
  type SearchEvent,
  type SearchInput,
  type SearchResult,
  type SearchUser,
} from '../model.ts';
import { resultSelection } from './selection.ts';

/** What each request carries: who asks and how to get their current access set. */
export type SearchContext = {
  user: SearchUser;
  /** The caller's access set now (cheap: cached until RBAC changes). */
  access(): AccessSet;
};

export interface Message {
  id: string;
  kind: 'information' | 'warning' | 'error';
  description: string;
}

export interface ResolverOptions {
  backend: SearchBackend;
  logger: Logger;
  /** Most SearchInputs in one `search` call (each is a separate query). */
  maxInputs: number;
  /** Conditions to report through `messages` (e.g. the index is still being filled). */
  messages?: () => Message[];
}

function asGraphQLError(err: unknown, logger: Logger, operation: string): GraphQLError {
  if (err instanceof GraphQLError) return err;
  if (err instanceof QueryError) return new GraphQLError(err.message, { extensions: { code: err.code } });
  // The caller gets an id to quote; the error's own text (JavaScript's, PostgreSQL's) stays in the log.
  const errorId = randomUUID().slice(0, 8);
  logger.error(
    { operation, errorId, err: err instanceof Error ? err.stack : String(err) },
    'search request failed',
  );
  return new GraphQLError(
    `the search service failed to answer (error ${errorId}); try again, and tell an admin if it persists`,
    { extensions: { code: 'INTERNAL', errorId } },
  );
}

async function guarded<T>(logger: Logger, operation: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw asGraphQLError(err, logger, operation);
  }
}

/**
 * PostgreSQL text cannot hold a NUL character, so no property, value or keyword with one can match:
 * refused here with tenantkit's own message instead of PostgreSQL's.
 */
function refuseNul(text: unknown, what: string): void {
  if (typeof text === 'string' && text.includes('\u0000')) {
    throw new QueryError(
      'BAD_VALUE',
      `${what} contains a NUL character (\\u0000), which nothing indexed can hold; remove it`,
    );
  }
}

function refuseNulIn(input: SearchInput): SearchInput {
  for (const k of input.keywords ?? []) refuseNul(k, 'a keyword');
  for (const f of input.filters ?? []) {
    refuseNul(f.property, 'a filter property');
    for (const v of f.values ?? []) refuseNul(v, `a value of filter ${JSON.stringify(f.property)}`);
  }
  refuseNul(input.orderBy, 'orderBy');
  for (const k of input.relatedKinds ?? []) refuseNul(k, 'a related kind');
  return input;
}

/** GraphQL hands absent list entries and fields over as null; the engine wants them absent. */
function cleanInput(input: SearchInput | null | undefined): SearchInput | undefined {
  if (!input) return undefined;
  return refuseNulIn(stripNulls(input));
}

function stripNulls(input: SearchInput): SearchInput {
  const out: SearchInput = {};
  if (input.keywords) out.keywords = input.keywords.filter((k): k is string => typeof k === 'string');
  if (input.filters) {
    out.filters = input.filters
      .filter((f) => f !== null && f !== undefined)
      .map((f) => ({
        property: f.property,
        values: (f.values ?? []).filter((v): v is string => typeof v === 'string'),
      }));
  }
  if (input.limit !== null && input.limit !== undefined) out.limit = input.limit;
  if (input.offset !== null && input.offset !== undefined) out.offset = input.offset;
  if (input.orderBy) out.orderBy = input.orderBy;
  if (input.relatedKinds) {
    out.relatedKinds = input.relatedKinds.filter((k): k is string => typeof k === 'string');
  }
  return out;
}

/** The root value for graphql-js: one function per Query and Subscription field. */
export function searchRoot(options: ResolverOptions) {
  const { backend, logger } = options;
  return {
    search: (
      args: { input?: (SearchInput | null)[] | null },
      ctx: SearchContext,
      info: GraphQLResolveInfo,
    ): Promise<SearchResult[]> =>
      guarded(logger, 'search', async () => {
        const inputs = (args.input ?? []).map((i) => cleanInput(i) ?? {});
        if (inputs.length > options.maxInputs) {
          throw new QueryError(
            'TOO_MANY_INPUTS',
            `one search may hold at most ${options.maxInputs} inputs (got ${inputs.length}); send several requests`,
          );
        }
        const selection = resultSelection(info);
        const access = ctx.access();
        return Promise.all(inputs.map((input) => backend.search(access, input, selection)));
      }),

    searchComplete: (
      args: { property: string; query?: SearchInput | null; limit?: number | null },
      ctx: SearchContext,
    ) =>
      guarded(logger, 'searchComplete', async () => {
        refuseNul(args.property, 'property');
        return backend.complete(ctx.access(), args.property, cleanInput(args.query), args.limit ?? undefined);
      }),

    searchSchema: (args: { query?: SearchInput | null }, ctx: SearchContext) =>
      guarded(logger, 'searchSchema', async () => ({
        allProperties: await backend.schema(ctx.access(), cleanInput(args.query)),
      })),

    messages: (): Message[] => options.messages?.() ?? [],

    watch: (
      args: { input?: SearchInput | null },
      ctx: SearchContext,
    ): AsyncIterableIterator<{ watch: SearchEvent }> => {
      const stop = new AbortController();
      let inner: AsyncIterator<SearchEvent>;
      try {
        inner = backend
          .watch(() => ctx.access(), cleanInput(args.input) ?? {}, stop.signal)
          [Symbol.asyncIterator]();
      } catch (err) {
        throw asGraphQLError(err, logger, 'watch');
      }
      // graphql-ws ends a subscription by calling return(); it must stop the wait for the next change at
      // once, which a generator function cannot do while it is suspended in an await.
      const iterator: AsyncIterableIterator<{ watch: SearchEvent }> = {
        async next() {
          const step = await inner.next();
          return step.done ? { done: true, value: undefined } : { done: false, value: { watch: step.value } };
        },
        async return() {
          stop.abort();
          await inner.return?.();
          return { done: true, value: undefined };
        },
        [Symbol.asyncIterator]() {
          return iterator;
        },
      };
      return iterator;
    },
  };
}
