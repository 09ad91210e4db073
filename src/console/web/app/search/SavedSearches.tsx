// Searches a user keeps, in a ConfigMap of a namespace they pick.
import { Alert, Button, Card, CardBody, CardTitle, List, ListItem } from '@patternfly/react-core';
import { useEffect, useState } from 'react';
import { SavedSearchesConfigMap } from '../../../model.ts';
import { apiVersionOf, pathOf, resources } from '../generated/resources.ts';
import { type Api, ApiFailure, type KubeObject } from '../shell/http.ts';
import { InputForm } from '../shell/InputForm.tsx';

type Saved = { name: string; query: string };
type ConfigMap = KubeObject & { data?: Record<string, string> };

/** The user's key in the ConfigMap: their name, base64url (a key allows letters, digits, `-`, `_`, `.`). */
function keyOf(username: string): string {
  const bytes = new TextEncoder().encode(username);
  const text = btoa(String.fromCharCode(...bytes));
  return `user-${text.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')}`;
}

const configMaps = resources.ConfigMap;

function parse(text: string | undefined): Saved[] {
  try {
    const list = JSON.parse(text ?? '[]') as Saved[];
    return Array.isArray(list)
      ? list.filter((s) => typeof s.name === 'string' && typeof s.query === 'string')
      : [];
  } catch {
    return [];
  }
}

/** The namespace's saved-searches ConfigMap, or undefined when nobody saved a search there yet. */
async function loadSaved(api: Api, namespace: string): Promise<ConfigMap | undefined> {
  try {
    return await api.kube<ConfigMap>('GET', pathOf(configMaps, namespace, SavedSearchesConfigMap));
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 404) return undefined;
    throw err;
  }
}

/**
 * Puts `entry` in the user's list (replacing one of the same name) with the ConfigMap's resourceVersion, so
 * another user's save in between is never lost: on a conflict it reads again and retries, three times in
 * all. Returns the list as stored.
 */
async function storeSearch(api: Api, namespace: string, key: string, entry: Saved): Promise<Saved[]> {
  for (let attempt = 0; ; attempt++) {
    try {
      const cm = await loadSaved(api, namespace);
      const list = [...parse(cm?.data?.[key]).filter((s) => s.name !== entry.name), entry];
      const data = { ...cm?.data, [key]: JSON.stringify(list) };
      if (cm) await api.kube('PUT', pathOf(configMaps, namespace, SavedSearchesConfigMap), { ...cm, data });
      else {
        await api.kube('POST', pathOf(configMaps, namespace), {
          apiVersion: apiVersionOf(configMaps),
          kind: configMaps.kind,
          metadata: { name: SavedSearchesConfigMap },
          data,
        });
      }
      return list;
    } catch (err) {
      if (err instanceof ApiFailure && err.status === 409 && attempt < 2) continue;
      throw err;
    }
  }
}

/**
 * Searches a user keeps, in ConfigMap tenantkit-saved-searches of a namespace they pick (their own entry,
 * under a key of their name). Saving reads the ConfigMap and writes it back with its resourceVersion, so
 * another user's save in between is never lost: the write fails and is tried again on the fresh copy.
 */
export function SavedSearches({
  api,
  username,
  query,
  initialNamespace,
  onRun,
}: {
  api: Api;
  username: string;
  query: string;
  initialNamespace: string;
  onRun(query: string): void;
}) {
  const [typed, setTyped] = useState(initialNamespace);
  const [namespace, setNamespace] = useState(initialNamespace);
  const [saved, setSaved] = useState<Saved[]>([]);
  const [name, setName] = useState('');
  const [problem, setProblem] = useState<string>();
  const key = keyOf(username);

  useEffect(() => {
    if (!namespace) return;
    setProblem(undefined);
    loadSaved(api, namespace)
      .then((cm) => setSaved(parse(cm?.data?.[key])))
      .catch((err: unknown) => {
        setSaved([]);
        setProblem(
          err instanceof ApiFailure && err.status === 403
            ? `You may not read saved searches in ${namespace}`
            : (err as Error).message,
        );
      });
  }, [api, key, namespace]);

  const save = async () => {
    setProblem(undefined);
    try {
      setSaved(await storeSearch(api, namespace, key, { name, query }));
      setName('');
    } catch (err) {
      setProblem(`Not saved: ${(err as Error).message}`);
    }
  };

  return (
    <Card id="saved-searches" isCompact>
      <CardTitle component="h2">Saved searches</CardTitle>
      <CardBody>
        <InputForm
          id="saved-namespace"
          label="Kept in namespace"
          value={typed}
          onChange={setTyped}
          onSubmit={() => setNamespace(typed.trim())}
          button="Open"
          buttonId="saved-open"
          secondary
        />
        {problem && <Alert variant="warning" isInline title={problem} />}
        {namespace && !problem && (
          <>
            <SavedList namespace={namespace} saved={saved} onRun={onRun} />
            <InputForm
              id="save-name"
              label="Save this search as"
              placeholder="Name this search"
              value={name}
              onChange={setName}
              onSubmit={() => void save()}
              button="Save"
              buttonId="save-search"
              disabled={!name.trim() || !query.trim()}
            />
          </>
        )}
      </CardBody>
    </Card>
  );
}

/** The searches saved in the namespace, each run by a click. */
function SavedList({
  namespace,
  saved,
  onRun,
}: {
  namespace: string;
  saved: Saved[];
  onRun(query: string): void;
}) {
  return saved.length === 0 ? (
    <p>No saved searches in {namespace} yet.</p>
  ) : (
    <List id="saved-list">
      {saved.map((s) => (
        <ListItem key={s.name}>
          <Button variant="link" isInline data-name={s.name} onClick={() => onRun(s.query)}>
            {s.name}
          </Button>{' '}
          <code>{s.query}</code>
        </ListItem>
      ))}
    </List>
  );
}
