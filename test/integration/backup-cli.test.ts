// `tenantkit backup|restore` as a tenant runs it: the command as a subprocess (`node src/cli/main.ts ...`)
// with the tenant's own kubeconfig file (its context names the namespace), against the real API server,
// the real Velero and its S3 store. It creates and waits, lists, describes with Velero's resource list,
// prints Velero's logs, restores and deletes; refusals come out as one clear line and exit code 1.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  NonAdminDownloadRequestCrd,
  NonAdminRestoreCrd,
} from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import {
  type BackupEnvironment,
  nabDeletedWithData,
  startBackupEnvironment,
  veleroQueueMs,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** Node 24 runs the .ts sources: the one running the tests, or the project's own. */
const node24 =
  Number(process.versions.node.split('.')[0]) >= 24
    ? process.execPath
    : join(repo, 'node_modules/node/bin/node');

const kubectl = (process.env.PATH ?? '')
  .split(delimiter)
  .map((dir) => join(dir, 'kubectl'))
  .find((file) => existsSync(file));

const cluster = await TestCluster.connect();
let env: BackupEnvironment;
let ns: string;
let otherNs: string;
let tenant: KubeClient;
let kubeconfig: string;
const nabType = NonAdminBackupCrd.type;
const narType = NonAdminRestoreCrd.type;
const nadrType = NonAdminDownloadRequestCrd.type;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI as the tenant. Asynchronously: the controllers run in this process and must keep working
 * while the command waits. stdin is a pipe, not a terminal, as in a script.
 */
async function tenantkit(...args: string[]): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)(node24, [join(repo, 'src/cli/main.ts'), ...args], {
      cwd: repo,
      env: { ...process.env, KUBECONFIG: kubeconfig },
      timeout: veleroQueueMs + 30_000,
      maxBuffer: 32 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string; message?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** A failed run: exit code 1 and one line on stderr, no stack trace. */
function expectOneLineError(run: Run, message: string) {
  expect(run.code, run.stdout + run.stderr).toBe(1);
  const lines = run.stderr.trim().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  expect(lines[0]).toContain(message);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

beforeAll(async () => {
  // The admin enforces a TTL: a tenant asking for another one is refused at admission.
  env = await startBackupEnvironment(cluster, { policy: { enforceBackupSpec: { ttl: '720h0m0s' } } });
  ({ namespace: ns, tenant } = await env.tenantNamespace('shop'));
  otherNs = await env.namespace('victim');
  // The tenant's kubeconfig file, as `tenantkit dev` writes one: its context's namespace is the tenant's.
  const config = parse(await cluster.userKubeconfig(tenant.userName)) as {
    contexts: { context: Record<string, string> }[];
  };
  config.contexts[0]!.context.namespace = ns;
  kubeconfig = join(cluster.dir, `${tenant.userName}.kubeconfig`);
  await writeFile(kubeconfig, stringify(config), { mode: 0o600 });
}, veleroStartTimeoutMs);

afterAll(() => env?.stop());

describe('tenantkit backup and restore', { timeout: 2 * veleroQueueMs }, () => {
  it('creates a backup and waits for it, lists it, describes it with its resource list and prints its log', async () => {
    await tenant.create(Resources.configMaps, {
      metadata: { name: 'settings', namespace: ns },
      data: { color: 'blue' },
    } as KubeObject);

    // No -n: the namespace comes from the kubeconfig's context.
    const started = Date.now();
    const created = await tenantkit('backup', 'create', 'nightly', '--wait');
    const createMs = Date.now() - started;
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('Backup request "nightly" submitted successfully.');
    expect(created.stdout).toContain('Backup completed with status: Completed.');

    const table = await tenantkit('backup', 'get');
    expect(table.code, table.stderr).toBe(0);
    const [head, ...rows] = table.stdout.trim().split('\n');
    expect(head).toMatch(
      /^NAME\s+STATUS\s+ERRORS\s+WARNINGS\s+CREATED\s+EXPIRES\s+STORAGE LOCATION\s+SELECTOR$/,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatch(
      /^nightly\s+Completed\s+0\s+0\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC\s+29d\s+default\s+<none>$/,
    );

    const json = await tenantkit('backup', 'get', 'nightly', '-o', 'json', '-n', ns);
    const nab = JSON.parse(json.stdout) as NonAdminBackup;
    expect(nab).toMatchObject({ kind: 'NonAdminBackup', metadata: { name: 'nightly', namespace: ns } });
    expect(nab.status?.veleroBackup?.status?.phase).toBe('Completed');
    const list = JSON.parse((await tenantkit('backup', 'get', '-o', 'json')).stdout) as {
      kind: string;
      items: unknown[];
    };
    expect(list).toMatchObject({ kind: 'List' });
    expect(list.items).toHaveLength(1);
    expect((await tenantkit('backup', 'get', '-o', 'name')).stdout).toBe(
      'nonadminbackup.oadp.openshift.io/nightly\n',
    );

    // The same as a kubectl plugin: kubectl finds kubectl-tenantkit on PATH (what `npm install -g` links).
    if (kubectl) {
      const bin = await mkdtemp(join(tmpdir(), 'tenantkit-plugin-'));
      cluster.defer(() => rm(bin, { recursive: true, force: true }));
      await symlink(join(repo, 'bin/tenantkit.mjs'), join(bin, 'kubectl-tenantkit'));
      const { stdout } = await promisify(execFile)(kubectl, ['tenantkit', 'backup', 'get', '-o', 'name'], {
        env: {
          ...process.env,
          KUBECONFIG: kubeconfig,
          PATH: [bin, dirname(node24), process.env.PATH].join(delimiter),
        },
      });
      expect(stdout).toBe('nonadminbackup.oadp.openshift.io/nightly\n');
    }

    const describeStarted = Date.now();
    const described = await tenantkit('backup', 'describe', 'nightly', '--details');
    const describeMs = Date.now() - describeStarted;
    expect(described.code, described.stderr).toBe(0);
    const text = described.stdout;
    expect(text).toContain('Name:         nightly');
    expect(text).toContain(`Namespace:    ${ns}`);
    expect(text).toMatch(/\nPhase: {2}Completed\n/);
    expect(text).toContain(`Included:  ${ns}`);
    expect(text).toContain('Storage Location:  default');
    expect(text).toContain('TTL:  720h0m0s');
    expect(text).toMatch(/Started: {4}\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC/);
    expect(text).toMatch(/Items backed up:\s+[1-9]\d*/);
    expect(text).toContain(`Resource List:\n`);
    expect(text).toMatch(new RegExp(`  v1/ConfigMap:\\n(    - .*\\n)*    - ${ns}/settings\\n`));

    const logsStarted = Date.now();
    const logs = await tenantkit('backup', 'logs', 'nightly');
    const logsMs = Date.now() - logsStarted;
    expect(logs.code, logs.stderr).toBe(0);
    const veleroBackup = nab.status!.veleroBackup!.name!;
    const lines = logs.stdout
      .split('\n')
      .filter((l) => l.includes(`backup=${env.velero.namespace}/${veleroBackup}`));
    expect(lines.length, logs.stdout.slice(0, 2000)).toBeGreaterThan(3);
    expect(logs.stdout).toMatch(/level=info msg=/);
    console.log(
      `[cli] backup create --wait ${createMs} ms; describe --details ${describeMs} ms; logs ${logsMs} ms (${logs.stdout.length} bytes)`,
    );

    // The download requests the commands made are gone again, with their Velero DownloadRequests.
    expect((await tenant.list(nadrType, { namespace: ns })).items).toEqual([]);
    await eventually(
      async () =>
        (await cluster.admin.list(VeleroResources.downloadRequests, { namespace: env.velero.namespace }))
          .items.length === 0,
      { what: 'DownloadRequests of the commands removed' },
    );
  });

  it('restores from the backup and waits, then lists, describes, prints the log and deletes the restore', async () => {
    await tenant.delete(Resources.configMaps, 'settings', ns);
    const created = await tenantkit('restore', 'create', 'undo', '--from-backup', 'nightly', '--wait');
    expect(created.code, created.stdout + created.stderr).toBe(0);
    expect(created.stdout).toContain('Restore completed with status: Completed.');
    expect(
      (await tenant.get<KubeObject & { data?: Record<string, string> }>(Resources.configMaps, 'settings', ns))
        ?.data,
    ).toEqual({ color: 'blue' });

    const table = await tenantkit('restore', 'get');
    expect(table.stdout).toMatch(
      /^NAME\s+BACKUP\s+STATUS\s+STARTED\s+COMPLETED\s+ERRORS\s+WARNINGS\s+CREATED\s+SELECTOR\n/,
    );
    expect(table.stdout).toMatch(/\nundo\s+nightly\s+Completed\s+/);

    const described = await tenantkit('restore', 'describe', 'undo', '--details');
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toContain('Backup:  nightly');
    expect(described.stdout).toMatch(/Phase:\s+Completed/);
    expect(described.stdout).toContain(`${ns}/settings`);

    const logs = await tenantkit('restore', 'logs', 'undo');
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain(`restore=${env.velero.namespace}/`);

    // Not without confirmation, and a script has no terminal to ask on.
    expectOneLineError(
      await tenantkit('restore', 'delete', 'undo'),
      'tenantkit: refusing to delete restore "undo" without confirmation: stdin is not a terminal to ask on; run again with --confirm',
    );
    expect(await tenant.get(narType, 'undo', ns)).toBeDefined();
    const deleted = await tenantkit('restore', 'delete', 'undo', '--confirm');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain('Request to delete restore "undo" submitted successfully.');
    await eventually(async () => (await tenant.get(narType, 'undo', ns)) === undefined, {
      what: 'restore undo gone',
    });
  });

  it('says what is wrong in one line and exits 1: another namespace, unknown names, refusals at admission', async () => {
    expectOneLineError(
      await tenantkit('backup', 'get', '-n', otherNs),
      `tenantkit: Error from server (Forbidden): nonadminbackups.oadp.openshift.io is forbidden: User "${tenant.userName}" cannot list resource "nonadminbackups" in API group "oadp.openshift.io" in the namespace "${otherNs}"`,
    );
    expectOneLineError(
      await tenantkit('backup', 'describe', 'no-such-backup'),
      `tenantkit: backup "no-such-backup" not found in namespace ${ns} (tenantkit backup get -n ${ns} lists them)`,
    );
    expectOneLineError(
      await tenantkit('restore', 'logs', 'no-such-restore'),
      `tenantkit: restore "no-such-restore" not found in namespace ${ns}`,
    );
    // The admin enforces ttl 720h0m0s: the webhook's refusal, as kubectl would print it.
    expectOneLineError(
      await tenantkit('backup', 'create', 'short', '--ttl', '24h'),
      'NonAdminBackup spec.backupSpec.ttl field value is enforced by admin user, can not override it',
    );
    expect(await tenant.get(nabType, 'short', ns)).toBeUndefined();
    expectOneLineError(
      await tenantkit('backup', 'create', 'x', '--ttl', 'soon'),
      'tenantkit: invalid --ttl "soon"',
    );
    expectOneLineError(
      await tenantkit('restore', 'create', 'typo', '--from-backup', 'nightlly', '--wait'),
      `tenantkit: backup "nightlly" not found in namespace ${ns}: --from-backup names a NonAdminBackup of this namespace`,
    );
    expect(await tenant.get(narType, 'typo', ns)).toBeUndefined();
    expectOneLineError(
      await tenantkit('restore', 'create', 'r'),
      'tenantkit: --from-backup is required: the name of a NonAdminBackup in this namespace',
    );
    // Mistyped command lines: what to type instead, not node's parser's advice.
    expectOneLineError(
      await tenantkit('backup', 'list'),
      'tenantkit: unknown command "backup list": use create, get, describe, logs or delete (tenantkit backup --help)',
    );
    expectOneLineError(
      await tenantkit('restore', 'logs', 'undo', '--follow'),
      'tenantkit: unknown flag --follow for tenantkit restore logs; see tenantkit restore logs --help',
    );
  });

  it('deletes a backup and its data only when confirmed', async () => {
    expectOneLineError(
      await tenantkit('backup', 'delete', 'nightly'),
      'tenantkit: refusing to delete backup "nightly" without confirmation: stdin is not a terminal to ask on; run again with --confirm',
    );
    expect((await tenant.get<NonAdminBackup>(nabType, 'nightly', ns))?.spec?.deleteBackup).toBeUndefined();
    const veleroBackup = (await tenant.get<NonAdminBackup>(nabType, 'nightly', ns))!.status!.veleroBackup!
      .name!;
    const deleted = await tenantkit('backup', 'delete', 'nightly', '--confirm');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain('Request to delete backup "nightly" submitted successfully.');
    // Velero waits up to a minute for restores of the backup to be finalised (the previous test deleted
    // one) and may then refuse; tenantkit asks again after a back-off. Velero's tracker race (a finished
    // backup it still counts as running) is ended as the NAB tells the admin to (nabDeletedWithData).
    await nabDeletedWithData(cluster, env.velero, 'nightly', ns);
    await eventually(
      async () =>
        (await cluster.admin.get(VeleroResources.backups, veleroBackup, env.velero.namespace)) === undefined,
      { what: "nightly's Velero Backup deleted" },
    );
    expect(await env.velero.listObjects(`backups/${veleroBackup}/`)).toEqual([]);
  });
});
