// The dialog that creates a NonAdminBackup, NonAdminSchedule or NonAdminRestore.
import {
  Alert,
  Button,
  Checkbox,
  CodeBlock,
  CodeBlockCode,
  Form,
  FormGroup,
  FormHelperText,
  HelperText,
  HelperTextItem,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
  Spinner,
  TextInput,
} from '@patternfly/react-core';
import { useEffect, useState } from 'react';
import { stringify } from 'yaml';
import type {
  NonAdminBackup,
  NonAdminBackupConfig,
  NonAdminRestore,
  NonAdminSchedule,
} from '../../../../crds/backup.ts';
import { apiVersionOf, pathOf, type Resource, resources } from '../generated/resources.ts';
import { type Api, ApiFailure, type MaybeSpec } from '../shell/http.ts';

/** The one NonAdminBackupConfig tenantkit reads. */
const policyPath = pathOf(resources.NonAdminBackupConfig, undefined, 'cluster');

type Enforced = 'loading' | { values: Record<string, unknown> } | { unreadable: string };

/**
 * What the admin enforces on every backup (NonAdminBackupConfig `cluster`, which the chart lets every
 * signed-in user read): shown before the user submits, since those values win over the user's.
 */
function useEnforced(api: Api, restore: boolean): Enforced {
  const [enforced, setEnforced] = useState<Enforced>('loading');
  useEffect(() => {
    api.kube<MaybeSpec<NonAdminBackupConfig>>('GET', policyPath).then(
      (config) =>
        setEnforced({
          values: config.spec?.nonAdmin?.[restore ? 'enforceRestoreSpec' : 'enforceBackupSpec'] ?? {},
        }),
      (err: unknown) =>
        setEnforced({
          unreadable:
            err instanceof ApiFailure && err.status === 404
              ? 'non-admin backups are not configured in this cluster (no NonAdminBackupConfig "cluster")'
              : `your admin's enforced values cannot be read here (${(err as Error).message}); they apply when you submit and show in the backup's status`,
        }),
    );
  }, [api, restore]);
  return enforced;
}

/** What the dialog makes: a backup, a schedule of backups, or a restore of one backup. */
export type DialogMode = { kind: 'backup' } | { kind: 'schedule' } | { kind: 'restore'; backup: string };

/** The dialog's text fields, in order, and the modes that have them. */
const fields = [
  {
    key: 'name',
    label: 'Name',
    placeholder: 'generated when empty',
    modes: ['backup', 'schedule', 'restore'],
  },
  {
    key: 'cron',
    label: 'Schedule (cron)',
    placeholder: 'e.g. 0 3 * * * (daily at 03:00)',
    modes: ['schedule'],
  },
  { key: 'ttl', label: 'Keep for (ttl)', placeholder: 'e.g. 720h0m0s', modes: ['backup', 'schedule'] },
  {
    key: 'resources',
    label: 'Only these resources',
    placeholder: 'e.g. deployments, configmaps (all when empty)',
    modes: ['backup', 'schedule', 'restore'],
  },
  {
    key: 'location',
    label: 'Storage location',
    placeholder: "a NonAdminBackupStorageLocation of this namespace (the admin's default when empty)",
    modes: ['backup', 'schedule'],
  },
] as const;

const listOf = (text: string) =>
  text
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);

/** The object the user asks for, from the form, and its kind's resource. */
function requestOf(
  mode: DialogMode,
  form: { name: string; cron: string; ttl: string; resources: string; volumes: boolean; location: string },
): { resource: Resource; body: NonAdminBackup | NonAdminSchedule | NonAdminRestore } {
  const metadata = form.name.trim() ? { name: form.name.trim() } : { generateName: 'console-' };
  const object = (resource: Resource) => ({
    apiVersion: apiVersionOf(resource),
    kind: resource.kind,
    metadata,
  });
  if (mode.kind === 'restore') {
    const list = listOf(form.resources);
    const restoreSpec = { backupName: mode.backup, ...(list.length ? { includedResources: list } : {}) };
    const resource = resources.NonAdminRestore;
    return { resource, body: { ...object(resource), spec: { restoreSpec } } };
  }
  const backupSpec = backupSpecOf(form);
  if (mode.kind === 'schedule') {
    const resource = resources.NonAdminSchedule;
    const spec = { schedule: form.cron.trim(), template: { backupSpec } };
    return { resource, body: { ...object(resource), spec } };
  }
  const resource = resources.NonAdminBackup;
  return { resource, body: { ...object(resource), spec: { backupSpec } } };
}

function backupSpecOf(form: {
  ttl: string;
  resources: string;
  volumes: boolean;
  location: string;
}): NonAdminBackup['spec']['backupSpec'] {
  const list = listOf(form.resources);
  return {
    ...(form.ttl.trim() ? { ttl: form.ttl.trim() } : {}),
    ...(list.length ? { includedResources: list } : {}),
    ...(form.volumes ? { defaultVolumesToFsBackup: true } : {}),
    ...(form.location.trim() ? { storageLocation: form.location.trim() } : {}),
  };
}

const titles = {
  backup: (ns: string) => `Back up ${ns}`,
  schedule: (ns: string) => `Schedule backups of ${ns}`,
  restore: (ns: string) => `Restore into ${ns}`,
};

/**
 * Create a NonAdminBackup, NonAdminSchedule or NonAdminRestore in `namespace`: a few fields, the admin's
 * enforced values beside them, and the admission message in the dialog when refused.
 */
export function BackupDialog({
  api,
  namespace,
  mode,
  onClose,
  onCreated,
}: {
  api: Api;
  namespace: string;
  mode: DialogMode;
  onClose(): void;
  onCreated(message: string): void;
}) {
  const enforced = useEnforced(api, mode.kind === 'restore');
  const [form, setForm] = useState({
    name: '',
    cron: '0 3 * * *',
    ttl: '',
    resources: '',
    volumes: false,
    location: '',
  });
  const [refusal, setRefusal] = useState<string>();
  const [busy, setBusy] = useState(false);
  const set = (key: keyof typeof form) => (_e: unknown, value: string | boolean) =>
    setForm((f) => ({ ...f, [key]: value }));

  const submit = async () => {
    setBusy(true);
    setRefusal(undefined);
    const { resource, body } = requestOf(mode, form);
    try {
      const created = await api.kube<typeof body>('POST', pathOf(resource, namespace), body);
      onCreated(`${body.kind} ${created.metadata.name} created`);
    } catch (err) {
      setRefusal((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal isOpen onClose={onClose} variant="medium" aria-labelledby="backup-dialog-title">
      <ModalHeader
        title={`${titles[mode.kind](namespace)}${mode.kind === 'restore' ? ` from ${mode.backup}` : ''}`}
        labelId="backup-dialog-title"
      />
      <ModalBody>
        {refusal && <Alert id="backup-refusal" variant="danger" isInline title={`Refused: ${refusal}`} />}
        <Form
          id="backup-form"
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <DialogFields kind={mode.kind} form={form} set={set} />
          {mode.kind !== 'restore' && (
            <Checkbox
              id="backup-volumes"
              label="Back up volume data (file-system backup)"
              isChecked={form.volumes}
              onChange={set('volumes')}
            />
          )}
          <EnforcedValues enforced={enforced} restore={mode.kind === 'restore'} />
        </Form>
      </ModalBody>
      <ModalFooter>
        <Button type="submit" form="backup-form" id="backup-submit" isDisabled={busy} isLoading={busy}>
          {{ backup: 'Back up', schedule: 'Create schedule', restore: 'Restore' }[mode.kind]}
        </Button>
        <Button variant="link" onClick={onClose}>
          Cancel
        </Button>
      </ModalFooter>
    </Modal>
  );
}

/** What the admin enforces on every backup (or restore), beside the fields, or why it cannot be shown. */
function EnforcedValues({
  enforced,
  restore,
}: {
  enforced: ReturnType<typeof useEnforced>;
  restore: boolean;
}) {
  return (
    <FormGroup label="Enforced by your admin" fieldId="enforced">
      <div id="enforced">
        {enforced === 'loading' ? (
          <Spinner size="md" aria-label="Loading enforced values" />
        ) : 'unreadable' in enforced ? (
          <FormHelperText>
            <HelperText>
              <HelperTextItem>{enforced.unreadable}</HelperTextItem>
            </HelperText>
          </FormHelperText>
        ) : Object.keys(enforced.values).length === 0 ? (
          <p>Nothing: your values are used as they are.</p>
        ) : (
          <>
            <p>
              These values apply to every {restore ? 'restore' : 'backup'}; a different value of yours is
              refused.
            </p>
            <CodeBlock>
              <CodeBlockCode>{stringify(enforced.values)}</CodeBlockCode>
            </CodeBlock>
          </>
        )}
      </div>
    </FormGroup>
  );
}

/** The text fields of this kind of request. */
function DialogFields({
  kind,
  form,
  set,
}: {
  kind: DialogMode['kind'];
  form: Record<(typeof fields)[number]['key'], string>;
  set(key: (typeof fields)[number]['key']): (_e: unknown, value: string) => void;
}) {
  return (
    <>
      {fields
        .filter((f) => (f.modes as readonly string[]).includes(kind))
        .map((f) => (
          <FormGroup key={f.key} label={f.label} fieldId={`backup-${f.key}`}>
            <TextInput
              id={`backup-${f.key}`}
              value={form[f.key]}
              onChange={set(f.key)}
              placeholder={f.placeholder}
            />
          </FormGroup>
        ))}
    </>
  );
}
