// The Search tab: a search box over the RBAC-aware search API, live results grouped by kind.
import {
  Alert,
  Button,
  Card,
  CardBody,
  CardTitle,
  EmptyState,
  EmptyStateBody,
  Label,
  LabelGroup,
  Spinner,
} from '@patternfly/react-core';
import { useEffect, useState } from 'react';
import { parseSearchText } from '../../../../search/text/query-text.ts';
import { shortAge } from '../../../../search/text/table.ts';
import type { Api, SearchEvent } from '../shell/http.ts';
import { InputForm } from '../shell/InputForm.tsx';
import { ResourceTable, type Row } from '../shell/ResourceTable.tsx';
import { Details, type Item } from './Details.tsx';
import { SavedSearches } from './SavedSearches.tsx';

const searchQuery = /* GraphQL */ `
  query Search($input: [SearchInput]) {
    search(input: $input) {
      count
      items
    }
  }
`;
const completeQuery = /* GraphQL */ `
  query Complete($property: String!, $query: SearchInput) {
    searchComplete(property: $property, query: $query, limit: 10)
  }
`;

/** Answers so far: each result list carries its number. */
let answers = 0;

type Outcome =
  | { state: 'idle' }
  | { state: 'loading' }
  | { state: 'error'; message: string }
  | { state: 'done'; count: number; items: Item[]; seq: number; input: unknown };

type Live = 'connecting' | 'live' | { error: string };

/** Results after one change: an insert joins them, an update replaces its item, a delete removes it. */
function applyEvent(
  outcome: Extract<Outcome, { state: 'done' }>,
  event: SearchEvent,
): Extract<Outcome, { state: 'done' }> {
  const rest = outcome.items.filter((i) => i._uid !== event.uid);
  const removed = outcome.items.length - rest.length;
  if (event.operation === 'DELETE') return { ...outcome, items: rest, count: outcome.count - removed };
  if (!event.newData) return outcome;
  const item = { ...event.newData, _uid: event.uid } as Item;
  const items = removed > 0 ? outcome.items.map((i) => (i._uid === event.uid ? item : i)) : [...rest, item];
  return { ...outcome, items, count: outcome.count + (removed > 0 ? 0 : 1) };
}

/** Results grouped by kind, kinds in order of name. */
function byKind(items: Item[]): [string, Item[]][] {
  const groups = new Map<string, Item[]>();
  for (const item of items) {
    const kind = String(item.kind ?? 'Unknown');
    groups.set(kind, [...(groups.get(kind) ?? []), item]);
  }
  return [...groups].sort(([a], [b]) => a.localeCompare(b));
}

type Done = Extract<Outcome, { state: 'done' }>;

/**
 * Keeps the answer `watched` current through the search API's watch subscription (one per answer), and
 * says whether the subscription is live.
 */
function useLiveResults(
  api: Api,
  watched: Done | undefined,
  setOutcome: (update: (current: Outcome) => Outcome) => void,
): Live {
  const [live, setLive] = useState<Live>('connecting');
  // biome-ignore lint/correctness/useExhaustiveDependencies: one subscription per answer (its seq)
  useEffect(() => {
    if (!watched) return;
    setLive('connecting');
    const stop = api.watch(
      watched.input,
      (event) => {
        setLive('live');
        setOutcome((current) => (current.state === 'done' ? applyEvent(current, event) : current));
      },
      (message) => setLive({ error: message }),
    );
    // The subscription is up once the server has it; the first event may take long, so say so at once.
    const timer = setTimeout(() => setLive((l) => (l === 'connecting' ? 'live' : l)), 500);
    return () => {
      clearTimeout(timer);
      stop();
    };
  }, [api, watched?.seq]);

  return live;
}

/** Suggestions for the word being typed: `property:` completes values of that property. */
function useSuggestions(api: Api, text: string) {
  const [suggestions, setSuggestions] = useState<{ property: string; values: string[] }>();
  useEffect(() => {
    const last = text.split(/\s+/).at(-1) ?? '';
    const match = /^([A-Za-z_][\w./-]*):([^,]*)$/.exec(last);
    if (!match) {
      setSuggestions(undefined);
      return;
    }
    const property = match[1]!;
    const typed = match[2]!;
    const timer = setTimeout(async () => {
      try {
        const data = await api.search<{ searchComplete: string[] | null }>(completeQuery, { property });
        const values = (data.searchComplete ?? []).filter((v) => v.startsWith(typed)).slice(0, 10);
        setSuggestions({ property, values });
      } catch {
        setSuggestions(undefined);
      }
    }, 200);
    return () => clearTimeout(timer);
  }, [text, api]);

  return [suggestions, setSuggestions] as const;
}

export function SearchPage({
  api,
  username,
  initial,
  savedIn,
}: {
  api: Api;
  username: string;
  initial: string;
  savedIn: string;
}) {
  const [text, setText] = useState(initial);
  const [outcome, setOutcome] = useState<Outcome>({ state: 'idle' });
  const [selected, setSelected] = useState<Item>();

  const run = async (query: string) => {
    setText(query);
    window.location.hash = `search?${new URLSearchParams({ q: query })}`;
    setOutcome({ state: 'loading' });
    setSelected(undefined);
    try {
      const input = parseSearchText(query);
      const data = await api.search<{ search: { count: number; items: Item[] }[] }>(searchQuery, {
        input: [{ ...input, limit: 1000 }],
      });
      const result = data.search[0] ?? { count: 0, items: [] };
      setOutcome({ state: 'done', count: result.count, items: result.items, seq: ++answers, input });
    } catch (err) {
      setOutcome({ state: 'error', message: (err as Error).message });
    }
  };

  // Open results stay current: the search API's watch subscription, as this user, for the same query.
  const live = useLiveResults(api, outcome.state === 'done' ? outcome : undefined, setOutcome);

  // A shared link runs its search at once.
  // biome-ignore lint/correctness/useExhaustiveDependencies: only on arrival
  useEffect(() => {
    if (initial) void run(initial);
  }, []);

  const [suggestions, setSuggestions] = useSuggestions(api, text);

  const pick = (property: string, value: string) => {
    const words = text.split(/\s+/);
    words[words.length - 1] = `${property}:${value}`;
    setText(`${words.join(' ')} `);
    setSuggestions(undefined);
  };

  return (
    <div>
      <InputForm
        id="search-query"
        label="Search"
        placeholder="kind:Pod namespace:team-a, or any words"
        value={text}
        onChange={setText}
        onSubmit={() => void run(text)}
        button="Search"
        buttonId="search-submit"
      >
        {suggestions && <Suggestions {...suggestions} onPick={pick} />}
      </InputForm>
      <SavedSearches
        api={api}
        username={username}
        query={text}
        initialNamespace={savedIn}
        onRun={(q) => void run(q)}
      />
      {selected && <Details api={api} item={selected} onOpen={setSelected} />}
      <SearchResults outcome={outcome} live={live} onOpen={setSelected} />
    </div>
  );
}

function SearchResults({
  outcome,
  live,
  onOpen,
}: {
  outcome: Outcome;
  live: Live;
  onOpen(item: Item): void;
}) {
  if (outcome.state === 'idle') return null;
  if (outcome.state === 'loading') return <Spinner aria-label="Searching" />;
  if (outcome.state === 'error') return <Alert variant="danger" isInline title={outcome.message} />;
  if (outcome.items.length === 0) {
    return (
      <EmptyState titleText="No resources found" headingLevel="h2">
        <EmptyStateBody>Nothing you may list matches this search.</EmptyStateBody>
      </EmptyState>
    );
  }
  return (
    // data-seq changes with every answer (tests and the benchmark wait for a new one).
    <div id="search-results" data-seq={outcome.seq}>
      <p>
        {outcome.count} results{' '}
        {live === 'live' ? (
          <Label id="live-indicator" color="green" isCompact>
            Live
          </Label>
        ) : typeof live === 'object' ? (
          <Label id="live-indicator" color="orange" isCompact title={live.error}>
            Not updating: {live.error}
          </Label>
        ) : null}
      </p>
      {byKind(outcome.items).map(([kind, items]) => (
        <KindGroup key={kind} kind={kind} items={items} onOpen={onOpen} />
      ))}
    </div>
  );
}

/** An object's age as kubectl prints it, its creation time on hover. */
function Age({ created, now }: { created: unknown; now: number }) {
  const at = typeof created === 'string' ? created : undefined;
  return <span title={at}>{shortAge(at, now)}</span>;
}

/** Rows a kind shows before "Show all": a page renders fast however many results come back. */
const FirstRows = 20;

function KindGroup({ kind, items, onOpen }: { kind: string; items: Item[]; onOpen(item: Item): void }) {
  const [all, setAll] = useState(false);
  const shown = all ? items : items.slice(0, FirstRows);
  // A kind whose objects have a status shows it; the others show their age, as kubectl does.
  const hasStatus = items.some((i) => i.status !== undefined && i.status !== '');
  const now = Date.now();
  return (
    <Card data-kind={kind}>
      <CardTitle component="h2">
        {kind} ({items.length})
      </CardTitle>
      <CardBody>
        <ResourceTable
          rows={shown.map(
            (i): Row => ({
              name: String(i.name ?? ''),
              onOpen: () => onOpen(i),
              namespace: String(i.namespace ?? ''),
              detail: hasStatus ? String(i.status ?? '') : <Age created={i.created} now={now} />,
            }),
          )}
          detail={hasStatus ? 'Status' : 'Age'}
        />
        {shown.length < items.length && (
          <Button variant="link" className="show-all" onClick={() => setAll(true)}>
            Show all {items.length} {kind} results
          </Button>
        )}
      </CardBody>
    </Card>
  );
}

/** Values the search API knows for the property being typed, each put in the query by a click. */
function Suggestions({
  property,
  values,
  onPick,
}: {
  property: string;
  values: string[];
  onPick(property: string, value: string): void;
}) {
  if (values.length === 0) return null;
  return (
    <LabelGroup categoryName={`${property}:`} id="search-suggestions">
      {values.map((v) => (
        <Label key={v} onClick={() => onPick(property, v)}>
          {v}
        </Label>
      ))}
    </LabelGroup>
  );
}
