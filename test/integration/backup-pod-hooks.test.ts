// Velero's hook annotations, as a tenant through the real API server with the backup capability's
// webhooks: Velero runs `pre.hook.backup.velero.io/command` (and the other hook annotations) of every Pod
// it backs up, whatever the Backup says, for the annotation's own timeout, one backup at a time for the
// whole cluster. A tenant may not put them on a Pod nor on a workload's Pod template; the admin may allow
// them in namespaces of its own; a Pod that already has them can still be updated and cleaned.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backup } from '../../src/backup/index.ts';
import { NonAdminBackupConfigCrd } from '../../src/crds/backup.ts';
import { ApiError, type KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources, resourceType } from '../../src/kube/resources.ts';
import { applyBackupPolicy, tenantIn, veleroNamespaceValue } from '../harness/backup.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { runCapability } from '../harness/components.ts';

const cluster = await TestCluster.connect();
let ns: string;
let veleroNs: string;
const jobs = resourceType('batch', 'v1', 'jobs', 'Job');
const cronJobs = resourceType('batch', 'v1', 'cronjobs', 'CronJob');
let tenant: KubeClient;

/** 'ok', or the status and message the API server answered. */
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: unknown) => (err instanceof ApiError ? `${err.status} ${err.message}` : String(err)),
  );

const hook = {
  'pre.hook.backup.velero.io/container': 'main',
  'pre.hook.backup.velero.io/command': '["/bin/sleep", "86400"]',
  'pre.hook.backup.velero.io/timeout': '24h',
};
const container = { name: 'main', image: 'registry.example/app:1' };
const pod = (name: string, annotations: Record<string, string>, namespace = ns): KubeObject =>
  ({ metadata: { name, namespace, annotations }, spec: { containers: [container] } }) as KubeObject;
const template = (annotations: Record<string, string>) => ({
  metadata: { labels: { app: 'web' }, annotations },
  spec: { containers: [container] },
});

beforeAll(async () => {
  veleroNs = await cluster.namespace('velero');
  // The webhooks alone: no Velero is needed to refuse an annotation.
  await runCapability(
    cluster,
    { ...backup, controllers: undefined },
    { namespaces: { [veleroNamespaceValue]: veleroNs } },
  );
  await applyBackupPolicy(cluster, { veleroNamespace: veleroNs });
  cluster.defer(() => cluster.admin.delete(NonAdminBackupConfigCrd.type, 'cluster'));
  ns = await cluster.namespace('hooks');
  tenant = await tenantIn(cluster, ns);
}, 120_000);
afterAll(() => cluster.cleanup());

describe("Velero's hook annotations", () => {
  it('refuses them on a Pod, with what to do instead, and admits other annotations', async () => {
    const refused = await outcome(tenant.create(Resources.pods, pod('stall', hook)));
    expect(refused).toMatch(
      /^403 .*a Pod may not carry Velero hook annotations \(pre\.hook\.backup\.velero\.io\/command, pre\.hook\.backup\.velero\.io\/container, pre\.hook\.backup\.velero\.io\/timeout\)/,
    );
    expect(refused).toContain('one backup or restore at a time for every tenant');
    expect(refused).toContain(
      `list namespace ${ns} in NonAdminBackupConfig "cluster" spec.nonAdmin.podHookNamespaces`,
    );
    // The older name of a pre hook, and the restore hooks (run when Velero restores the Pod).
    for (const key of [
      'hook.backup.velero.io/command',
      'post.hook.backup.velero.io/command',
      'post.hook.restore.velero.io/command',
      'init.hook.restore.velero.io/command',
    ]) {
      expect(await outcome(tenant.create(Resources.pods, pod('stall', { [key]: '["true"]' })))).toContain(
        `Velero hook annotations (${key})`,
      );
    }
    // Keys that only look alike reach the webhook (its condition is a superset) and pass.
    expect(
      await outcome(
        tenant.create(
          Resources.pods,
          pod('look-alike', { 'my.hook.backup.velero.io/command': 'x', team: 'a' }),
        ),
      ),
    ).toBe('ok');
  });

  it("refuses them in a workload's Pod template: Deployment, StatefulSet, Job, CronJob", async () => {
    const selector = { matchLabels: { app: 'web' } };
    const writes: [string, () => Promise<unknown>][] = [
      [
        "a Deployment's Pod template (spec.template)",
        () =>
          tenant.create(Resources.deployments, {
            metadata: { name: 'web', namespace: ns },
            spec: { selector, template: template(hook) },
          } as KubeObject),
      ],
      [
        "a StatefulSet's Pod template (spec.template)",
        () =>
          tenant.create(Resources.statefulSets, {
            metadata: { name: 'db', namespace: ns },
            spec: { selector, serviceName: 'db', template: template(hook) },
          } as KubeObject),
      ],
      [
        "a Job's Pod template (spec.template)",
        () =>
          tenant.create(jobs, {
            metadata: { name: 'once', namespace: ns },
            spec: {
              template: { ...template(hook), spec: { ...template(hook).spec, restartPolicy: 'Never' } },
            },
          } as KubeObject),
      ],
      [
        "a CronJob's Pod template (spec.jobTemplate.spec.template)",
        () =>
          tenant.create(cronJobs, {
            metadata: { name: 'nightly', namespace: ns },
            spec: {
              schedule: '0 3 * * *',
              jobTemplate: {
                spec: {
                  template: { ...template(hook), spec: { ...template(hook).spec, restartPolicy: 'Never' } },
                },
              },
            },
          } as KubeObject),
      ],
    ];
    for (const [what, write] of writes) {
      expect(await outcome(write())).toMatch(
        new RegExp(`^403 .*${what.replace(/[().]/g, '\\$&')} may not carry`),
      );
    }
    // Adding one later is refused too; the Deployment without it stays as it was.
    await tenant.create(Resources.deployments, {
      metadata: { name: 'web', namespace: ns },
      spec: { selector, template: template({}) },
    } as KubeObject);
    expect(
      await outcome(
        tenant.patch(Resources.deployments, 'web', ns, {
          spec: { template: { metadata: { annotations: hook } } },
        }),
      ),
    ).toMatch(/^403 .*Pod template \(spec\.template\) may not carry/);
  });

  it('admits them where the admin allows, and lets a Pod that has them be updated and cleaned after', async () => {
    await applyBackupPolicy(cluster, {
      veleroNamespace: veleroNs,
      podHookNamespaces: [ns],
    });
    // The webhook reads the policy from its cache: it admits once it has seen the change.
    await eventually(
      () => outcome(tenant.create(Resources.pods, pod('freeze', hook))).then((o) => o === 'ok'),
      {
        what: 'the Pod with hooks admitted in a listed namespace',
      },
    );
    await applyBackupPolicy(cluster, {
      veleroNamespace: veleroNs,
      podHookNamespaces: [],
    });
    await eventually(
      () => outcome(tenant.create(Resources.pods, pod('again', hook))).then((o) => o.startsWith('403 ')),
      { what: 'refused again once the admin took the namespace off the list' },
    );
    // The Pod admitted before: a label change passes, a new hook or a changed one does not, and removing
    // them does.
    expect(
      await outcome(tenant.patch(Resources.pods, 'freeze', ns, { metadata: { labels: { tier: 'db' } } })),
    ).toBe('ok');
    expect(
      await outcome(
        tenant.patch(Resources.pods, 'freeze', ns, {
          metadata: { annotations: { 'pre.hook.backup.velero.io/timeout': '48h' } },
        }),
      ),
    ).toMatch(/^403 .*\(pre\.hook\.backup\.velero\.io\/timeout\)/);
    const cleaned = Object.fromEntries(Object.keys(hook).map((k) => [k, null]));
    expect(
      await outcome(tenant.patch(Resources.pods, 'freeze', ns, { metadata: { annotations: cleaned } })),
    ).toBe('ok');
  });
});
