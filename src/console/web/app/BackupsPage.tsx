import {
  Alert,
  Button,
  Card,
  CardBody,
  CardTitle,
  EmptyState,
  EmptyStateBody,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
  Spinner,
} from '@patternfly/react-core';
import { useCallback, useEffect, useState } from 'react';
import { type Api, ApiFailure, type KubeList, type KubeObject } from './api.ts';
import { InputForm } from './InputForm.tsx';
import { Download } from './Logs.tsx';
import { ResourceTable } from './ResourceTable.tsx';

const oadp = '/apis/oadp.openshift.io/v1alpha1';
const RefreshMs = 3000;

type Listed =
  | { state: 'loading' }
  | { state: 'error'; message: string; forbidden: boolean }
  | { state: 'done'; items: KubeObject[] };

/** A tenant kind's list in one namespace, read again every few seconds while shown. */
function useList(api: Api, namespace: string, plural: string, tick: number): Listed {
  const [listed, setListed] = useState<Listed>({ state: 'loading' });
  // `tick` is the clock that reads the list again.
  // biome-ignore lint/correctness/useExhaustiveDependencies: tick re-runs it on purpose
  useEffect(() => {
    if (!namespace) return;
    let live = true;
    api
      .kube<KubeList<KubeObject>>('GET', `${oadp}/namespaces/${namespace}/${plural}`)
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
  }, [api, namespace, plural, tick]);
  return listed;
}

const phaseOf = (o: KubeObject) => String(o.status?.phase ?? 'New');
/** Velero's own phase of the Backup or Restore behind the object (Completed, PartiallyFailed, ...). */
const veleroPhaseOf = (o: KubeObject) => {
  const ref = (o.status?.veleroBackup ?? o.status?.veleroRestore) as
    | { status?: { phase?: string } }
    | undefined;
  return ref?.status?.phase ? ` · ${ref.status.phase}` : '';
};
const queueOf = (o: KubeObject) => {
  const position = (o.status?.queueInfo as { estimatedQueuePosition?: number } | undefined)
    ?.estimatedQueuePosition;
  return position ? ` (queue position ${position})` : '';
};

export function BackupsPage({ api, initial }: { api: Api; initial: string }) {
  const [typed, setTyped] = useState(initial);
  const [namespace, setNamespace] = useState(initial);
  const [tick, setTick] = useState(0);
  const [notice, setNotice] = useState<{ variant: 'success' | 'danger'; text: string }>();
  const [deleting, setDeleting] = useState<string>();
  const [log, setLog] = useState<string>();
  const backups = useList(api, namespace, 'nonadminbackups', tick);
  const restores = useList(api, namespace, 'nonadminrestores', tick);

  useEffect(() => {
    if (!namespace) return;
    const timer = setInterval(() => setTick((t) => t + 1), RefreshMs);
    return () => clearInterval(timer);
  }, [namespace]);

  const act = useCallback(async (what: string, call: () => Promise<unknown>) => {
    try {
      await call();
      setNotice({ variant: 'success', text: what });
    } catch (err) {
      setNotice({ variant: 'danger', text: `${what} was refused: ${(err as Error).message}` });
    }
    setTick((t) => t + 1);
  }, []);

  const createBackup = () =>
    act('Backup requested', () =>
      api.kube('POST', `${oadp}/namespaces/${namespace}/nonadminbackups`, {
        apiVersion: 'oadp.openshift.io/v1alpha1',
        kind: 'NonAdminBackup',
        metadata: { generateName: 'console-' },
        spec: { backupSpec: {} },
      }),
    );
  const restore = (backup: string) =>
    act(`Restore of ${backup} requested`, () =>
      api.kube('POST', `${oadp}/namespaces/${namespace}/nonadminrestores`, {
        apiVersion: 'oadp.openshift.io/v1alpha1',
        kind: 'NonAdminRestore',
        metadata: { generateName: `${backup}-restore-` },
        spec: { restoreSpec: { backupName: backup } },
      }),
    );
  const remove = (backup: string) =>
    act(`Backup ${backup} deleted`, () =>
      api.kube('DELETE', `${oadp}/namespaces/${namespace}/nonadminbackups/${backup}`),
    );

  return (
    <div>
      <InputForm
        id="backup-namespace"
        label="Namespace"
        value={typed}
        onChange={setTyped}
        onSubmit={() => {
          setNamespace(typed.trim());
          window.location.hash = `backups?${new URLSearchParams({ namespace: typed.trim() })}`;
        }}
        button="Show"
        secondary
      />
      {notice && <Alert id="backup-notice" variant={notice.variant} isInline title={notice.text} />}
      {log && (
        <Download
          key={log}
          api={api}
          namespace={namespace}
          kind="BackupLog"
          target={log}
          onClose={() => setLog(undefined)}
        />
      )}
      {namespace && (
        <>
          <Card>
            <CardTitle component="h2">NonAdminBackups in {namespace}</CardTitle>
            <CardBody>
              <Button id="create-backup" onClick={() => void createBackup()}>
                Back up {namespace}
              </Button>
              <ListView
                listed={backups}
                kind="NonAdminBackups"
                namespace={namespace}
                render={(items) => (
                  <ResourceTable
                    detail="Phase"
                    rows={items.map((b) => ({
                      name: b.metadata.name ?? '',
                      namespace,
                      detail: `${phaseOf(b)}${veleroPhaseOf(b)}${queueOf(b)}`,
                      actions: (
                        <>
                          <Button
                            variant="link"
                            isDisabled={veleroPhaseOf(b) !== ' · Completed'}
                            onClick={() => void restore(b.metadata.name ?? '')}
                          >
                            Restore
                          </Button>
                          <Button
                            variant="link"
                            isDisabled={veleroPhaseOf(b) === ''}
                            onClick={() => setLog(b.metadata.name)}
                          >
                            Logs
                          </Button>
                          <Button variant="link" isDanger onClick={() => setDeleting(b.metadata.name)}>
                            Delete
                          </Button>
                        </>
                      ),
                    }))}
                  />
                )}
              />
            </CardBody>
          </Card>
          <Card>
            <CardTitle component="h2">NonAdminRestores in {namespace}</CardTitle>
            <CardBody>
              <ListView
                listed={restores}
                kind="NonAdminRestores"
                namespace={namespace}
                render={(items) => (
                  <ResourceTable
                    detail="Phase"
                    rows={items.map((r) => ({
                      name: r.metadata.name ?? '',
                      namespace,
                      detail: `${phaseOf(r)}${veleroPhaseOf(r)}${queueOf(r)}`,
                    }))}
                  />
                )}
              />
            </CardBody>
          </Card>
        </>
      )}
      <Modal
        isOpen={deleting !== undefined}
        onClose={() => setDeleting(undefined)}
        variant="small"
        aria-labelledby="delete-title"
      >
        <ModalHeader title={`Delete backup ${deleting}?`} labelId="delete-title" />
        <ModalBody>
          The NonAdminBackup goes; its data stays in storage unless it was marked for deletion.
        </ModalBody>
        <ModalFooter>
          <Button
            variant="danger"
            id="confirm-delete"
            onClick={() => {
              const name = deleting;
              setDeleting(undefined);
              if (name) void remove(name);
            }}
          >
            Delete
          </Button>
          <Button variant="link" onClick={() => setDeleting(undefined)}>
            Cancel
          </Button>
        </ModalFooter>
      </Modal>
    </div>
  );
}

function ListView({
  listed,
  kind,
  namespace,
  render,
}: {
  listed: Listed;
  kind: string;
  namespace: string;
  render(items: KubeObject[]): React.ReactNode;
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
