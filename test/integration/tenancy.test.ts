// Namespace ownership by organizations, exercised by tenants with their own credentials through the
// real API server: creation, transfer, quota under concurrency, metadata rules, service accounts,
// privileged bypass, reserved guardrails, organization RBAC and live configuration.
import { randomUUID } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Organization,
  OrganizationCrd,
  TenancyConfigCrd,
  TenantUserCrd,
  UsageProfileCrd,
} from '../../src/crds/tenancy.ts';
import { type ApiError, type KubeClient, PatchType } from '../../src/kube/client.ts';
import { registry } from '../../src/kube/metrics.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { createCA } from '../../src/serving/certs.ts';
import { organizationBindingName } from '../../src/tenancy/controllers/org-rbac.ts';
import { tenancy } from '../../src/tenancy/index.ts';
import { reservedLabel } from '../../src/tenancy/model.ts';
import { namespaceCreatorRole, tenancyUserClusterRoles } from '../../src/tenancy/policy/tenant-roles.ts';
import { type AdmissionReview, allow, mutate } from '../../src/webhook/admission.ts';
import { ProjectRequestStandInCrd, ProjectStandInCrd, UserStandInCrd } from '../fixtures/openshift.ts';
import { clusterInfo, eventually, TestCluster } from '../harness/cluster.ts';
import { type RunningCapability, runCapability } from '../harness/components.ts';
import { startTestWebhooks } from '../harness/webhooks.ts';

const cluster = await TestCluster.connect();
const orgLabel = 'appuio.io/organization';
const tenantsGroup = 'tenancy-tenants';
const apply = { fieldManager: 'tenancy-test', force: true };

const id = cluster.unique('o');
const orgA = `${id}-a`;
const orgB = `${id}-b`;
const orgFull = `${id}-full`;
const alice = `alice-${id}`; // member of A (by name) and B (by group)
const bob = `bob-${id}`; // member of B only
const carol = `carol-${id}`; // member of nothing, no default organization
const teamB = `team-b-${id}`;

let aliceClient: KubeClient;
let bobClient: KubeClient;
let carolClient: KubeClient;
let running: RunningCapability;
/** TenancyConfig.spec.namespaceQuotaHoldSeconds here: short, so that a test can wait a hold out. */
const holdSeconds = 4;

async function rejection(promise: Promise<unknown>): Promise<ApiError | undefined> {
  return promise.then(
    () => undefined,
    (e: unknown) => e as ApiError,
  );
}

const createNamespace = (
  client: KubeClient,
  name: string,
  labels: Record<string, string> = {},
  annotations?: Record<string, string>,
) =>
  client.create<KubeObject>(Resources.namespaces, {
    metadata: { name, labels, ...(annotations ? { annotations } : {}) },
  });

async function organization(name: string, users: string[], groups: string[], namespaceQuota?: number) {
  await cluster.admin.apply(
    OrganizationCrd.type,
    {
      metadata: { name },
      spec: {
        displayName: name,
        members: { users, groups },
        ...(namespaceQuota !== undefined ? { namespaceQuota } : {}),
      },
    } as Organization,
    apply,
  );
  cluster.defer(() => cluster.admin.delete(OrganizationCrd.type, name));
}

/** Namespaces tenants create are deleted by the admin at the end. */
function track(name: string) {
  cluster.defer(() => cluster.admin.delete(Resources.namespaces, name));
  return name;
}

beforeAll(async () => {
  await cluster.admin.apply(Resources.namespaces, { metadata: { name: 'tenantkit-system' } }, apply);
  await cluster.admin.apply(
    TenancyConfigCrd.type,
    {
      metadata: { name: 'cluster' },
      spec: {
        organizationLabel: orgLabel,
        allowedLabels: ['example.com/*'],
        allowedAnnotations: ['example.com/*'],
        defaultNamespaceQuota: 5,
        namespaceQuotaHoldSeconds: holdSeconds,
        privilegedClusterRoles: ['cluster-admin', `${id}-operator`],
      },
    } as KubeObject,
    apply,
  );
  cluster.defer(() => cluster.admin.delete(TenancyConfigCrd.type, 'cluster'));
  await organization(orgA, [alice], [], 50);
  await organization(orgB, [bob], [teamB]);
  await organization(orgFull, [alice], [], 1);
  await cluster.admin.apply(
    TenantUserCrd.type,
    { metadata: { name: alice }, spec: { username: alice, defaultOrganization: orgA } } as KubeObject,
    apply,
  );
  cluster.defer(() => cluster.admin.delete(TenantUserCrd.type, alice));
  // Tenants may create and edit namespaces; the policies decide which.
  await cluster.grant(
    { kind: 'Group', name: tenantsGroup },
    {
      name: `${id}-namespace-creator`,
      rules: [
        {
          apiGroups: [''],
          resources: ['namespaces'],
          verbs: ['create', 'get', 'list', 'watch', 'update', 'patch'],
        },
      ],
    },
  );
  aliceClient = await cluster.user(alice, [tenantsGroup, teamB]);
  bobClient = await cluster.user(bob, [tenantsGroup]);
  carolClient = await cluster.user(carol, [tenantsGroup]);
  running = await runCapability(cluster, tenancy);
  // Caches of the webhook hold the organizations once this namespace is admitted.
  await eventually(
    async () => {
      const ns = await createNamespace(aliceClient, track(cluster.unique(`${id}-probe`)));
      return ns.metadata.labels?.[orgLabel] === orgA;
    },
    { what: 'tenancy webhooks active', timeoutMs: 30_000 },
  );
});
afterAll(() => cluster.cleanup());

describe('namespace ownership', () => {
  it('fills in the default organization, and the organization gets admin in the new namespace', async () => {
    const name = track(cluster.unique('alice-ns'));
    const ns = await createNamespace(aliceClient, name);
    expect(ns.metadata.labels?.[orgLabel]).toBe(orgA);
    // Organization RBAC: alice can work in her new namespace.
    await eventually(
      () => cluster.admin.get(Resources.roleBindings, organizationBindingName('admin'), name),
      { what: 'org RoleBinding' },
    );
    await eventually(
      async () => {
        await aliceClient.create(Resources.configMaps, { metadata: { name: 'hello', namespace: name } });
        return true;
      },
      { what: 'alice may create in her namespace' },
    );
    expect((await rejection(bobClient.list(Resources.configMaps, { namespace: name })))?.status).toBe(403);
  });

  it('shows members their own organization (namespaces owned, quota) and no other', async () => {
    const view = `${id}-view`;
    await organization(view, [alice], [], 3);
    const name = track(cluster.unique('view-ns'));
    await createNamespace(aliceClient, name, { [orgLabel]: view });
    // As alice, through RBAC the controller granted: her organization, its namespaces and its quota.
    const seen = await eventually(
      async () => {
        const org = await aliceClient.get<Organization>(OrganizationCrd.type, view);
        return org?.status?.namespaces?.includes(name) ? org : undefined;
      },
      { what: 'alice reads her organization with its namespace' },
    );
    expect(seen.status).toMatchObject({
      namespaceCount: 1,
      namespaceQuota: 3,
      namespaceLabel: orgLabel,
      readerRole: `tenantkit:organization:${view}`,
      observedGeneration: seen.metadata.generation,
    });
    expect(seen.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      message: 'owns 1 of 3 namespaces; its members may read it',
    });
    // Nobody else reads it, and nobody lists organizations (which ones exist stays unseen).
    expect((await rejection(bobClient.get(OrganizationCrd.type, view)))?.status).toBe(403);
    expect((await rejection(carolClient.get(OrganizationCrd.type, view)))?.status).toBe(403);
    expect((await rejection(aliceClient.list(OrganizationCrd.type)))?.status).toBe(403);
    // Membership through a group counts too: alice is in teamB, a member group of orgB.
    await eventually(() => aliceClient.get(OrganizationCrd.type, orgB), { what: 'alice reads orgB (group)' });
    // The namespace leaves the count when it is deleted; a removed member loses read access.
    await cluster.admin.delete(Resources.namespaces, name);
    await eventually(
      async () =>
        (await cluster.admin.get<Organization>(OrganizationCrd.type, view))?.status?.namespaceCount === 0,
      { what: 'namespace count back to 0' },
    );
    await cluster.admin.patch(OrganizationCrd.type, view, undefined, { spec: { members: { users: [] } } });
    await eventually(
      async () => (await rejection(aliceClient.get(OrganizationCrd.type, view)))?.status === 403,
      { what: 'alice no longer reads the organization she left' },
    );
  });

  it("writes an organization's status about once a second while a tenant creates namespaces back to back", async () => {
    const busy = `${id}-busy`;
    await organization(busy, [alice], [], 30);
    const first = await eventually(
      async () => {
        const org = await cluster.admin.get<Organization>(OrganizationCrd.type, busy);
        return org?.status?.readerRole ? org : undefined;
      },
      { what: 'first status of the organization' },
    );
    // Every write of the Organization, as a watcher (a webhook Pod, the search collector) receives it.
    let writes = 0;
    const stop = new AbortController();
    const watching = cluster.admin
      .watch<Organization>(
        OrganizationCrd.type,
        {
          fieldSelector: `metadata.name=${busy}`,
          resourceVersion: first.metadata.resourceVersion!,
          signal: stop.signal,
        },
        (event) => {
          if (event.type === 'MODIFIED') writes++;
        },
      )
      .catch(() => undefined);
    const started = performance.now();
    const names = Array.from({ length: 15 }, () => track(cluster.unique('busy-ns')));
    for (const name of names) await createNamespace(aliceClient, name, { [orgLabel]: busy });
    const created = performance.now();
    // The last namespace is in the status soon after it was created, not after a resync.
    const complete = await eventually(
      async () => {
        const org = await aliceClient.get<Organization>(OrganizationCrd.type, busy);
        return org?.status?.namespaceCount === names.length ? org : undefined;
      },
      { what: 'all 15 namespaces in the status', timeoutMs: 10_000 },
    );
    const settled = performance.now();
    await new Promise((r) => setTimeout(r, 1500));
    stop.abort();
    await watching;
    expect(complete.status?.namespaces).toEqual([...names].sort());
    // One write per namespace would be 15; at most one a second (the first at once) is far fewer. One
    // more allows for a write of the organization's own (its Ready condition) that was still on its way.
    const seconds = (settled - started) / 1000;
    expect(writes).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
    expect(writes).toBeLessThan(names.length);
    expect(settled - created).toBeLessThan(5000);
  });

  it('denies an organization the user is not a member of, and a user without a default', async () => {
    const err = await rejection(createNamespace(bobClient, cluster.unique('bob-ns'), { [orgLabel]: orgA }));
    expect(err?.status).toBe(403);
    expect(err?.message).toContain(`you (${bob}) are not a member of organization "${orgA}"`);
    const noDefault = await rejection(createNamespace(carolClient, cluster.unique('carol-ns')));
    expect(noDefault?.message).toContain(`set label ${orgLabel} to your organization`);
    const missing = await rejection(
      createNamespace(aliceClient, cluster.unique('x'), { [orgLabel]: 'no-such-org' }),
    );
    expect(missing?.message).toContain('organization "no-such-org" does not exist');
  });

  it("checks the namespace that is stored: a later admin webhook's relabel is checked again", async () => {
    // An admin's own mutating webhook, called after tenantkit's (configurations run in name order), moves
    // namespaces named *-relabel into an organization alice is not in: tenantkit is called again and
    // refuses, rather than having checked only the namespace alice sent.
    const other = `${id}-other`;
    await organization(other, [bob], []);
    let reviewed = false;
    const relabel = await startTestWebhooks(
      cluster,
      [
        {
          name: 'relabel',
          type: 'mutating',
          failurePolicy: 'Fail',
          rules: [
            { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'] },
          ],
          handler: (req) => {
            const ns = req.object as KubeObject;
            reviewed = true;
            if (!ns.metadata.name?.endsWith('-relabel')) return allow();
            return mutate(ns, { ...ns, metadata: { ...ns.metadata, labels: { [orgLabel]: other } } });
          },
        },
      ],
      { configName: `zz-${id}-admin-relabel` },
    );
    try {
      // The API server picks a new configuration up asynchronously: wait until it calls the webhook.
      await eventually(
        async () => {
          await cluster.admin.create(Resources.namespaces, {
            metadata: { name: track(cluster.unique('probe')) },
          });
          return reviewed;
        },
        { what: 'the relabel webhook registered', timeoutMs: 30_000 },
      );
      const name = track(`${cluster.unique('ns')}-relabel`);
      const err = await rejection(createNamespace(aliceClient, name, { [orgLabel]: orgA }));
      expect(err?.message).toContain(`you (${alice}) are not a member of organization "${other}"`);
      expect(await cluster.admin.get(Resources.namespaces, name)).toBeUndefined();
    } finally {
      await relabel.stop();
    }
  });

  it('denies reserved names and labels or annotations tenants may not set', async () => {
    const reserved = await rejection(createNamespace(aliceClient, `kube-${id}`));
    expect(reserved?.message).toContain('is reserved (pattern "kube-*")');
    // Forged privileged-looking metadata.
    const forgedLabel = await rejection(
      createNamespace(aliceClient, cluster.unique('forge'), {
        'openshift.io/node-selector': 'x',
        'tenantkit.io/privileged': 'true',
      }),
    );
    expect(forgedLabel?.message).toContain(
      'labels openshift.io/node-selector, tenantkit.io/privileged may not be set',
    );
    const forgedAnnotation = await rejection(
      createNamespace(
        aliceClient,
        cluster.unique('forge'),
        {},
        { 'scheduler.alpha.kubernetes.io/node-selector': 'x' },
      ),
    );
    expect(forgedAnnotation?.message).toContain(
      'annotations scheduler.alpha.kubernetes.io/node-selector may not be set',
    );
    // Allowed keys pass, on create and on update.
    const name = track(cluster.unique('allowed'));
    await createNamespace(aliceClient, name, { 'example.com/team': 'x' }, { 'example.com/owner': 'alice' });
    await aliceClient.patch(Resources.namespaces, name, undefined, {
      metadata: { labels: { 'example.com/team': 'y' } },
    });
    const edit = await rejection(
      aliceClient.patch(Resources.namespaces, name, undefined, {
        metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } },
      }),
    );
    expect(edit?.message).toContain(
      'labels pod-security.kubernetes.io/enforce may not be set, changed or removed',
    );
    const removeOrg = await rejection(
      aliceClient.patch(Resources.namespaces, name, undefined, {
        metadata: { labels: { [orgLabel]: null } },
      }),
    );
    expect(removeOrg?.message).toContain('may not be removed');
  });

  it("never lets a tenant adopt a namespace nobody gave them, nor bind tenants in the cluster's own", async () => {
    // An admin's namespace with a Secret, in no organization.
    const scratch = track(cluster.unique('adm-scratch'));
    await cluster.admin.create(Resources.namespaces, { metadata: { name: scratch } });
    await cluster.admin.create(Resources.secrets, {
      metadata: { name: 'admin-only', namespace: scratch },
      stringData: { token: 'x' },
    } as KubeObject);
    const adopt = { metadata: { labels: { [orgLabel]: orgA } } };
    const adopted = await rejection(aliceClient.patch(Resources.namespaces, scratch, undefined, adopt));
    expect(adopted?.message).toContain(
      `namespace policy unowned-namespace: namespace ${scratch} belongs to no organization, and only a cluster admin may assign it to one; ask a cluster admin to run: kubectl label namespace ${scratch} ${orgLabel}=<organization>`,
    );
    // The cluster's own namespaces, as a server dry run (velero made here when this cluster has none).
    await cluster.admin.apply(Resources.namespaces, { metadata: { name: 'velero' } }, apply);
    for (const target of ['velero', 'kube-system', 'default']) {
      const dryRun = await rejection(
        aliceClient.request('PATCH', `/api/v1/namespaces/${target}`, {
          body: adopt,
          contentType: PatchType.merge,
          query: { dryRun: 'All' },
        }),
      );
      expect(dryRun?.status, target).toBe(403);
      expect(dryRun?.message, target).toMatch(/namespace policy (unowned-namespace|reserved-names)/);
    }
    // Reserved names hold on update too: not even an allowed label.
    const reservedEdit = await rejection(
      aliceClient.patch(Resources.namespaces, 'kube-system', undefined, {
        metadata: { labels: { 'example.com/team': 'x' } },
      }),
    );
    expect(reservedEdit?.message).toContain(
      'namespace policy reserved-names: namespace kube-system is reserved for the cluster (pattern "kube-*"): tenants may not change it',
    );
    // Defence in depth: an admin labels a reserved name and a not-for-tenants namespace for team A; the
    // controller binds no one there, while an ordinary namespace labelled after them gets its binding.
    const kubeLike = track(`kube-${cluster.unique('x')}`);
    const notForTenants = track(cluster.unique('nft'));
    const ordinary = track(cluster.unique('ordinary'));
    await cluster.admin.create(Resources.namespaces, {
      metadata: { name: kubeLike, labels: { [orgLabel]: orgA } },
    });
    await cluster.admin.create(Resources.namespaces, {
      metadata: {
        name: notForTenants,
        labels: { [orgLabel]: orgA, 'tenancy.tenantkit.io/not-for-tenants': 'true' },
      },
    });
    await cluster.admin.create(Resources.namespaces, {
      metadata: { name: ordinary, labels: { [orgLabel]: orgA } },
    });
    const binding = organizationBindingName('admin');
    await eventually(() => cluster.admin.get(Resources.roleBindings, binding, ordinary), {
      what: 'binding in the ordinary namespace',
    });
    expect(await cluster.admin.get(Resources.roleBindings, binding, kubeLike)).toBeUndefined();
    expect(await cluster.admin.get(Resources.roleBindings, binding, notForTenants)).toBeUndefined();
    // Marking a namespace not for tenants later removes the binding tenantkit made there; the mark is
    // not a tenant's to remove.
    await cluster.admin.patch(Resources.namespaces, ordinary, undefined, {
      metadata: { labels: { 'tenancy.tenantkit.io/not-for-tenants': 'true' } },
    });
    await eventually(
      async () => (await cluster.admin.get(Resources.roleBindings, binding, ordinary)) === undefined,
      { what: 'binding removed from the not-for-tenants namespace' },
    );
    const unmark = await rejection(
      aliceClient.patch(Resources.namespaces, ordinary, undefined, {
        metadata: { labels: { 'tenancy.tenantkit.io/not-for-tenants': null } },
      }),
    );
    expect(unmark?.message).toContain('namespace policy reserved-names');
    // alice still cannot read the admin's Secret; an admin can assign the namespace, and then she can.
    expect((await rejection(aliceClient.get(Resources.secrets, 'admin-only', scratch)))?.status).toBe(403);
    await cluster.admin.patch(Resources.namespaces, scratch, undefined, adopt);
    await eventually(() => cluster.admin.get(Resources.roleBindings, binding, scratch), {
      what: 'binding after the admin assigned the namespace',
    });
    await eventually(async () => Boolean(await aliceClient.get(Resources.secrets, 'admin-only', scratch)), {
      what: 'alice reads in the namespace the admin gave team A',
    });
  });

  it("gives tenants, through the chart's roles, edits of their own namespaces and of no other", async () => {
    for (const role of tenancyUserClusterRoles()) {
      await cluster.admin.apply(Resources.clusterRoles, role, apply);
      cluster.defer(() => cluster.admin.delete(Resources.clusterRoles, role.metadata.name!));
    }
    await eventually(
      async () =>
        (
          await cluster.admin.get<KubeObject & { rules?: { resources?: string[]; verbs?: string[] }[] }>(
            Resources.clusterRoles,
            'admin',
          )
        )?.rules?.some((r) => r.resources?.includes('namespaces') && r.verbs?.includes('patch')),
      { what: 'namespace-owner aggregated into admin' },
    );
    const dora = `dora-${id}`;
    const own = `${id}-own`;
    await organization(own, [dora], [], 3);
    await cluster.grant({ kind: 'User', name: dora }, { clusterRole: namespaceCreatorRole });
    const doraClient = await cluster.user(dora, []);
    const mine = track(cluster.unique('dora'));
    await eventually(async () => createNamespace(doraClient, mine, { [orgLabel]: own }), {
      what: 'dora creates a namespace',
    });
    const edit = { metadata: { labels: { 'example.com/team': 'dora' } } };
    await eventually(async () => doraClient.patch(Resources.namespaces, mine, undefined, edit), {
      what: 'dora edits her namespace (organization admin binding)',
    });
    const theirs = track(cluster.unique('not-dora'));
    await createNamespace(aliceClient, theirs);
    expect((await rejection(doraClient.patch(Resources.namespaces, theirs, undefined, edit)))?.status).toBe(
      403,
    );
    expect(
      (await rejection(doraClient.patch(Resources.namespaces, 'default', undefined, edit)))?.status,
    ).toBe(403);
  });

  it('transfers a namespace only between organizations the user belongs to, within quota', async () => {
    const name = track(cluster.unique('move'));
    await createNamespace(aliceClient, name, { [orgLabel]: orgA });
    // bob is not in A: he may not take it.
    const steal = await rejection(
      bobClient.patch(Resources.namespaces, name, undefined, { metadata: { labels: { [orgLabel]: orgB } } }),
    );
    expect(steal?.message).toContain(`belongs to "${orgA}"`);
    // alice is in A and (by group) in B: she may move it.
    await aliceClient.patch(Resources.namespaces, name, undefined, {
      metadata: { labels: { [orgLabel]: orgB } },
    });
    expect((await cluster.admin.get(Resources.namespaces, name))?.metadata.labels?.[orgLabel]).toBe(orgB);
    // orgFull has a quota of 1: one namespace fits, a transfer of a second does not.
    track(`${id}-full-1`);
    await createNamespace(aliceClient, `${id}-full-1`, { [orgLabel]: orgFull });
    const full = await rejection(
      aliceClient.patch(Resources.namespaces, name, undefined, {
        metadata: { labels: { [orgLabel]: orgFull } },
      }),
    );
    expect(full?.message).toContain(`organization "${orgFull}" already owns 1 of its 1 namespaces`);
  });

  /** An organization of `quota` owning `before` namespaces, then `parallel` creates at once by alice. */
  async function fillThenRace(org: string, quota: number, before: number, parallel: number) {
    await organization(org, [alice], [], quota);
    for (let i = 0; i < before; i++)
      await createNamespace(aliceClient, track(`${org}-pre-${i}`), { [orgLabel]: org });
    const names = Array.from({ length: parallel }, (_, i) => track(`${org}-par-${i}`));
    return Promise.allSettled(names.map((n) => createNamespace(aliceClient, n, { [orgLabel]: org })));
  }

  it('lets exactly one of 20 parallel creates through at quota - 1', async () => {
    const org = `${id}-race`;
    const results = await fillThenRace(org, 3, 2, 20);
    const ok = results.filter((r) => r.status === 'fulfilled');
    expect(ok).toHaveLength(1);
    for (const r of results) {
      if (r.status === 'rejected') expect((r.reason as ApiError).message).toContain('namespace quota');
    }
    const owned = await cluster.admin.list(Resources.namespaces, { labelSelector: `${orgLabel}=${org}` });
    expect(owned.items).toHaveLength(3);
  });

  it('holds a larger quota exactly while slots come from grants: 10 of 20 parallel creates with 10 left', async () => {
    const org = `${id}-grants`;
    const results = await fillThenRace(org, 40, 30, 20);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    for (const r of results) {
      if (r.status === 'rejected')
        expect((r.reason as ApiError).message).toContain(`already owns 40 of its 40 namespaces`);
    }
    const owned = await cluster.admin.list(Resources.namespaces, { labelSelector: `${orgLabel}=${org}` });
    expect(owned.items).toHaveLength(40);
  });

  it('does not count terminating namespaces against the quota', async () => {
    const org = `${id}-term`;
    await organization(org, [alice], [], 1);
    const first = `${org}-1`;
    await createNamespace(aliceClient, first, { [orgLabel]: org });
    // A finalizer keeps the namespace Terminating while the test runs.
    await cluster.admin.create(Resources.configMaps, {
      metadata: { name: 'hold', namespace: first, finalizers: ['example.com/hold'] },
    });
    await cluster.admin.delete(Resources.namespaces, first);
    await eventually(
      async () =>
        (await cluster.admin.get<KubeObject & { status?: { phase?: string } }>(Resources.namespaces, first))
          ?.status?.phase === 'Terminating',
    );
    const second = track(`${org}-2`);
    await eventually(
      async () => {
        await createNamespace(aliceClient, second, { [orgLabel]: org });
        return true;
      },
      { what: 'a new namespace fits once the old one is terminating' },
    );
    await cluster.admin.patch(Resources.configMaps, 'hold', first, { metadata: { finalizers: null } });
  });

  it("confines a service account to its own namespace's organization", async () => {
    const home = track(cluster.unique('sa-home'));
    await createNamespace(aliceClient, home, { [orgLabel]: orgA });
    const { client: sa } = await cluster.serviceAccount(home, 'builder');
    await cluster.grant(
      { kind: 'ServiceAccount', name: 'builder', namespace: home },
      { clusterRole: `${id}-namespace-creator` },
    );
    const other = await rejection(createNamespace(sa, cluster.unique('sa-other'), { [orgLabel]: orgB }));
    expect(other?.message).toContain(`belongs to organization "${orgA}"`);
    const name = track(cluster.unique('sa-made'));
    const made = await eventually(() => createNamespace(sa, name), {
      what: 'service account creates a namespace',
    });
    expect(made.metadata.labels?.[orgLabel]).toBe(orgA);
  });

  it('grants bypass through ClusterRoleBindings only, never through a RoleBinding a tenant made', async () => {
    const name = track(cluster.unique('mine'));
    await createNamespace(aliceClient, name, { [orgLabel]: orgA });
    await cluster.admin.apply(
      Resources.clusterRoles,
      { metadata: { name: `${id}-operator` }, rules: [] } as KubeObject,
      apply,
    );
    cluster.defer(() => cluster.admin.delete(Resources.clusterRoles, `${id}-operator`));
    // alice, admin of her namespace, binds the privileged-listed role to herself there: no bypass.
    await eventually(
      async () => {
        await aliceClient.create(Resources.roleBindings, {
          metadata: { name: 'self-promotion', namespace: name },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${id}-operator` },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: alice }],
        } as KubeObject);
        return true;
      },
      { what: 'alice binds a role in her namespace' },
    );
    expect((await rejection(createNamespace(aliceClient, `kube-${id}-x`)))?.message).toContain('is reserved');
    // The same role through a ClusterRoleBinding (which only an admin can make) does bypass.
    await cluster.grant({ kind: 'User', name: carol }, { clusterRole: `${id}-operator` });
    await eventually(
      async () => {
        await createNamespace(carolClient, track(`kube-${id}-op`));
        return true;
      },
      { what: 'privileged operator bypasses the policies' },
    );
  });

  it("keeps reserved ResourceQuotas out of tenants' hands", async () => {
    const name = track(cluster.unique('rq'));
    await createNamespace(aliceClient, name, { [orgLabel]: orgA });
    await cluster.admin.create(Resources.resourceQuotas, {
      metadata: { name: 'organization-compute', namespace: name, labels: { [reservedLabel]: 'true' } },
      spec: { hard: { 'requests.cpu': '4' } },
    } as KubeObject);
    await eventually(
      () => cluster.admin.get(Resources.roleBindings, organizationBindingName('admin'), name),
      { what: 'alice is admin' },
    );
    // The built-in admin role cannot touch quotas at all; give alice a role that can, as some
    // organizations' roles do, so that the guardrail itself is what stops her.
    await cluster.grant(
      { kind: 'User', name: alice },
      { rules: [{ apiGroups: [''], resources: ['resourcequotas', 'limitranges'], verbs: ['*'] }] },
      name,
    );
    await eventually(
      async () =>
        (await rejection(aliceClient.list(Resources.resourceQuotas, { namespace: name }))) === undefined,
    );
    // Wait until RBAC lets her try, so that the denial below is the guardrail's and not RBAC's.
    const del = await eventually(
      async () => {
        const e = await rejection(aliceClient.delete(Resources.resourceQuotas, 'organization-compute', name));
        return e?.message.includes('guardrail') ? e : undefined;
      },
      { what: 'guardrail denies the delete' },
    );
    expect(del?.message).toContain('is a guardrail managed by tenantkit and cannot be deleted');
    const edit = await rejection(
      aliceClient.patch(Resources.resourceQuotas, 'organization-compute', name, {
        spec: { hard: { 'requests.cpu': '400' } },
      }),
    );
    expect(edit?.message).toContain('cannot be changed');
    const unlabel = await rejection(
      aliceClient.patch(Resources.resourceQuotas, 'organization-compute', name, {
        metadata: { labels: { [reservedLabel]: null } },
      }),
    );
    expect(unlabel?.status).toBe(403);
    // Her own quotas stay hers.
    await aliceClient.create(Resources.resourceQuotas, {
      metadata: { name: 'mine', namespace: name },
      spec: { hard: { pods: '10' } },
    } as KubeObject);
    expect(await aliceClient.delete(Resources.resourceQuotas, 'mine', name)).toBe(true);
  });

  it("lets a tenant's claim name only a volume reserved for it", async () => {
    const name = track(cluster.unique('pvc'));
    await createNamespace(aliceClient, name, { [orgLabel]: orgA });
    await eventually(
      () => cluster.admin.get(Resources.roleBindings, organizationBindingName('admin'), name),
      { what: 'alice is admin' },
    );
    // Three volumes an admin made: one reserved for alice's claim "data", one Available to anyone,
    // one reserved for a claim in another namespace.
    const volume = (suffix: string, claimRef?: { namespace: string; name: string }) => {
      const pv = `${name}-${suffix}`;
      cluster.defer(() => cluster.admin.delete(Resources.persistentVolumes, pv));
      return cluster.admin
        .create(Resources.persistentVolumes, {
          metadata: { name: pv },
          spec: {
            capacity: { storage: '1Gi' },
            accessModes: ['ReadWriteOnce'],
            persistentVolumeReclaimPolicy: 'Retain',
            storageClassName: '',
            hostPath: { path: `/tmp/${pv}` },
            ...(claimRef ? { claimRef } : {}),
          },
        } as KubeObject)
        .then(() => pv);
    };
    const reserved = await volume('reserved', { namespace: name, name: 'data' });
    const available = await volume('available');
    const elsewhere = await volume('elsewhere', { namespace: 'someone-else', name: 'data' });
    const claim = (claimName: string, volumeName?: string) =>
      aliceClient.create(Resources.persistentVolumeClaims, {
        metadata: { name: claimName, namespace: name },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          storageClassName: '',
          ...(volumeName ? { volumeName } : {}),
        },
      } as KubeObject);
    const notReserved = (claimName: string, pv: string) =>
      `PersistentVolumeClaim ${name}/${claimName}: spec.volumeName "${pv}" names a PersistentVolume that is not reserved for this claim`;
    await eventually(async () => (await rejection(claim('data', reserved))) === undefined, {
      what: 'alice may create claims (RBAC) and the reserved volume is hers',
    });
    expect((await rejection(claim('grab', available)))?.message).toContain(notReserved('grab', available));
    expect((await rejection(claim('data2', elsewhere)))?.message).toContain(notReserved('data2', elsewhere));
    // A volume that does not exist gets the same answer: nothing is learnt about other volumes.
    expect((await rejection(claim('ghost', `${name}-none`)))?.message).toContain(
      notReserved('ghost', `${name}-none`),
    );
    // Filling in the name later is the same request (a claim of a class with a provisioner, which
    // nothing here runs: it waits unbound).
    const waiting = `${name}-waiting`;
    await cluster.admin.create(Resources.storageClasses, {
      metadata: { name: waiting },
      provisioner: `example.com/${waiting}`,
    } as KubeObject);
    cluster.defer(() => cluster.admin.delete(Resources.storageClasses, waiting));
    await aliceClient.create(Resources.persistentVolumeClaims, {
      metadata: { name: 'later', namespace: name },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        storageClassName: waiting,
      },
    } as KubeObject);
    expect(
      (
        await rejection(
          aliceClient.patch(Resources.persistentVolumeClaims, 'later', name, {
            spec: { volumeName: available },
          }),
        )
      )?.message,
    ).toContain(notReserved('later', available));
    // The admin may bind anything (privileged), and claims without a volume name are not asked about.
    await cluster.admin.create(Resources.persistentVolumeClaims, {
      metadata: { name: 'by-admin', namespace: name },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        storageClassName: '',
        volumeName: available,
      },
    } as KubeObject);
  });

  it("binds a tenant's claim only to a new volume or one reserved for it, never by class or selector", async () => {
    const name = track(cluster.unique('bob-pvc'));
    await createNamespace(bobClient, name, { [orgLabel]: orgB });
    await eventually(
      () => cluster.admin.get(Resources.roleBindings, organizationBindingName('admin'), name),
      { what: 'bob is admin' },
    );
    // The admin's classes: static volumes only, and one with a provisioner (which nothing here runs).
    const staticClass = `${name}-static`;
    const provisioned = `${name}-provisioned`;
    for (const [cls, provisioner] of [
      [staticClass, 'kubernetes.io/no-provisioner'],
      [provisioned, `example.com/${name}`],
    ] as const) {
      await cluster.admin.create(Resources.storageClasses, {
        metadata: { name: cls },
        provisioner,
        volumeBindingMode: 'Immediate',
      } as KubeObject);
      cluster.defer(() => cluster.admin.delete(Resources.storageClasses, cls));
    }
    const volume = async (
      pv: string,
      storageClassName: string,
      claimRef?: { namespace: string; name: string },
    ) => {
      cluster.defer(() => cluster.admin.delete(Resources.persistentVolumes, pv));
      await cluster.admin.create(Resources.persistentVolumes, {
        metadata: { name: pv },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName,
          hostPath: { path: `/tmp/${pv}` },
          ...(claimRef ? { claimRef } : {}),
        },
      } as KubeObject);
      return pv;
    };
    // team A's static volume, Available to whatever claim matches; and one reserved for bob's "mine".
    const teamAVolume = await volume(`${name}-team-a`, staticClass);
    const reserved = await volume(`${name}-mine`, staticClass, { namespace: name, name: 'mine' });
    await volume(`${name}-spare`, provisioned);
    const claim = (claimName: string, storageClassName: string, selector?: unknown) =>
      bobClient.create(Resources.persistentVolumeClaims, {
        metadata: { name: claimName, namespace: name },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          storageClassName,
          ...(selector ? { selector } : {}),
        },
      } as KubeObject);
    const refusal = (claimName: string) =>
      `; tenants get only new volumes from a provisioner or a volume reserved for their claim: use a StorageClass with a provisioner and no selector, or ask a cluster admin to reserve a volume for it (the volume's spec.claimRef: namespace ${name}, name ${claimName})`;
    const grab = await eventually(
      async () => {
        const e = await rejection(claim('grab', staticClass));
        return e?.message.includes('PersistentVolumeClaim') ? e : undefined; // RBAC lets bob create claims soon
      },
      { what: "bob's class-matched claim refused" },
    );
    expect(grab.message).toContain(
      `PersistentVolumeClaim ${name}/grab: StorageClass "${staticClass}" has no provisioner (static volumes only)`,
    );
    expect(grab.message).toContain(refusal('grab'));
    expect(grab.message).not.toContain(teamAVolume);
    const spare = await rejection(claim('spare', provisioned));
    expect(spare?.message).toContain(
      `StorageClass "${provisioned}" has volumes that are not reserved for any claim, and the binder would hand one of them to this claim instead of a new one${refusal('spare')}`,
    );
    const selected = await rejection(claim('picked', provisioned, { matchLabels: { team: 'a' } }));
    expect(selected?.message).toContain('spec.selector picks among existing volumes');
    // The claim the admin reserved a volume for is admitted. (The test control plane runs no volume
    // binder, devenv/go/controlplane/main.go `controllers`: binding itself is Kubernetes' and not observed here.)
    await claim('mine', staticClass);
    expect(reserved).toBe(`${name}-mine`);
  });

  it('applies configuration changes live and rejects unknown configuration keys', async () => {
    const name = track(cluster.unique('live'));
    await createNamespace(aliceClient, name, { [orgLabel]: orgA });
    const add = () =>
      aliceClient.patch(Resources.namespaces, name, undefined, {
        metadata: { labels: { 'team.example.org/cost-center': '42' } },
      });
    expect((await rejection(add()))?.status).toBe(403);
    await cluster.admin.patch(TenancyConfigCrd.type, 'cluster', undefined, {
      spec: { allowedLabels: ['example.com/*', 'team.example.org/*'] },
    });
    await eventually(async () => (await rejection(add())) === undefined, {
      what: 'new allowed label effective',
    });
    const typo = await rejection(
      cluster.admin.patch(TenancyConfigCrd.type, 'cluster', undefined, { spec: { allowedLabel: ['x'] } }),
    );
    expect(typo?.status).toBe(422);
    expect(typo?.message).toContain('unknown key in spec');
  });

  it('switches a policy off and on again, live', async () => {
    const reserved = `kube-${id}-switch`;
    expect((await rejection(createNamespace(aliceClient, reserved)))?.message).toContain('is reserved');
    await cluster.admin.patch(TenancyConfigCrd.type, 'cluster', undefined, {
      spec: { disabledPolicies: ['namespace-policy'] },
    });
    await eventually(
      async () => {
        await createNamespace(aliceClient, track(reserved));
        return true;
      },
      { what: 'namespace-policy switched off' },
    );
    // The organization is still filled in: each policy switches off on its own.
    expect((await cluster.admin.get(Resources.namespaces, reserved))?.metadata.labels?.[orgLabel]).toBe(orgA);
    await cluster.admin.patch(TenancyConfigCrd.type, 'cluster', undefined, {
      spec: { disabledPolicies: null },
    });
    await eventually(
      async () =>
        (
          await rejection(createNamespace(aliceClient, track(cluster.unique(`kube-${id}`))))
        )?.message.includes('is reserved'),
      {
        what: 'namespace-policy back on',
      },
    );
    const unknown = await rejection(
      cluster.admin.patch(TenancyConfigCrd.type, 'cluster', undefined, {
        spec: { disabledPolicies: ['everything'] },
      }),
    );
    expect(unknown?.status).toBe(422);
  });

  it('applies the usage profile in every organization namespace, with admin overrides and without overwriting others', async () => {
    const profile = `${id}-standard`;
    await cluster.admin.apply(
      UsageProfileCrd.type,
      {
        metadata: { name: profile },
        spec: {
          namespaceCount: 40,
          resources: {
            'organization-compute': {
              apiVersion: 'v1',
              kind: 'ResourceQuota',
              spec: { hard: { 'requests.cpu': '4', 'requests.memory': '16Gi' } },
            },
            'organization-defaults': {
              apiVersion: 'v1',
              kind: 'LimitRange',
              spec: { limits: [{ type: 'Container', defaultRequest: { cpu: '100m', memory: '128Mi' } }] },
            },
          },
        },
      } as KubeObject,
      apply,
    );
    cluster.defer(() => cluster.admin.delete(UsageProfileCrd.type, profile));
    const org = `${id}-profiled`;
    await cluster.admin.apply(
      OrganizationCrd.type,
      {
        metadata: { name: org },
        spec: { members: { users: [alice] }, usageProfile: profile },
      } as Organization,
      apply,
    );
    cluster.defer(() => cluster.admin.delete(OrganizationCrd.type, org));
    const ns = track(`${org}-1`);
    await createNamespace(aliceClient, ns, { [orgLabel]: org });
    const computeQuota = () =>
      cluster.admin.get<KubeObject & { spec: { hard: Record<string, string> } }>(
        Resources.resourceQuotas,
        'organization-compute',
        ns,
      );
    const quota = await eventually(computeQuota, { what: 'profile quota created' });
    expect(quota.spec.hard['requests.cpu']).toBe('4');
    expect(quota.metadata.labels?.[reservedLabel]).toBe('true');
    await eventually(() => cluster.admin.get(Resources.limitRanges, 'organization-defaults', ns), {
      what: 'profile limit range created',
    });

    // Tenants cannot grant themselves more through the override annotation; an admin can.
    const forged = await rejection(
      aliceClient.patch(Resources.namespaces, ns, undefined, {
        metadata: { annotations: { 'resourcequota.tenantkit.io/organization-compute.requests.cpu': '64' } },
      }),
    );
    expect(forged?.message).toContain('may not be set, changed or removed by tenants');
    await cluster.admin.patch(Resources.namespaces, ns, undefined, {
      metadata: { annotations: { 'resourcequota.tenantkit.io/organization-compute.requests.cpu': '8' } },
    });
    await eventually(async () => (await computeQuota())?.spec.hard['requests.cpu'] === '8', {
      what: 'admin override applied',
    });
    // Drift repair: a deleted guardrail (by an admin) comes back.
    await cluster.admin.delete(Resources.limitRanges, 'organization-defaults', ns);
    await eventually(() => cluster.admin.get(Resources.limitRanges, 'organization-defaults', ns), {
      what: 'limit range restored',
    });

    // A same-named object tenantkit did not create is reported, not overwritten.
    const other = `${org}-2`;
    await cluster.admin.create(Resources.namespaces, { metadata: { name: other } });
    cluster.defer(() => cluster.admin.delete(Resources.namespaces, other));
    await cluster.admin.create(Resources.resourceQuotas, {
      metadata: { name: 'organization-compute', namespace: other },
      spec: { hard: { pods: '3' } },
    } as KubeObject);
    await cluster.admin.patch(Resources.namespaces, other, undefined, {
      metadata: { labels: { [orgLabel]: org } },
    });
    await eventually(
      async () => {
        const list = await cluster.admin.list<KubeObject & { reason?: string; note?: string }>(
          Resources.events,
          { namespace: 'default', fieldSelector: `regarding.name=${other}` },
        );
        return list.items.some((e) => e.reason === 'UsageProfileConflict');
      },
      { what: 'conflict reported as an Event' },
    );
    const kept = await cluster.admin.get<KubeObject & { spec: { hard: Record<string, string> } }>(
      Resources.resourceQuotas,
      'organization-compute',
      other,
    );
    expect(kept?.spec.hard).toEqual({ pods: '3' });

    // The organization's status, which the organization controller rewrites whenever it gains or loses a
    // namespace, concerns none of its namespaces' profile objects: no namespace of it is reconciled again
    // (each such write used to reconcile every namespace of the organization).
    const reconciles = async () =>
      (await registry.getSingleMetricAsString('tenantkit_reconcile_total'))
        .split('\n')
        .filter((l) => l.includes('controller="usage-profile"'))
        .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    // Other namespaces of this file may still be settling: start once the count stood still for 500 ms.
    let quiet = await reconciles();
    for (let still = 0; still < 5; ) {
      await new Promise((r) => setTimeout(r, 100));
      const now = await reconciles();
      still = now === quiet ? still + 1 : 0;
      quiet = now;
    }
    for (let i = 0; i < 10; i++) {
      await cluster.admin.patch(
        OrganizationCrd.type,
        org,
        undefined,
        { status: { namespaceQuota: 100 + i } },
        undefined,
        'status',
      );
    }
    await new Promise((r) => setTimeout(r, 1500));
    // Each write used to reconcile both of its namespaces (20 or more in all); a stray reconcile of
    // another test's namespace is no failure.
    expect(await reconciles()).toBeLessThan(quiet + 5);
    // A change of its spec does: another profile replaces the objects of the first in each namespace.
    const smaller = `${id}-smaller`;
    await cluster.admin.apply(
      UsageProfileCrd.type,
      {
        metadata: { name: smaller },
        spec: {
          resources: {
            'organization-compute': {
              apiVersion: 'v1',
              kind: 'ResourceQuota',
              spec: { hard: { 'requests.cpu': '2', 'requests.memory': '4Gi' } },
            },
          },
        },
      } as KubeObject,
      apply,
    );
    cluster.defer(() => cluster.admin.delete(UsageProfileCrd.type, smaller));
    await cluster.admin.patch(OrganizationCrd.type, org, undefined, { spec: { usageProfile: smaller } });
    await eventually(
      async () => {
        const q = await computeQuota();
        const defaults = await cluster.admin.get(Resources.limitRanges, 'organization-defaults', ns);
        // The admin's override of requests.cpu stays.
        return q?.spec.hard['requests.memory'] === '4Gi' && q.spec.hard['requests.cpu'] === '8' && !defaults;
      },
      { what: "the organization's new profile applied in its namespace" },
    );
  });

  it("assigns OpenShift projects to the requester's default organization (stand-in project API)", async () => {
    await cluster.grant(
      { kind: 'Group', name: tenantsGroup },
      {
        rules: [
          {
            apiGroups: ['project.openshift.io'],
            resources: ['projectrequests', 'projects'],
            verbs: ['create'],
          },
        ],
      },
    );
    // Not carol: an earlier test made her a privileged operator.
    const daveClient = await cluster.user(`dave-${id}`, [tenantsGroup]);
    const request = (client: KubeClient, name: string) =>
      client.create(ProjectRequestStandInCrd.type, { metadata: { name }, spec: {} } as KubeObject);
    const denied = await eventually(
      async () => {
        const e = await rejection(request(daveClient, cluster.unique('pr')));
        return e?.message.includes('have no default organization') ? e : undefined;
      },
      { what: 'project request without a default organization denied' },
    );
    expect(denied.status).toBe(403);
    const asked = cluster.unique('pr');
    await request(aliceClient, asked);
    cluster.defer(() => cluster.admin.delete(ProjectRequestStandInCrd.type, asked));

    // The control plane (privileged) creates the Project, naming alice as requester.
    const project = await cluster.admin.create<KubeObject>(ProjectStandInCrd.type, {
      metadata: { name: asked, annotations: { 'openshift.io/requester': alice } },
      spec: {},
    } as KubeObject);
    cluster.defer(() => cluster.admin.delete(ProjectStandInCrd.type, asked));
    expect(project.metadata.labels?.[orgLabel]).toBe(orgA);
    // A tenant creating a Project directly cannot borrow someone else's organization.
    const forged = await aliceClient.create<KubeObject>(ProjectStandInCrd.type, {
      metadata: { name: cluster.unique('pj'), annotations: { 'openshift.io/requester': bob } },
      spec: {},
    } as KubeObject);
    cluster.defer(() => cluster.admin.delete(ProjectStandInCrd.type, forged.metadata.name!));
    expect(forged.metadata.labels?.[orgLabel]).toBe(orgA);
  });

  it('honours a default organization on an OpenShift User object (stand-in user API)', async () => {
    const erin = `erin-${id}`;
    await cluster.admin.create(UserStandInCrd.type, {
      metadata: { name: erin, annotations: { 'appuio.io/default-organization': orgB } },
      spec: {},
    } as KubeObject);
    cluster.defer(() => cluster.admin.delete(UserStandInCrd.type, erin));
    const erinClient = await cluster.user(erin, [tenantsGroup, teamB]);
    const name = track(cluster.unique('erin'));
    const ns = await eventually(
      async () => {
        const e = await rejection(createNamespace(erinClient, name));
        return e === undefined ? await cluster.admin.get(Resources.namespaces, name) : undefined;
      },
      { what: 'erin creates a namespace' },
    );
    expect(ns.metadata.labels?.[orgLabel]).toBe(orgB);
  });

  describe('pod defaults and fair use', () => {
    const pod = (name: string, spec: Record<string, unknown> = {}) => ({
      metadata: { name },
      spec: {
        restartPolicy: 'Never',
        containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu: '1', memory: '1Gi' } } }],
        ...spec,
      },
    });
    type PodObject = KubeObject & {
      spec: { activeDeadlineSeconds?: number; nodeSelector?: Record<string, string> };
    };
    const createPod = (namespace: string, body: ReturnType<typeof pod>) =>
      aliceClient.create<PodObject>(Resources.pods, {
        ...body,
        metadata: { ...body.metadata, namespace },
      } as PodObject);
    let ns = '';
    beforeAll(async () => {
      ns = track(cluster.unique('pods'));
      await createNamespace(aliceClient, ns, { [orgLabel]: orgA });
      // Pods need the namespace's default service account and alice's admin binding.
      await eventually(
        async () =>
          (await cluster.admin.get(Resources.serviceAccounts, 'default', ns)) !== undefined &&
          (await cluster.admin.get(Resources.roleBindings, organizationBindingName('admin'), ns)) !==
            undefined,
      );
      await eventually(
        async () => (await rejection(aliceClient.list(Resources.pods, { namespace: ns }))) === undefined,
      );
    });

    it('gives run-once pods the default deadline, or the namespace override capped at the maximum', async () => {
      expect((await createPod(ns, pod('p1'))).spec.activeDeadlineSeconds).toBe(1800);
      expect(
        (await createPod(ns, pod('p2', { restartPolicy: 'Always' }))).spec.activeDeadlineSeconds,
      ).toBeUndefined();
      expect((await createPod(ns, pod('p3', { activeDeadlineSeconds: 5 }))).spec.activeDeadlineSeconds).toBe(
        5,
      );
      // The tenant sets the override on their own namespace (an allowed annotation).
      await aliceClient.patch(Resources.namespaces, ns, undefined, {
        metadata: { annotations: { 'appuio.io/active-deadline-seconds-override': '120' } },
      });
      await eventually(
        async () => (await createPod(ns, pod(cluster.unique('p')))).spec.activeDeadlineSeconds === 120,
        { what: 'override applies' },
      );
      const warnings: string[] = [];
      aliceClient.onWarning = (w) => warnings.push(w);
      await aliceClient.patch(Resources.namespaces, ns, undefined, {
        metadata: { annotations: { 'appuio.io/active-deadline-seconds-override': '999999' } },
      });
      const capped = await eventually(
        async () => {
          const p = await createPod(ns, pod(cluster.unique('p')));
          return p.spec.activeDeadlineSeconds === 86400 ? p : undefined;
        },
        { what: 'override capped' },
      );
      expect(capped.spec.activeDeadlineSeconds).toBe(86400);
      expect(warnings.join('\n')).toContain('exceeds the cluster maximum');
      aliceClient.onWarning = () => {};
    });

    it('rejects a malformed override with a clear message, not a server error', async () => {
      await aliceClient.patch(Resources.namespaces, ns, undefined, {
        metadata: { annotations: { 'appuio.io/active-deadline-seconds-override': 'ten minutes' } },
      });
      const err = await eventually(
        async () => {
          const e = await rejection(createPod(ns, pod(cluster.unique('p'))));
          return e?.message.includes('not a positive whole number') ? e : undefined;
        },
        { what: 'malformed override denied' },
      );
      expect(err.status).toBe(400);
      await aliceClient.patch(Resources.namespaces, ns, undefined, {
        metadata: { annotations: { 'appuio.io/active-deadline-seconds-override': null } },
      });
    });

    it('fills in missing node-selector keys from the namespace annotation', async () => {
      await aliceClient.patch(Resources.namespaces, ns, undefined, {
        metadata: { annotations: { 'appuio.io/default-node-selector': 'node-class=flex,zone=a' } },
      });
      const p = await eventually(
        async () => {
          const created = await createPod(ns, pod(cluster.unique('p'), { nodeSelector: { zone: 'b' } }));
          return created.spec.nodeSelector?.['node-class'] ? created : undefined;
        },
        { what: 'node selector default applies' },
      );
      expect(p.spec.nodeSelector).toEqual({ 'node-class': 'flex', zone: 'b' });
      await aliceClient.patch(Resources.namespaces, ns, undefined, {
        metadata: { annotations: { 'appuio.io/default-node-selector': 'nonsense' } },
      });
      const err = await eventually(
        async () => {
          const e = await rejection(createPod(ns, pod(cluster.unique('p'))));
          return e?.message.includes('use key=value pairs') ? e : undefined;
        },
        { what: 'malformed selector denied' },
      );
      expect(err.message).toContain('"nonsense" is not key=value');
      await aliceClient.patch(Resources.namespaces, ns, undefined, {
        metadata: { annotations: { 'appuio.io/default-node-selector': null } },
      });
    });

    it('warns, but never denies, below the fair-use memory per CPU', async () => {
      await cluster.admin.patch(TenancyConfigCrd.type, 'cluster', undefined, {
        spec: { fairUseRatios: [{ memoryPerCpu: '4Gi' }] },
      });
      const warnings: string[] = [];
      aliceClient.onWarning = (w) => warnings.push(w);
      await eventually(
        async () => {
          warnings.length = 0;
          await createPod(ns, pod(cluster.unique('p')));
          return warnings.some((w) => w.includes('below the fair-use ratio of 4.00 GiB per CPU'));
        },
        { what: 'fair-use warning' },
      );
      warnings.length = 0;
      const fine = pod(cluster.unique('p'));
      fine.spec.containers[0]!.resources.requests.memory = '8Gi';
      await createPod(ns, fine);
      expect(warnings.filter((w) => w.includes('fair use'))).toEqual([]);
      aliceClient.onWarning = () => {};
    });
  });
});

/** A namespace create as kube-apiserver would ask the webhook about it, by `username`. */
function namespaceReview(name: string, username: string, labels: Record<string, string>): AdmissionReview {
  const uid = randomUUID();
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'Namespace' },
      resource: { group: '', version: 'v1', resource: 'namespaces' },
      name,
      operation: 'CREATE',
      userInfo: { username, groups: [tenantsGroup, 'system:authenticated'] },
      object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } } as KubeObject,
      dryRun: false,
    },
  };
}

interface ClientCertificate {
  certPem: string;
  keyPem: string;
}

/**
 * Posts `review` straight to the webhook server's `path`, as anyone who reaches its port could, with
 * `client` as its TLS client certificate if given. Answers the review, or the HTTP status and body.
 */
function postReview(
  path: string,
  review: AdmissionReview,
  client?: ClientCertificate,
): Promise<AdmissionReview | { status: number; text: string }> {
  const body = JSON.stringify(review);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: running.webhooks.server.port,
        path,
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        rejectUnauthorized: false,
        ...(client ? { cert: client.certPem, key: client.keyPem } : {}),
      },
      (res) => {
        let text = '';
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => {
          if (res.statusCode !== 200) resolve({ status: res.statusCode ?? 0, text });
          else resolve(JSON.parse(text) as AdmissionReview);
        });
      },
    );
    req.on('error', reject).end(body);
  });
}

describe('forged admission reviews', () => {
  it("hold an organization's last slots only for the hold, and a refusal meanwhile says so", async () => {
    const org = `${id}-forged`;
    await organization(org, [bob], [], 3);
    await createNamespace(bobClient, track(`${org}-real-0`), { [orgLabel]: org });
    // Two reviews in bob's name straight to the webhook port, for namespaces nobody then creates. They
    // carry the API server's client certificate: the server cannot tell them apart, as on a cluster
    // that does not verify callers (the chart's default).
    const { certPem, keyPem } = clusterInfo().webhookClient;
    const forgedAt = Date.now();
    for (const name of [`${org}-forged-1`, `${org}-forged-2`]) {
      const review = namespaceReview(name, bob, { [orgLabel]: org });
      const answer = await postReview('/namespace-create', review, { certPem, keyPem });
      expect('response' in answer && answer.response?.allowed, name).toBe(true);
    }
    // While they are held, bob's real create is refused, saying why and when they free.
    const wanted = track(`${org}-real-1`);
    const refused = await rejection(createNamespace(bobClient, wanted, { [orgLabel]: org }));
    expect(refused?.message).toContain(`organization "${org}" already owns 3 of its 3 namespaces`);
    expect(refused?.message).toMatch(
      new RegExp(
        `2 of them are slots held for namespaces admitted within the last ${holdSeconds} s that do not exist yet: .*admission reviews no create followed; the first frees at \\d{4}-\\d\\d-\\d\\dT[\\d:]+Z \\(in [1-${holdSeconds}] s\\)`,
      ),
    );
    // Once the hold has run out, the forged names cost bob's organization nothing.
    await eventually(
      async () => {
        await createNamespace(bobClient, wanted, { [orgLabel]: org });
        return true;
      },
      { what: "bob's create once the forged slots are free", timeoutMs: 15_000, intervalMs: 250 },
    );
    const held = Date.now() - forgedAt;
    expect(held).toBeGreaterThanOrEqual(holdSeconds * 1000 - 500);
    expect(held).toBeLessThan(holdSeconds * 1000 + 3_000);
  });

  it("are refused without the API server's client certificate, while the API server's calls pass", async () => {
    const org = `${id}-unsigned`;
    await organization(org, [bob], [], 1);
    const review = () => namespaceReview(`${org}-forged`, bob, { [orgLabel]: org });
    const none = await postReview('/namespace-create', review());
    expect(none).toMatchObject({ status: 403 });
    expect('text' in none && none.text).toContain('ClientCertificateRequired');
    // A client certificate of another CA does no better.
    const other = await (await createCA('not-the-api-server')).issue({
      commonName: 'forger',
      usage: 'client',
    });
    expect(await postReview('/namespace-create', review(), other)).toMatchObject({ status: 403 });
    // Nothing was reserved: bob's one slot is his, through the API server that presents its certificate.
    await createNamespace(bobClient, track(`${org}-real`), { [orgLabel]: org });
  });
});
