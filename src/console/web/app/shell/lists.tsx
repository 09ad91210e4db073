// Reading a list from the API server and showing its states (loading, forbidden, empty, the items).
import { Alert, EmptyState, EmptyStateBody, Spinner } from '@patternfly/react-core';
import { useEffect, useState } from 'react';
import { type Api, ApiFailure, type KubeList, type KubeObject } from './http.ts';

export type Listed<T extends KubeObject> =
  | { state: 'loading' }
  | { state: 'error'; message: string; forbidden: boolean }
  | { state: 'done'; items: T[] };

/** A list at `path` (an API server collection of `T`s), read again whenever `tick` changes. */
export function useList<T extends KubeObject>(api: Api, path: string | undefined, tick: number): Listed<T> {
  const [listed, setListed] = useState<Listed<T>>({ state: 'loading' });
  // biome-ignore lint/correctness/useExhaustiveDependencies: tick re-runs it on purpose
  useEffect(() => {
    if (!path) return;
    let live = true;
    api
      .kube<KubeList<T>>('GET', path)
      .then((list) => live && setListed({ state: 'done', items: list.items }))
      .catch(
        (err: unknown) =>
          live &&
          setListed({
            state: 'error',
            message: (err as Error).message,
            forbidden: err instanceof ApiFailure && err.status === 403,
          }),
      );
    return () => {
      live = false;
    };
  }, [api, path, tick]);
  return listed;
}

/** A list's states: loading, "you may not list", "none found", or the items rendered. */
export function ListView<T extends KubeObject>({
  listed,
  kind,
  namespace,
  render,
}: {
  listed: Listed<T>;
  kind: string;
  namespace: string;
  render(items: T[]): React.ReactNode;
}) {
  if (listed.state === 'loading') return <Spinner size="md" aria-label={`Loading ${kind}`} />;
  if (listed.state === 'error') {
    return (
      <Alert
        variant={listed.forbidden ? 'warning' : 'danger'}
        isInline
        title={listed.forbidden ? `You may not list ${kind} in ${namespace}` : listed.message}
      />
    );
  }
  if (listed.items.length === 0) {
    return (
      <EmptyState titleText={`No ${kind} found`} headingLevel="h3">
        <EmptyStateBody>There are none in {namespace} yet.</EmptyStateBody>
      </EmptyState>
    );
  }
  return <>{render(listed.items)}</>;
}
