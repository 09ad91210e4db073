// The Backups tab: a namespace's NonAdminBackups and NonAdminRestores, with their actions.
import {
  Alert,
  Button,
  Card,
  CardBody,
  CardTitle,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
} from '@patternfly/react-core';
import { useCallback, useEffect, useState } from 'react';
import type { NonAdminBackup, NonAdminRestore } from '../../../../crds/backup.ts';
import type { DownloadTarget } from '../../../../crds/velero.ts';
import { apiVersionOf, pathOf, type Resource, resources } from '../generated/resources.ts';
import type { Api } from '../shell/http.ts';
import { InputForm } from '../shell/InputForm.tsx';
import { type Listed, ListView, useList } from '../shell/lists.tsx';
import { ResourceTable } from '../shell/ResourceTable.tsx';
import { BackupDialog, type DialogMode } from './BackupDialog.tsx';
import { LocationsCard, SchedulesCard } from './BackupSettings.tsx';
import { Download } from './Logs.tsx';

const RefreshMs = 3000;
const listPath = (namespace: string, kind: Resource) => (namespace ? pathOf(kind, namespace) : undefined);

/** Files Velero keeps for a backup or restore that a NonAdminDownloadRequest can fetch here. */
type FileKind = Extract<
  DownloadTarget['kind'],
  'BackupLog' | 'BackupResults' | 'RestoreLog' | 'RestoreResults'
>;

/** A backup or a restore: the two kinds this page follows while Velero works. */
type Operation = NonAdminBackup | NonAdminRestore;
type BackupStatus = NonNullable<NonAdminBackup['status']>;
type RestoreStatus = NonNullable<NonAdminRestore['status']>;

const phaseOf = (o: Operation) => String(o.status?.phase ?? 'New');
/** The Velero Backup or Restore behind the object, as its status reports it. */
const veleroOf = (o: Operation) => {
  const status:
    | { veleroBackup?: BackupStatus['veleroBackup']; veleroRestore?: RestoreStatus['veleroRestore'] }
    | undefined = o.status;
  return status?.veleroBackup ?? status?.veleroRestore;
};
/** Velero's own phase of the Backup or Restore behind the object (Completed, PartiallyFailed, ...). */
const veleroPhaseOf = (o: Operation) => {
  const ref = veleroOf(o);
  return ref?.status?.phase ? ` · ${ref.status.phase}` : '';
};
const queueOf = (o: Operation) => {
  const position = o.status?.queueInfo?.estimatedQueuePosition;
  return position ? ` (queue position ${position})` : '';
};

/** File-system volume backups or restores of the operation, by phase. */
type Transfer = BackupStatus['fileSystemPodVolumeBackups'] | RestoreStatus['fileSystemPodVolumeRestores'];

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/**
 * One line for a backup or restore: its phase, Velero's, the queue position, items and volume data done
 * so far, and why it failed (the first failed condition, or Velero's failure reason).
 */
function summaryOf(o: Operation, fs: Transfer): string {
  const parts = [`${phaseOf(o)}${veleroPhaseOf(o)}${queueOf(o)}`];
  const veleroStatus = veleroOf(o)?.status;
  // A Backup's progress counts items backed up, a Restore's items restored.
  const progress: { itemsBackedUp?: number; itemsRestored?: number; totalItems?: number } | null | undefined =
    veleroStatus?.progress;
  const items = progress?.itemsBackedUp ?? progress?.itemsRestored;
  if (progress?.totalItems) parts.push(`${items ?? 0}/${progress.totalItems} items`);
  if (fs?.total) {
    const bytes = fs.totalBytes ? `, ${mb(fs.bytesDone ?? 0)} of ${mb(fs.totalBytes)}` : '';
    parts.push(`volumes ${fs.completed ?? 0}/${fs.total}${bytes}${fs.failed ? `, ${fs.failed} failed` : ''}`);
  }
  const conditions = o.status?.conditions ?? [];
  const refused = conditions.find(
    (c) =>
      (c.type === 'Accepted' && c.status === 'False') || (c.type === 'ItemsRefused' && c.status === 'True'),
  );
  const reason = refused?.message ?? veleroStatus?.failureReason;
  if (reason) parts.push(reason);
  return parts.join(' · ');
}

/** A backup's or restore's files (log, results) to fetch, once Velero has taken it on. */
function FileButtons({
  of,
  files,
  onFetch,
}: {
  of: Operation;
  files: FileKind[];
  onFetch(file: { kind: FileKind; target: string }): void;
}) {
  return (
    <>
      {files.map((kind) => (
        <Button
          key={kind}
          variant="link"
          isDisabled={veleroPhaseOf(of) === ''}
          onClick={() => onFetch({ kind, target: of.metadata.name ?? '' })}
        >
          {kind.endsWith('Log') ? 'Logs' : 'Results'}
        </Button>
      ))}
    </>
  );
}

/**
 * The namespaces the user may use, from the Projects API (project.openshift.io/v1: tenantkit's search serves
 * it where the admin turned it on, OpenShift serves its own), one click each; nothing where neither does.
 */
function YourNamespaces({ api, onPick }: { api: Api; onPick(namespace: string): void }) {
  // Asked first whether the user may list projects at all, so that a cluster without the API (or a user
  // without the right) costs one review and no failed request.
  const [may, setMay] = useState(false);
  useEffect(() => {
    let live = true;
    api
      .kube<{ status?: { allowed?: boolean } }>('POST', pathOf(resources.SelfSubjectAccessReview), {
        apiVersion: apiVersionOf(resources.SelfSubjectAccessReview),
        kind: resources.SelfSubjectAccessReview.kind,
        spec: {
          resourceAttributes: {
            group: resources.Project.group,
            resource: resources.Project.plural,
            verb: 'list',
          },
        },
      })
      .then((review) => live && setMay(review.status?.allowed === true))
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [api]);
  const projects = useList(api, may ? pathOf(resources.Project) : undefined, 0);
  if (projects.state !== 'done' || projects.items.length === 0) return null;
  return (
    <div id="your-namespaces" className="your-namespaces">
      Your namespaces:{' '}
      {projects.items.map((p) => (
        <Button
          key={p.metadata.name}
          variant="link"
          isInline
          data-namespace={p.metadata.name}
          onClick={() => onPick(p.metadata.name!)}
        >
          {p.metadata.name}
        </Button>
      ))}
    </div>
  );
}

type Notice = { variant: 'success' | 'danger'; text: string };

/** Deletes a NonAdminBackup; says how that went. */
async function deleteBackup(api: Api, namespace: string, backup: string): Promise<Notice> {
  const what = `Backup ${backup} deleted`;
  try {
    await api.kube('DELETE', pathOf(resources.NonAdminBackup, namespace, backup));
    return { variant: 'success', text: what };
  } catch (err) {
    return { variant: 'danger', text: `${what} was refused: ${(err as Error).message}` };
  }
}

/** A counter that moves every RefreshMs while a namespace is shown (the lists refetch on it), or on demand. */
function useRefresh(namespace: string): [number, () => void] {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!namespace) return;
    const timer = setInterval(() => setTick((t) => t + 1), RefreshMs);
    return () => clearInterval(timer);
  }, [namespace]);
  const refresh = useCallback(() => setTick((t) => t + 1), []);
  return [tick, refresh];
}

export function BackupsPage({ api, initial }: { api: Api; initial: string }) {
  const [typed, setTyped] = useState(initial);
  const [namespace, setNamespace] = useState(initial);
  const [tick, refresh] = useRefresh(namespace);
  const [notice, setNotice] = useState<Notice>();
  const [deleting, setDeleting] = useState<string>();
  /** The one file being fetched (a backup's or a restore's log). */
  const [log, setLog] = useState<{ kind: FileKind; target: string }>();
  const [dialog, setDialog] = useState<DialogMode>();
  const backups = useList<NonAdminBackup>(api, listPath(namespace, resources.NonAdminBackup), tick);
  const restores = useList<NonAdminRestore>(api, listPath(namespace, resources.NonAdminRestore), tick);

  const remove = async (backup: string) => {
    setNotice(await deleteBackup(api, namespace, backup));
    refresh();
  };

  return (
    <div>
      <NamespacePicker
        api={api}
        typed={typed}
        onType={setTyped}
        onShow={(picked) => {
          setNamespace(picked);
          window.location.hash = `backups?${new URLSearchParams({ namespace: picked })}`;
        }}
      />
      {notice && <Alert id="backup-notice" variant={notice.variant} isInline title={notice.text} />}
      {log && (
        <Download
          key={`${log.kind}/${log.target}`}
          api={api}
          namespace={namespace}
          kind={log.kind}
          target={log.target}
          onClose={() => setLog(undefined)}
        />
      )}
      {dialog && (
        <BackupDialog
          api={api}
          namespace={namespace}
          mode={dialog}
          onClose={() => setDialog(undefined)}
          onCreated={(text) => {
            setDialog(undefined);
            setNotice({ variant: 'success', text });
            refresh();
          }}
        />
      )}
      {namespace && (
        <NamespaceBackups
          api={api}
          namespace={namespace}
          tick={tick}
          backups={backups}
          restores={restores}
          onDialog={setDialog}
          onFetch={setLog}
          onDelete={setDeleting}
        />
      )}
      <DeleteBackup
        name={deleting}
        onCancel={() => setDeleting(undefined)}
        onConfirm={(name) => {
          setDeleting(undefined);
          void remove(name);
        }}
      />
    </div>
  );
}

type FileFetch = (file: { kind: FileKind; target: string }) => void;

/** The namespace's NonAdminBackups, with what can be done to each. */
function BackupsCard({
  listed,
  namespace,
  onCreate,
  onRestore,
  onFetch,
  onDelete,
}: {
  listed: Listed<NonAdminBackup>;
  namespace: string;
  onCreate(): void;
  onRestore(backup: string): void;
  onFetch: FileFetch;
  onDelete(backup: string | undefined): void;
}) {
  return (
    <Card>
      <CardTitle component="h2">NonAdminBackups in {namespace}</CardTitle>
      <CardBody>
        <Button id="create-backup" onClick={onCreate}>
          Back up {namespace}
        </Button>
        <ListView
          listed={listed}
          kind="NonAdminBackups"
          namespace={namespace}
          render={(items) => (
            <ResourceTable
              detail="Phase"
              rows={items.map((b) => ({
                name: b.metadata.name ?? '',
                namespace,
                detail: summaryOf(b, b.status?.fileSystemPodVolumeBackups),
                actions: (
                  <>
                    <Button
                      variant="link"
                      isDisabled={veleroPhaseOf(b) !== ' · Completed'}
                      onClick={() => onRestore(b.metadata.name ?? '')}
                    >
                      Restore
                    </Button>
                    <FileButtons of={b} files={['BackupLog', 'BackupResults']} onFetch={onFetch} />
                    <Button variant="link" isDanger onClick={() => onDelete(b.metadata.name)}>
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
  );
}

/** The namespace's NonAdminRestores, with their logs and results. */
function RestoresCard({
  listed,
  namespace,
  onFetch,
}: {
  listed: Listed<NonAdminRestore>;
  namespace: string;
  onFetch: FileFetch;
}) {
  return (
    <Card id="restores">
      <CardTitle component="h2">NonAdminRestores in {namespace}</CardTitle>
      <CardBody>
        <ListView
          listed={listed}
          kind="NonAdminRestores"
          namespace={namespace}
          render={(items) => (
            <ResourceTable
              detail="Phase"
              rows={items.map((r) => ({
                name: r.metadata.name ?? '',
                namespace,
                detail: summaryOf(r, r.status?.fileSystemPodVolumeRestores),
                actions: <FileButtons of={r} files={['RestoreLog', 'RestoreResults']} onFetch={onFetch} />,
              }))}
            />
          )}
        />
      </CardBody>
    </Card>
  );
}

/** Asks before a backup is deleted (its data stays unless it was marked for deletion). */
function DeleteBackup({
  name,
  onCancel,
  onConfirm,
}: {
  name: string | undefined;
  onCancel(): void;
  onConfirm(name: string): void;
}) {
  return (
    <Modal isOpen={name !== undefined} onClose={onCancel} variant="small" aria-labelledby="delete-title">
      <ModalHeader title={`Delete backup ${name}?`} labelId="delete-title" />
      <ModalBody>
        The NonAdminBackup goes; its data stays in storage unless it was marked for deletion.
      </ModalBody>
      <ModalFooter>
        <Button
          variant="danger"
          id="confirm-delete"
          onClick={() => {
            if (name) onConfirm(name);
          }}
        >
          Delete
        </Button>
        <Button variant="link" onClick={onCancel}>
          Cancel
        </Button>
      </ModalFooter>
    </Modal>
  );
}

/** The namespace whose backups are shown: typed, or picked from the user's namespaces. */
function NamespacePicker({
  api,
  typed,
  onType,
  onShow,
}: {
  api: Api;
  typed: string;
  onType(value: string): void;
  onShow(namespace: string): void;
}) {
  return (
    <InputForm
      id="backup-namespace"
      label="Namespace"
      value={typed}
      onChange={onType}
      onSubmit={() => onShow(typed.trim())}
      button="Show"
      secondary
    >
      <YourNamespaces
        api={api}
        onPick={(picked) => {
          onType(picked);
          onShow(picked);
        }}
      />
    </InputForm>
  );
}

/** Everything of one namespace's: its backups, restores, schedules and storage locations. */
function NamespaceBackups({
  api,
  namespace,
  tick,
  backups,
  restores,
  onDialog,
  onFetch,
  onDelete,
}: {
  api: Api;
  namespace: string;
  tick: number;
  backups: Listed<NonAdminBackup>;
  restores: Listed<NonAdminRestore>;
  onDialog(mode: DialogMode): void;
  onFetch: FileFetch;
  onDelete(backup: string | undefined): void;
}) {
  return (
    <>
      <BackupsCard
        listed={backups}
        namespace={namespace}
        onRestore={(backup) => onDialog({ kind: 'restore', backup })}
        onFetch={onFetch}
        onDelete={onDelete}
        onCreate={() => onDialog({ kind: 'backup' })}
      />
      <RestoresCard listed={restores} namespace={namespace} onFetch={onFetch} />
      <SchedulesCard
        api={api}
        namespace={namespace}
        tick={tick}
        onCreate={() => onDialog({ kind: 'schedule' })}
      />
      <LocationsCard api={api} namespace={namespace} tick={tick} />
    </>
  );
}
