// Pure pieces of download requests and the backup/restore command line: target kinds, admission of
// targets, expiry, label selectors, flags to specs, describe output.
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reviewNonAdminDownloadRequest } from '../../src/backup/admission/download.ts';
import { backupCommand, backupKind } from '../../src/backup/cli/backup.ts';
import { describeBackup, describeRestore } from '../../src/backup/cli/describe.ts';
import { maybeGunzip } from '../../src/backup/cli/download.ts';
import { restoreCommand, restoreKind } from '../../src/backup/cli/restore.ts';
import { explain, renderRows } from '../../src/backup/cli/shared.ts';
import {
  backupSpecFromFlags,
  formatSelector,
  normalizeOptionalBooleans,
  parseSelector,
  restoreSpecFromFlags,
} from '../../src/backup/cli/spec.ts';
import { operationTable } from '../../src/backup/cli/verbs.ts';
import { type Caches, resolveTarget } from '../../src/backup/controllers/download/resolve.ts';
import { Annotations, Labels } from '../../src/backup/model.ts';
import { msUntilExpiry, targetOwner, targetProblems } from '../../src/backup/policy/nadr-target.ts';
import type { NonAdminBackup, NonAdminDownloadRequest, NonAdminRestore } from '../../src/crds/backup.ts';
import { downloadTargetKinds } from '../../src/crds/velero.ts';
import { ApiError } from '../../src/kube/client.ts';
import type { Informer } from '../../src/kube/informer.ts';
import type { KubeObject } from '../../src/kube/resources.ts';
import type { AdmissionRequest } from '../../src/webhook/admission.ts';

describe('download targets', () => {
  it('maps every Velero kind to the non-admin kind its name refers to', () => {
    for (const kind of downloadTargetKinds) {
      expect(targetOwner(kind), kind).toBe(kind.startsWith('Restore') ? 'NonAdminRestore' : 'NonAdminBackup');
    }
    expect(targetOwner('SecretKeys')).toBeUndefined();
  });

  it('says what is wrong with a target and how to fix it', () => {
    expect(targetProblems({ kind: 'BackupLog', name: 'nightly' })).toEqual([]);
    expect(targetProblems({ kind: 'BackupLog', name: '' })).toEqual([
      'spec.target.name is required: the name of a NonAdminBackup in this namespace',
    ]);
    const [kindProblem] = targetProblems({ kind: 'Nope', name: 'x' });
    expect(kindProblem).toContain(
      'spec.target.kind "Nope" is not a Velero download kind: use one of BackupLog,',
    );
    expect(targetProblems(undefined)).toHaveLength(2);
  });

  it('counts down to the expiration, then says 0', () => {
    const now = Date.parse('2026-11-23T13:00:00Z');
    expect(msUntilExpiry('2026-11-23T13:10:00Z', now)).toBe(600_000);
    expect(msUntilExpiry('2026-11-23T12:59:00Z', now)).toBe(0);
    expect(msUntilExpiry(undefined, now)).toBeUndefined();
    expect(msUntilExpiry('soon', now)).toBeUndefined();
  });

  it('admits well-formed requests and keeps an accepted target fixed', () => {
    const object = (target: { kind: string; name: string }, accepted?: boolean) =>
      ({
        metadata: { name: 'r', namespace: 'shop' },
        spec: { target },
        ...(accepted ? { status: { phase: 'Created' } } : {}),
      }) as NonAdminDownloadRequest;
    const review = (op: 'CREATE' | 'UPDATE', o: NonAdminDownloadRequest, old?: NonAdminDownloadRequest) =>
      reviewNonAdminDownloadRequest({
        operation: op,
        object: o,
        ...(old ? { oldObject: old } : {}),
      } as AdmissionRequest<NonAdminDownloadRequest>);
    expect(review('CREATE', object({ kind: 'BackupLog', name: 'n' })).allowed).toBe(true);
    expect(review('CREATE', object({ kind: 'RestoreLog', name: '' })).message).toBe(
      'spec.target.name is required: the name of a NonAdminRestore in this namespace',
    );
    const accepted = object({ kind: 'BackupLog', name: 'n' }, true);
    expect(review('UPDATE', object({ kind: 'BackupLog', name: 'other' }), accepted).message).toContain(
      'spec.target cannot change after the request was accepted',
    );
    expect(review('UPDATE', accepted, accepted).allowed).toBe(true);
  });
});

describe('command line', () => {
  it('parses kubectl label selectors and writes them back', () => {
    const s = parseSelector('app=web,tier!=db,env in (a, b),ready,!legacy,x==y');
    expect(s).toEqual({
      matchLabels: { app: 'web', x: 'y' },
      matchExpressions: [
        { key: 'tier', operator: 'NotIn', values: ['db'] },
        { key: 'env', operator: 'In', values: ['a', 'b'] },
        { key: 'ready', operator: 'Exists' },
        { key: 'legacy', operator: 'DoesNotExist' },
      ],
    });
    expect(formatSelector(s)).toBe('app=web,x=y,tier notin (db),env in (a,b),ready,!legacy');
    expect(formatSelector(undefined)).toBe('<none>');
    expect(() => parseSelector('bad key=1')).toThrow('invalid label selector');
  });

  it('turns backup flags into a backupSpec, refusing what Velero would', () => {
    expect(
      backupSpecFromFlags({
        'include-resources': ['configmaps,secrets', 'deployments.apps'],
        ttl: '72h',
        'snapshot-volumes': false,
        'storage-location': 'mine',
        'parallel-files-upload': '4',
      }),
    ).toEqual({
      includedResources: ['configmaps', 'secrets', 'deployments.apps'],
      ttl: '72h',
      snapshotVolumes: false,
      storageLocation: 'mine',
      uploaderConfig: { parallelFilesUpload: 4 },
    });
    expect(backupSpecFromFlags({})).toEqual({});
    expect(() => backupSpecFromFlags({ ttl: '3 days' })).toThrow('invalid --ttl "3 days"');
    expect(() =>
      backupSpecFromFlags({ 'include-resources': ['a'], 'exclude-namespace-scoped-resources': ['b'] }),
    ).toThrow('cannot be used together');
  });

  it('turns restore flags into a restoreSpec naming a NonAdminBackup', () => {
    expect(restoreSpecFromFlags({ 'from-backup': 'nightly', 'existing-resource-policy': 'update' })).toEqual({
      backupName: 'nightly',
      existingResourcePolicy: 'update',
    });
    expect(() => restoreSpecFromFlags({})).toThrow('--from-backup is required');
    expect(() => restoreSpecFromFlags({ 'from-backup': 'n', 'existing-resource-policy': 'merge' })).toThrow(
      'give none or update',
    );
  });

  it("takes velero's --flag=false spelling of optional booleans", () => {
    expect(
      normalizeOptionalBooleans(['--snapshot-volumes=false', '--wait', '--x=1'], ['snapshot-volumes']),
    ).toEqual(['--no-snapshot-volumes', '--wait', '--x=1']);
    expect(() => normalizeOptionalBooleans(['--snapshot-volumes=maybe'], ['snapshot-volumes'])).toThrow(
      'give true or false',
    );
  });

  it("prints API errors as kubectl's one line", () => {
    const forbidden = new ApiError(
      403,
      'Forbidden',
      'nonadminbackups.oadp.openshift.io is forbidden: User "alice" cannot list resource "nonadminbackups"',
      {},
    );
    expect(explain(forbidden).message).toBe(
      'Error from server (Forbidden): nonadminbackups.oadp.openshift.io is forbidden: User "alice" cannot list resource "nonadminbackups"',
    );
    expect(explain(new ApiError(400, '', 'line one\n  line two', {})).message).toBe(
      'Error from server (HTTP 400): line one line two',
    );
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    expect(explain(refused, new URL('https://127.0.0.1:6443')).message).toBe(
      'cannot reach the API server at https://127.0.0.1:6443: ECONNREFUSED; check your kubeconfig',
    );
  });

  it('renders a kubectl-style table', () => {
    expect(
      renderRows(
        ['NAME', 'STATUS'],
        [
          ['nightly', 'Completed'],
          ['a', 'New'],
        ],
      ),
    ).toBe('NAME      STATUS\nnightly   Completed\na         New\n');
  });

  it('gunzips only what is gzip', () => {
    expect(maybeGunzip(gzipSync('hello')).toString()).toBe('hello');
    expect(maybeGunzip(Buffer.from('plain')).toString()).toBe('plain');
  });

  it('describes a backup as velero does, with the resource list and results when given', () => {
    const nab = {
      metadata: { name: 'nightly', namespace: 'shop' },
      spec: { backupSpec: {} },
      status: {
        phase: 'Created',
        veleroBackup: {
          name: 'shop-nightly-1',
          namespace: 'velero',
          spec: { includedNamespaces: ['shop'], ttl: '720h0m0s' },
          status: {
            phase: 'PartiallyFailed',
            errors: 1,
            warnings: 0,
            startTimestamp: '2026-11-23T13:00:00Z',
            progress: { totalItems: 3, itemsBackedUp: 2 },
          },
        },
        fileSystemPodVolumeBackups: {
          total: 2,
          new: 0,
          inProgress: 0,
          failed: 1,
          completed: 1,
          bytesDone: 3 * 2 ** 20,
          totalBytes: 5 * 2 ** 20,
          failures: [{ name: 'web-0/data', message: 'pod volume is not mounted' }],
        },
      },
    } as NonAdminBackup;
    const brief = describeBackup(nab);
    expect(brief).toContain(
      'File-system volume backups:  1 of 2 completed, 1 failed, 3.0 of 5.0 MiB\n  failed web-0/data: pod volume is not mounted',
    );
    expect(brief).not.toContain('Data mover uploads');
    expect(brief).toContain('Phase:  PartiallyFailed');
    expect(brief).toContain('Errors:  1 (run');
    expect(brief).toContain('TTL:  720h0m0s');
    expect(brief).toContain('Started:    2026-11-23 13:00:00 +0000 UTC');
    expect(brief).toContain('Items backed up:              2');
    expect(brief).toContain(
      "Resource List:  <run 'tenantkit backup describe nightly -n shop --details' for the list>",
    );
    const full = describeBackup(nab, {
      details: true,
      resourceList: { 'v1/ConfigMap': ['shop/settings'] },
      results: { errors: { namespaces: { shop: ['could not back up pod web'] } } },
    });
    expect(full).toContain('Resource List:\n  v1/ConfigMap:\n    - shop/settings');
    expect(full).toContain(
      'Errors:\n  Velero:   <none>\n  Cluster:  <none>\n  Namespaces:\n    shop:\n      could not back up pod web',
    );
  });

  it('describes a restore, listing what it did to each object', () => {
    const nar = {
      metadata: { name: 'undo', namespace: 'shop' },
      spec: { restoreSpec: { backupName: 'nightly' } },
      status: { veleroRestore: { status: { phase: 'Completed' } } },
    } as NonAdminRestore;
    const text = describeRestore(nar, {
      details: true,
      resourceList: { 'v1/ConfigMap': [{ namespace: 'shop', name: 'settings', action: 'created' }] },
    });
    expect(text).toContain('Backup:  nightly');
    expect(text).toContain('    - shop/settings(created)');
  });
});

describe('backup and restore commands', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });
  /** What a command prints on stdout. */
  const printed = async (run: () => Promise<void>) => {
    let out = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out += String(chunk);
      return true;
    });
    await run();
    vi.restoreAllMocks();
    return out;
  };

  it('prints the usage of all verbs, or of one with VERB --help', async () => {
    const usage = await printed(() => backupCommand(['--help']));
    expect(usage).toMatch(
      /^Usage: tenantkit backup COMMAND \[flags\] {5}\(also: kubectl tenantkit backup \.\.\.\)\n/,
    );
    expect(usage).toContain(
      '  describe NAME [--details]     what velero backup describe shows; --details adds the resource list and\n' +
        '                                the errors and warnings, downloaded from Velero\n',
    );
    expect(usage).toContain('  get [NAME] [-o table|json|yaml|name]   list backups, or show one\n');
    expect(await printed(() => backupCommand([]))).toBe(usage);
    const create = await printed(() => restoreCommand(['create', 'undo', '--wait', '-h']));
    expect(create).toMatch(/^Usage: tenantkit restore create NAME --from-backup BACKUP \[flags\]\n/);
    expect(create).toContain(
      '      -o json|yaml               print the NonAdminRestore instead of creating it\n',
    );
    expect(create).not.toContain('  get [NAME]');
    expect(await printed(() => restoreCommand(['logs', '--help']))).toContain(
      "print Velero's log of the restore",
    );
  });

  it('says in one line what is wrong with the command line', async () => {
    await expect(backupCommand(['frob'])).rejects.toThrow(
      /^unknown command "backup frob": use create, get, describe, logs or delete \(tenantkit backup --help\)$/,
    );
    await expect(restoreCommand(['get', '--bogus'])).rejects.toThrow(
      /^unknown flag --bogus for tenantkit restore get; see tenantkit restore get --help$/,
    );
    await expect(backupCommand(['describe'])).rejects.toThrow(
      'give exactly one backup name: tenantkit backup describe NAME [--details]',
    );
    await expect(restoreCommand(['create', 'r', '--restore-volumes=maybe'])).rejects.toThrow(
      'invalid --restore-volumes "maybe": give true or false',
    );
  });

  it("lists backups and restores in velero's columns", () => {
    const now = Date.parse('2026-11-23T13:00:00Z');
    const nab = {
      metadata: { name: 'nightly', namespace: 'shop', creationTimestamp: '2026-11-23T12:00:00Z' },
      spec: { backupSpec: {} },
      status: {
        veleroBackup: {
          spec: { storageLocation: 'mine', labelSelector: { matchLabels: { app: 'web' } } },
          status: { phase: 'Completed', warnings: 2, expiration: '2026-11-24T13:00:00Z' },
        },
      },
    } as NonAdminBackup;
    expect(operationTable(backupKind, [nab], now).split('\n')).toEqual([
      'NAME      STATUS      ERRORS   WARNINGS   CREATED                         EXPIRES   STORAGE LOCATION   SELECTOR',
      'nightly   Completed   0        2          2026-11-23 12:00:00 +0000 UTC   24h       mine               app=web',
      '',
    ]);
    const nar = {
      metadata: { name: 'undo', namespace: 'shop' },
      spec: { restoreSpec: { backupName: 'nightly' } },
      status: { phase: 'BackingOff' },
    } as NonAdminRestore;
    expect(operationTable(restoreKind, [nar], now).split('\n')[1]).toBe(
      'undo   nightly   BackingOff   <n/a>     <n/a>       0        0          <n/a>     <none>',
    );
  });
});

describe('resolving a target', () => {
  const ns = 'shop';
  const uuid = 'shop-nightly-1';
  const nab = (phase?: string, status = true) =>
    ({
      metadata: { name: 'nightly', namespace: ns },
      status: {
        phase: 'Created',
        veleroBackup: { nacuuid: uuid, name: uuid, ...(status ? { status: { phase } } : {}) },
      },
    }) as NonAdminBackup;
  const backup = (
    phase: string,
    annotations = { [Annotations.nabName]: 'nightly', [Annotations.nabNamespace]: ns },
  ) =>
    ({
      metadata: { name: uuid, namespace: 'velero', labels: { [Labels.nabUuid]: uuid }, annotations },
      status: { phase },
    }) as KubeObject;
  /** Just what resolveTarget reads of the informers: get by key and the NACUUID index. */
  const fake = <T extends KubeObject>(objects: T[]) =>
    ({
      get: (key: string) => objects.find((o) => `${o.metadata.namespace}/${o.metadata.name}` === key),
      byIndex: (_: string, value: string) =>
        objects.filter((o) => Object.values(o.metadata.labels ?? {}).includes(value)),
    }) as unknown as Informer<T>;
  const caches = (nabs: NonAdminBackup[], backups: KubeObject[]): Caches => ({
    nabs: fake(nabs),
    nars: fake<NonAdminRestore>([]),
    backups: fake(backups),
    restores: fake<KubeObject>([]),
  });

  it('resolves a finished backup to the Velero Backup tenantkit made for it', () => {
    expect(
      resolveTarget(ns, 'BackupLog', 'nightly', caches([nab('Completed')], [backup('Completed')])),
    ).toEqual({
      owner: 'NonAdminBackup',
      veleroKind: 'Backup',
      veleroName: uuid,
    });
    // Failed and partially failed backups have logs too.
    expect(
      resolveTarget(ns, 'BackupLog', 'nightly', caches([nab('Failed')], [backup('Failed')])),
    ).toHaveProperty('veleroName');
  });

  it('says why it cannot, and whether waiting helps', () => {
    const blocked = (c: Caches, kind = 'BackupLog') =>
      resolveTarget(ns, kind, 'nightly', c) as { reason: string; message: string; waiting?: boolean };
    expect(blocked(caches([], []))).toMatchObject({ reason: 'TargetNotFound', waiting: true });
    expect(blocked(caches([], [])).message).toBe(
      'spec.target.name "nightly": there is no NonAdminBackup "nightly" in namespace shop (a BackupLog belongs to a NonAdminBackup); name one of this namespace\'s (kubectl get nab -n shop)',
    );
    expect(blocked(caches([nab('Completed')], []), 'RestoreLog')).toMatchObject({ reason: 'TargetNotFound' });
    expect(blocked(caches([nab(undefined, false)], []))).toMatchObject({
      reason: 'TargetNotReady',
      waiting: true,
    });
    expect(blocked(caches([nab('Completed')], []))).toMatchObject({ reason: 'TargetGone' });
    expect(blocked(caches([nab('InProgress')], [backup('InProgress')]))).toMatchObject({
      reason: 'TargetNotFinished',
      waiting: true,
      message:
        'NonAdminBackup "nightly" is still running (Velero phase InProgress): Velero writes its files when it finishes; this request goes on then',
    });
    expect(blocked(caches([nab('FailedValidation')], [backup('FailedValidation')]))).toMatchObject({
      reason: 'TargetFailedValidation',
    });
    // A Velero Backup made for another namespace's NAB is never served, whatever the NAB's status claims.
    const theirs = backup('Completed', {
      [Annotations.nabName]: 'nightly',
      [Annotations.nabNamespace]: 'victim',
    });
    expect(blocked(caches([nab('Completed')], [theirs]))).toMatchObject({ reason: 'TargetGone' });
  });
});
