// NonAdminSchedule end to end, as a tenant, on a real Velero (its own schedule controller makes the runs)
// with a real S3 store: the tenant's schedule becomes a Velero Schedule limited to its namespace with the
// admin's enforced fields; each run shows up as a NonAdminBackup owned by the schedule, which the tenant
// restores from; edits (pause, cron, skipImmediately) reach Velero; invalid ones are refused with what to
// change; deleting the schedule deletes the Velero Schedule and keeps the runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Annotations, Labels } from '../../src/backup/model.ts';
import { parseCron } from '../../src/backup/policy/cron.ts';
import {
  type NonAdminBackup,
  NonAdminBackupCrd,
  type NonAdminRestore,
  NonAdminRestoreCrd,
  type NonAdminSchedule,
  NonAdminScheduleCrd,
} from '../../src/crds/backup.ts';
import { VeleroResources } from '../../src/crds/velero.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import {
  type BackupEnvironment,
  condition,
  startBackupEnvironment,
  veleroQueueMs,
} from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { veleroStartTimeoutMs } from '../harness/velero.ts';

const cluster = await TestCluster.connect();
let env: BackupEnvironment;
let ns: string;
let tenant: KubeClient;
const nasType = NonAdminScheduleCrd.type;
const nabType = NonAdminBackupCrd.type;
const narType = NonAdminRestoreCrd.type;
/**
 * Velero checks schedules once a minute and counts from the Schedule's creation, so an `@every 1m`
 * schedule runs one to two minutes after it was made; the Backup may then wait up to a minute in
 * Velero's queue.
 */
const firstRunMs = 240_000;

type VeleroSchedule = KubeObject & {
  spec: Record<string, unknown> & { template: Record<string, unknown> };
  status?: { phase?: string; lastBackup?: string; lastSkipped?: string };
};

const nas = (name: string) => cluster.admin.get<NonAdminSchedule>(nasType, name, ns);
const veleroSchedule = (name: string) =>
  cluster.admin.get<VeleroSchedule>(VeleroResources.schedules, name, env.velero.namespace);

beforeAll(async () => {
  // Runs a minute apart, so that a run comes within the test: the admin allows it.
  env = await startBackupEnvironment(cluster, {
    // A share of Velero's queue of 2 backups and 5 schedules per namespace (issue 35).
    policy: {
      enforceBackupSpec: { snapshotVolumes: false },
      minimumScheduleInterval: '1m',
      maxQueuedBackupsPerNamespace: 2,
      maxSchedulesPerNamespace: 5,
    },
  });
  ({ namespace: ns, tenant } = await env.tenantNamespace('shop'));
  await cluster.admin.create(Resources.configMaps, {
    metadata: { name: 'settings', namespace: ns },
    data: { color: 'green' },
  } as KubeObject);
}, veleroStartTimeoutMs);

afterAll(() => env?.stop());

describe('NonAdminSchedule', { timeout: firstRunMs + 120_000 }, () => {
  let runNab: NonAdminBackup;

  it('refuses invalid schedules and overrides of enforced fields at admission, saying what to change', async () => {
    const create = (name: string, spec: Record<string, unknown>) =>
      tenant.create(nasType, { metadata: { name, namespace: ns }, spec } as KubeObject);
    // More often than the admin's minimumScheduleInterval (1m here), as @every or as cron fields.
    for (const schedule of ['@every 0s', '@every 1ns', '@every 30s']) {
      await expect(create('too-often', { schedule, template: { backupSpec: {} } })).rejects.toThrow(
        /runs as often as every 1s|runs as often as every 30s/,
      );
    }
    await expect(create('bad-cron', { schedule: 'every day', template: { backupSpec: {} } })).rejects.toThrow(
      'spec.schedule "every day" is not a valid schedule (expected exactly 5 fields, found 2: every day): use five cron fields',
    );
    await expect(
      create('snapshots', { schedule: '@daily', template: { backupSpec: { snapshotVolumes: true } } }),
    ).rejects.toThrow(
      'NonAdminSchedule spec.template.backupSpec.snapshotVolumes field value is enforced by admin user, can not override it',
    );
    await expect(
      create('escape', {
        schedule: '@daily',
        template: { backupSpec: { includedNamespaces: ['kube-system'], includeClusterResources: true } },
      }),
    ).rejects.toThrow(`spec.template.backupSpec.includedNamespaces may only name this namespace (${ns})`);
    expect((await cluster.admin.list(nasType, { namespace: ns })).items).toEqual([]);
  });

  it('checks again in the controller: a schedule stored past the webhook backs off and makes nothing', async () => {
    // A control-plane identity, which tenantkit's webhooks never see (an admin could also disable them).
    const bypass = await cluster.user(`system:serviceaccount:kube-system:${cluster.unique('bypass')}`, [
      'system:masters',
    ]);
    await bypass.create(nasType, {
      metadata: { name: 'sneaky', namespace: ns },
      spec: { schedule: '@hourly', template: { backupSpec: { snapshotVolumes: true } } },
    } as KubeObject);
    const refused = await eventually(
      async () => {
        const o = await nas('sneaky');
        return o?.status?.phase === 'BackingOff' ? o : undefined;
      },
      { what: 'schedule refused by the controller' },
    );
    expect(condition(refused, 'Accepted')).toMatchObject({
      status: 'False',
      reason: 'InvalidSchedule',
      message:
        'NonAdminSchedule spec.template.backupSpec.snapshotVolumes field value is enforced by admin user, can not override it',
    });
    expect(refused.status?.veleroSchedule).toBeUndefined();
    const made = await cluster.admin.list<KubeObject>(VeleroResources.schedules, {
      namespace: env.velero.namespace,
    });
    expect(made.items).toEqual([]);
    await cluster.admin.delete(nasType, 'sneaky', ns);
    await eventually(async () => (await nas('sneaky')) === undefined, { what: 'sneaky gone' });
  });

  it("runs the tenant's schedule in Velero; each run is a NonAdminBackup of the schedule that restores", async () => {
    await tenant.create(nasType, {
      metadata: { name: 'frequent', namespace: ns },
      spec: { schedule: '@every 1m', template: { backupSpec: { ttl: '2h0m0s' } } },
    } as KubeObject);
    const enabled = await eventually(
      async () => {
        const o = await nas('frequent');
        return o?.status?.veleroSchedule?.status?.phase === 'Enabled' ? o : undefined;
      },
      { timeoutMs: 30_000, what: 'schedule enabled' },
    );
    const ref = enabled.status!.veleroSchedule!;
    expect(ref.nacuuid).toMatch(/-[0-9a-f-]{36}$/);
    expect(ref.nacuuid!.length).toBeLessThanOrEqual(48);
    const schedule = (await veleroSchedule(ref.name!))!;
    expect(schedule.metadata.labels?.[Labels.nasUuid]).toBe(ref.nacuuid);
    expect(schedule.metadata.annotations?.[Annotations.nasNamespace]).toBe(ns);
    expect(schedule.spec.schedule).toBe('@every 1m');
    expect(schedule.spec.useOwnerReferencesInBackup).toBe(false);
    expect(schedule.spec.template).toMatchObject({
      includedNamespaces: [ns],
      snapshotVolumes: false,
      ttl: '2h0m0s',
      metadata: { labels: { [Labels.nasUuid]: ref.nacuuid } },
      // Runs never carry the operations themselves (restored, they would run again).
      excludedResources: [
        'nonadminbackups.oadp.openshift.io',
        'nonadminrestores.oadp.openshift.io',
        'nonadmindownloadrequests.oadp.openshift.io',
      ],
    });
    // Velero's next run: one minute after the Schedule's creation (it has not run yet).
    const created = Date.parse(schedule.metadata.creationTimestamp!);
    expect(Date.parse(enabled.status!.nextRun!)).toBe(created + 60_000);

    runNab = await eventually(
      async () => {
        const runs = await cluster.admin.list<NonAdminBackup>(nabType, { namespace: ns });
        return runs.items.find((n) => n.status?.veleroBackup?.status?.phase === 'Completed');
      },
      { timeoutMs: firstRunMs, intervalMs: 1000, what: 'a completed run' },
    );
    const vb = runNab.status!.veleroBackup!;
    expect(vb.name).toMatch(new RegExp(`^${ref.name}-[0-9]{14}$`));
    expect(runNab.metadata.name).toMatch(/^frequent-[0-9]{14}$/);
    expect(runNab.metadata.labels?.[Labels.syncedFrom]).toBe(vb.name);
    expect(runNab.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'NonAdminSchedule', name: 'frequent', uid: enabled.metadata.uid }),
    ]);
    expect(vb.spec?.includedNamespaces).toEqual([ns]);
    expect((await env.velero.listObjects(`backups/${vb.name}/`)).length).toBeGreaterThan(0);

    const withRun = await eventually(
      async () => {
        const o = await nas('frequent');
        return o?.status?.lastBackup?.phase === 'Completed' ? o : undefined;
      },
      { what: 'lastBackup in the schedule status' },
    );
    expect(withRun.status?.lastBackup).toMatchObject({
      name: runNab.metadata.name,
      veleroBackupName: vb.name,
    });
    expect(withRun.status?.recentBackups?.[0]).toEqual(withRun.status?.lastBackup);
    expect(withRun.status?.recentBackups?.length).toBeLessThanOrEqual(5);
    const last = Date.parse(withRun.status!.veleroSchedule!.status!.lastBackup!);
    expect(Date.parse(withRun.status!.nextRun!)).toBe(Math.floor(last / 1000) * 1000 + 60_000);

    // The tenant restores from the run like from any of its backups.
    await tenant.delete(Resources.configMaps, 'settings', ns);
    await tenant.create(narType, {
      metadata: { name: 'from-run', namespace: ns },
      spec: { restoreSpec: { backupName: runNab.metadata.name } },
    } as KubeObject);
    const restored = await eventually(
      () =>
        cluster.admin.get<KubeObject & { data?: Record<string, string> }>(
          Resources.configMaps,
          'settings',
          ns,
        ),
      { timeoutMs: veleroQueueMs, what: 'settings restored from the run' },
    );
    expect(restored.data).toEqual({ color: 'green' });
    const nar = await cluster.admin.get<NonAdminRestore>(narType, 'from-run', ns);
    expect(nar?.status?.phase).toBe('Created');
  });

  it('pushes pause, cron and skipImmediately edits to the Velero Schedule and refuses invalid edits', async () => {
    const name = (await nas('frequent'))!.status!.veleroSchedule!.name!;
    await tenant.patch(nasType, 'frequent', ns, { spec: { paused: true, schedule: '30 3 * * *' } });
    await eventually(
      async () => {
        const s = await veleroSchedule(name);
        return s?.spec.paused === true && s.spec.schedule === '30 3 * * *';
      },
      { what: 'pause and cron pushed' },
    );
    const paused = await eventually(
      async () => {
        const o = await nas('frequent');
        return condition(o, 'Scheduled')?.reason === 'SchedulePaused' ? o : undefined;
      },
      { what: 'schedule reported paused' },
    );
    expect(paused.status?.nextRun).toBeUndefined();

    await expect(
      tenant.patch(nasType, 'frequent', ns, {
        spec: { template: { backupSpec: { snapshotVolumes: true } } },
      }),
    ).rejects.toThrow('NonAdminSchedule spec.template.backupSpec.snapshotVolumes field value is enforced');
    await expect(tenant.patch(nasType, 'frequent', ns, { spec: { schedule: '61 * * * *' } })).rejects.toThrow(
      /spec.schedule "61 \* \* \* \*" is not a valid schedule \(end of range \(61\) above maximum \(59\)/,
    );

    // Resumed with skipImmediately: Velero records the skip, tenantkit resets the one-shot flag.
    await tenant.patch(nasType, 'frequent', ns, { spec: { paused: false, skipImmediately: true } });
    const resumed = await eventually(
      async () => {
        const o = await nas('frequent');
        const s = o?.status?.veleroSchedule?.status;
        return o?.spec?.skipImmediately === false && s?.lastSkipped && o.status?.nextRun ? o : undefined;
      },
      { timeoutMs: 30_000, what: 'skip recorded and flag reset' },
    );
    const lastSkipped = Date.parse(resumed.status!.veleroSchedule!.status!.lastSkipped!);
    const expected = parseCron('30 3 * * *').schedule!.next(new Date(lastSkipped))!;
    expect(resumed.status?.nextRun).toBe(expected.toISOString().replace('.000Z', 'Z'));
    expect((await veleroSchedule(name))?.spec.paused).toBe(false);
  });

  it("deletes the Velero Schedule with the schedule and keeps the runs' backups", async () => {
    const name = (await nas('frequent'))!.status!.veleroSchedule!.name!;
    await tenant.delete(nasType, 'frequent', ns);
    await eventually(async () => (await nas('frequent')) === undefined && !(await veleroSchedule(name)), {
      what: 'schedule and Velero Schedule gone',
    });
    const kept = await cluster.admin.get<NonAdminBackup>(nabType, runNab.metadata.name!, ns);
    expect(kept?.metadata.ownerReferences ?? []).toEqual([]);
    expect(kept?.status?.veleroBackup?.name).toBe(runNab.status!.veleroBackup!.name);
    // Still there a while later: the garbage collector did not take it along.
    await new Promise((r) => setTimeout(r, 3000));
    expect(await cluster.admin.get(nabType, runNab.metadata.name!, ns)).toBeDefined();
    expect(
      await cluster.admin.get(
        VeleroResources.backups,
        runNab.status!.veleroBackup!.name!,
        env.velero.namespace,
      ),
    ).toBeDefined();
  });
});

describe('one tenant cannot take the queue through schedules (issue 35)', {
  timeout: firstRunMs + 180_000,
}, () => {
  it('refuses the schedule beyond the limit, and 5 schedules due at once never put more than the share in Velero', async () => {
    const { namespace: q, tenant: t } = await env.tenantNamespace('queue');
    const make = (name: string) =>
      t.create(nasType, {
        metadata: { name, namespace: q },
        spec: { schedule: '@every 1m', template: { backupSpec: {} } },
      } as KubeObject);
    for (let i = 0; i < 5; i++) await make(`s${i}`);
    await eventually(async () => (await cluster.admin.list(nasType, { namespace: q })).items.length === 5, {
      what: '5 schedules in the webhook cache',
    });
    await expect(make('s5')).rejects.toThrow(
      `namespace ${q} already has 5 NonAdminSchedules and the admin allows 5 per namespace (NonAdminBackupConfig "cluster" spec.nonAdmin.maxSchedulesPerNamespace)`,
    );
    // Every run that reaches Velero for q, and the most unfinished at once, until all 5 schedules ran.
    const ranBy = new Set<string>();
    let most = 0;
    await eventually(
      async () => {
        const backups = await cluster.admin.list<KubeObject & { status?: { phase?: string } }>(
          VeleroResources.backups,
          { namespace: env.velero.namespace },
        );
        const ofQ = backups.items.filter((b) => b.metadata.annotations?.[Annotations.nasNamespace] === q);
        const open = ofQ.filter(
          (b) =>
            !['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation'].includes(b.status?.phase ?? ''),
        );
        most = Math.max(most, open.length);
        for (const b of ofQ) ranBy.add(b.metadata.annotations?.[Annotations.nasName] ?? '');
        return ranBy.size === 5;
      },
      { timeoutMs: firstRunMs + 120_000, intervalMs: 200, what: 'a run of each of the 5 schedules' },
    );
    expect(most).toBeLessThanOrEqual(2);
  });

  it('does not run again before the minimum interval when the minute is moved right after a run', async () => {
    const { namespace: m, tenant: t } = await env.tenantNamespace('moved');
    await env.setPolicy({ minimumScheduleInterval: '2m' });
    try {
      await t.create(nasType, {
        metadata: { name: 'even', namespace: m },
        spec: { schedule: '*/2 * * * *', template: { backupSpec: {} } },
      } as KubeObject);
      const runsOf = async () =>
        (
          await cluster.admin.list<KubeObject>(VeleroResources.backups, { namespace: env.velero.namespace })
        ).items
          .filter((b) => b.metadata.annotations?.[Annotations.nasNamespace] === m)
          .map((b) => Date.parse(b.metadata.creationTimestamp!))
          .sort((a, b) => a - b);
      const first = await eventually(async () => (await runsOf())[0], {
        timeoutMs: firstRunMs,
        intervalMs: 500,
        what: 'a first run',
      });
      // Right after the run, the minutes that come next: one minute later, then every two.
      const odd = (new Date(first).getUTCMinutes() + 1) % 2;
      await t.patch(nasType, 'even', m, { spec: { schedule: `${odd}-59/2 * * * *` } });
      const [a, b] = await eventually(
        async () => {
          const runs = await runsOf();
          return runs.length >= 2 ? runs : undefined;
        },
        { timeoutMs: 240_000, intervalMs: 1000, what: 'a second run' },
      );
      // Not the odd minute right after the first, but the interval after the first run's minute (Velero's
      // once-a-minute check may make a run up to a minute after its time).
      expect(b!).toBeGreaterThanOrEqual(Math.floor(a! / 60_000) * 60_000 + 120_000);
      // Rare but dense: every minute of 29 February (the next one is more than a year away).
      await expect(
        t.create(nasType, {
          metadata: { name: 'leap', namespace: m },
          spec: { schedule: '* * 29 2 *', template: { backupSpec: {} } },
        } as KubeObject),
      ).rejects.toThrow('spec.schedule "* * 29 2 *" runs as often as every 1m,');
    } finally {
      await env.setPolicy({});
    }
  });
});
