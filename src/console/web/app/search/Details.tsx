// A search result opened: its indexed properties, its YAML from the API server and its related objects.
import {
  Alert,
  Button,
  Card,
  CardBody,
  CardTitle,
  CodeBlock,
  CodeBlockCode,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  Spinner,
  Title,
} from '@patternfly/react-core';
import { useEffect, useState } from 'react';
import { stringify } from 'yaml';
import { pathOf } from '../generated/resources.ts';
import { type Api, ApiFailure } from '../shell/http.ts';

/** One object as the index holds it (Secret data is never indexed). */
export type Item = Record<string, unknown> & { kind?: string; name?: string; namespace?: string };

const relatedQuery = /* GraphQL */ `
  query Related($input: [SearchInput]) {
    search(input: $input) {
      related {
        kind
        count
        items
      }
    }
  }
`;

type Related = { kind: string; count: number; items: Item[] }[];

/** The object to find again: by kind, name and namespace (and cluster, when the index names one). */
function inputFor(item: Item) {
  const filters = [
    { property: 'kind', values: [String(item.kind ?? '')] },
    { property: 'name', values: [String(item.name ?? '')] },
  ];
  if (item.namespace) filters.push({ property: 'namespace', values: [String(item.namespace)] });
  if (item.cluster) filters.push({ property: 'cluster', values: [String(item.cluster)] });
  return [{ filters }];
}

/** Where the API server serves the object a search result stands for. */
function objectPath(item: Item): string {
  const kind = {
    group: item.apigroup ? String(item.apigroup) : '',
    version: String(item.apiversion ?? 'v1'),
    plural: String(item.kind_plural),
    kind: String(item.kind),
    namespaced: Boolean(item.namespace),
  };
  return pathOf(kind, item.namespace, String(item.name));
}

const isSecret = (item: Item) => item.kind === 'Secret' && !item.apigroup;

/** The object itself, read as the user from the API server, as YAML (bookkeeping fields left out). */
function Yaml({ api, item }: { api: Api; item: Item }) {
  const [text, setText] = useState<string | { error: string }>();
  useEffect(() => {
    let live = true;
    api.kube<Record<string, unknown> & { metadata?: Record<string, unknown> }>('GET', objectPath(item)).then(
      (object) => {
        const { managedFields: _, ...metadata } = object.metadata ?? {};
        if (live) setText(stringify({ ...object, metadata }));
      },
      (err: unknown) =>
        live &&
        setText({
          error:
            err instanceof ApiFailure && err.status === 403
              ? `You may not read this ${item.kind} itself: ${err.message}`
              : (err as Error).message,
        }),
    );
    return () => {
      live = false;
    };
  }, [api, item]);
  if (text === undefined) return <Spinner size="md" aria-label="Loading YAML" />;
  if (typeof text === 'object') return <Alert variant="warning" isInline title={text.error} />;
  return (
    <CodeBlock id="yaml">
      <CodeBlockCode>{text}</CodeBlockCode>
    </CodeBlock>
  );
}

/** A search result opened: its indexed properties, and the objects related to it that the user may see. */
export function Details({ api, item, onOpen }: { api: Api; item: Item; onOpen(item: Item): void }) {
  const [showYaml, setShowYaml] = useState(false);
  const [related, setRelated] = useState<Related | 'loading' | { error: string }>('loading');
  useEffect(() => {
    let live = true;
    setRelated('loading');
    api
      .search<{ search: { related: Related | null }[] }>(relatedQuery, { input: inputFor(item) })
      .then((data) => live && setRelated(data.search[0]?.related ?? []))
      .catch((err: unknown) => live && setRelated({ error: (err as Error).message }));
    return () => {
      live = false;
    };
  }, [api, item]);

  const properties = Object.entries(item)
    .filter(([k]) => !k.startsWith('_'))
    .sort(([a], [b]) => a.localeCompare(b));
  return (
    <Card id="details">
      <CardTitle component="h2">
        {item.kind} {item.namespace ? `${item.namespace}/` : ''}
        {item.name}
      </CardTitle>
      <CardBody>
        <DescriptionList isCompact isHorizontal>
          {properties.map(([k, v]) => (
            <DescriptionListGroup key={k}>
              <DescriptionListTerm>{k}</DescriptionListTerm>
              <DescriptionListDescription>
                {typeof v === 'string' ? v : JSON.stringify(v)}
              </DescriptionListDescription>
            </DescriptionListGroup>
          ))}
        </DescriptionList>
        {isSecret(item) ? (
          <p>A Secret's data is never shown here; use kubectl if you may read it.</p>
        ) : (
          <Button variant="secondary" id="show-yaml" onClick={() => setShowYaml((v) => !v)}>
            {showYaml ? 'Hide YAML' : 'YAML'}
          </Button>
        )}
        {showYaml && !isSecret(item) && <Yaml key={String(item._uid ?? item.name)} api={api} item={item} />}
        <Title headingLevel="h3">Related</Title>
        {related === 'loading' ? (
          <Spinner size="md" aria-label="Loading related resources" />
        ) : 'error' in related ? (
          <Alert variant="danger" isInline title={related.error} />
        ) : related.length === 0 ? (
          <p>No related resources you may see.</p>
        ) : (
          <ul id="related">
            {related.map((group) => (
              <li key={group.kind} data-kind={group.kind}>
                {group.kind} ({group.count}):{' '}
                {group.items.map((r) => (
                  <Button
                    key={`${r.namespace}/${r.name}`}
                    variant="link"
                    isInline
                    data-name={String(r.name)}
                    onClick={() => onOpen(r)}
                  >
                    {String(r.name)}
                  </Button>
                ))}
              </li>
            ))}
          </ul>
        )}
      </CardBody>
    </Card>
  );
}
