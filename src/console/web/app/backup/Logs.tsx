// A backup's or restore's log or results, fetched through a NonAdminDownloadRequest.
import { Alert, Button, Spinner } from '@patternfly/react-core';
import { useEffect, useState } from 'react';
import type { NonAdminDownloadRequest } from '../../../../crds/backup.ts';
import type { DownloadTarget } from '../../../../crds/velero.ts';
import { apiVersionOf, pathOf, resources } from '../generated/resources.ts';
import { type Api, ApiFailure } from '../shell/http.ts';

const requests = resources.NonAdminDownloadRequest;
const PollMs = 1000;
const TimeoutMs = 60_000;

type State = { state: 'waiting' } | { state: 'ready'; url: string } | { state: 'error'; message: string };

/**
 * A file Velero wrote for a backup or restore (its log, by default), through a NonAdminDownloadRequest:
 * the request is made as the user, and the presigned URL Velero answers with is offered as a link. The
 * browser fetches it from object storage itself; the console never fetches a URL on anyone's behalf.
 */
export function useDownload(
  api: Api,
  namespace: string,
  kind: DownloadTarget['kind'],
  target: string,
): State {
  const [state, setState] = useState<State>({ state: 'waiting' });
  useEffect(() => {
    let live = true;
    const run = async () => {
      const request: NonAdminDownloadRequest = {
        apiVersion: apiVersionOf(requests),
        kind: requests.kind,
        metadata: { generateName: `${target.slice(0, 40)}-${kind.toLowerCase()}-` },
        spec: { target: { kind, name: target } },
      };
      const created = await api.kube<NonAdminDownloadRequest>('POST', pathOf(requests, namespace), request);
      const path = pathOf(requests, namespace, created.metadata.name);
      const deadline = Date.now() + TimeoutMs;
      while (live) {
        const { status } = await api.kube<NonAdminDownloadRequest>('GET', path);
        const url = status?.velero?.status?.downloadURL;
        if (url) return setState({ state: 'ready', url });
        if (status?.phase === 'BackingOff') {
          const why = status.conditions?.find((c) => c.type === 'Accepted')?.message ?? 'refused';
          return setState({ state: 'error', message: why });
        }
        if (Date.now() > deadline) {
          return setState({ state: 'error', message: `Velero did not answer within ${TimeoutMs / 1000} s` });
        }
        await new Promise((r) => setTimeout(r, PollMs));
      }
    };
    run().catch((err: unknown) => {
      if (live) setState({ state: 'error', message: err instanceof ApiFailure ? err.message : String(err) });
    });
    return () => {
      live = false;
    };
  }, [api, namespace, kind, target]);
  return state;
}

export function Download({
  api,
  namespace,
  kind,
  target,
  onClose,
}: {
  api: Api;
  namespace: string;
  kind: DownloadTarget['kind'];
  target: string;
  onClose(): void;
}) {
  const download = useDownload(api, namespace, kind, target);
  const title = `${kind} of ${target}`;
  if (download.state === 'waiting') {
    return (
      <Alert variant="info" isInline title={`Asking Velero for the ${title}…`} id="download">
        <Spinner size="sm" aria-label="Waiting for Velero" />
      </Alert>
    );
  }
  if (download.state === 'error') {
    return <Alert variant="danger" isInline title={`No ${title}: ${download.message}`} id="download" />;
  }
  return (
    <Alert
      variant="success"
      isInline
      id="download"
      title={`The ${title} is ready (gzip, from object storage; the link expires in a few minutes)`}
      actionLinks={
        <>
          <a id="download-link" href={download.url} target="_blank" rel="noreferrer noopener">
            Download
          </a>{' '}
          <Button variant="link" isInline onClick={onClose}>
            Close
          </Button>
        </>
      }
    />
  );
}
