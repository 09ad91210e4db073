// Organizations apart on the network, tried with packets on the local node with its NetworkPolicy enforcer
// (kube-network-policies): two tenants in two organizations, each through their own credentials. bob's
// Pods do not reach alice's Pods or Services, not even after alice opens her namespace with a
// NetworkPolicy of her own; alice's Pods in two namespaces of her organization reach each other; DNS
// works for everybody; a namespace the admin moves to another organization changes sides within seconds.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalNode } from '../../devenv/node/launch.ts';
import { type Organization, OrganizationCrd } from '../../src/crds/tenancy.ts';
import { ApiError } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { tenancy } from '../../src/tenancy/index.ts';
import {
  type AdminNetworkPolicy,
  adminNetworkPolicies,
  isolationPolicyName,
} from '../../src/tenancy/policy/network-isolation.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { runCapability } from '../harness/components.ts';
import { nodeSkipReason, startTestNode, stopTestNode } from '../harness/node.ts';
import { connectionDropped, fetchFromPod, podInPhase, serviceRouted, testPod } from '../harness/pods.ts';
import {
  type OrganizationTenant,
  organizationLabel,
  organizationNamespace,
  organizationTenant,
} from '../harness/tenancy.ts';

const apply = { fieldManager: 'network-test', force: true };

describe.skipIf(nodeSkipReason)('organizations apart on the network', () => {
  let cluster: TestCluster;
  let node: LocalNode;
  let alice: OrganizationTenant;
  let bob: OrganizationTenant;
  let aliceWeb = '';
  let aliceOther = '';
  let bobNs = '';
  let webIP = '';
  let runs = 0;

  /** Runs `get url` as a one-shot Pod of `tenant` in `namespace`; resolves with its phase and log. */
  const fetchAs = (tenant: OrganizationTenant, namespace: string, url: string) =>
    fetchFromPod(tenant.client, namespace, node.workloadImage, `get-${++runs}`, url);

  beforeAll(async () => {
    cluster = await TestCluster.connect();
    node = await startTestNode(cluster, { networkPolicies: true });
    await cluster.admin.apply(Resources.namespaces, { metadata: { name: 'tenantkit-system' } }, apply);
    const verbs = { namespaceVerbs: ['create', 'get', 'patch'] };
    alice = await organizationTenant(cluster, { prefix: 'alice', ...verbs });
    bob = await organizationTenant(cluster, { prefix: 'bob', ...verbs });
    await runCapability(cluster, tenancy);
    [aliceWeb, aliceOther, bobNs] = await Promise.all([
      organizationNamespace(cluster, alice, { prefix: 'a-web' }),
      organizationNamespace(cluster, alice, { prefix: 'a-other' }),
      organizationNamespace(cluster, bob, { prefix: 'b-app' }),
    ]);
    // alice's web server and its Service.
    await alice.client.create(
      Resources.pods,
      testPod(aliceWeb, node.workloadImage, 'web', ['serve', '8080']),
    );
    await alice.client.create(Resources.services, {
      metadata: { name: 'web', namespace: aliceWeb },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    } as KubeObject);
    webIP = (await podInPhase(alice.client, aliceWeb, 'web', 'Running', 60_000)).status?.podIP ?? '';
    // Clients by the Service's name are refused until kube-proxy routes it (a CI run saw that).
    await serviceRouted(node, aliceWeb, 'web');
  }, 20 * 60_000);
  afterAll(() => stopTestNode(cluster, node), 180_000);

  it('puts each organization behind an AdminNetworkPolicy of its own, which its tenants cannot change', async () => {
    for (const tenant of [alice, bob]) {
      const org = await eventually(
        async () => {
          const o = await cluster.admin.get<Organization>(OrganizationCrd.type, tenant.organization);
          return o?.status?.conditions?.find((c) => c.type === 'NetworkIsolated' && c.status === 'True')
            ? o
            : undefined;
        },
        { what: `${tenant.organization} NetworkIsolated` },
      );
      const condition = org.status?.conditions?.find((c) => c.type === 'NetworkIsolated');
      expect(condition?.reason).toBe('Isolated');
      const policy = await cluster.admin.get<AdminNetworkPolicy>(
        adminNetworkPolicies,
        isolationPolicyName(tenant.organization),
      );
      expect(policy?.spec.subject.namespaces.matchLabels).toEqual({
        [organizationLabel]: tenant.organization,
      });
      expect(policy?.spec.ingress.map((r) => `${r.name}:${r.action}`)).toEqual([
        'same-organization:Pass',
        'other-namespaces:Deny',
      ]);
    }
    // The tenant may neither remove their organization's policy nor write one of their own.
    const name = isolationPolicyName(alice.organization);
    const refused = (p: Promise<unknown>) =>
      p.then(
        () => 'allowed',
        (err: unknown) => (err instanceof ApiError ? err.status : String(err)),
      );
    expect(await refused(alice.client.delete(adminNetworkPolicies, name))).toBe(403);
    expect(
      await refused(
        alice.client.create(adminNetworkPolicies, {
          apiVersion: 'policy.networking.k8s.io/v1alpha1',
          kind: 'AdminNetworkPolicy',
          metadata: { name: `${alice.organization}-open` },
          spec: {
            priority: 1,
            subject: { namespaces: {} },
            ingress: [{ name: 'all', action: 'Allow', from: [{ namespaces: {} }] }],
          },
        } as KubeObject),
      ),
    ).toBe(403);
  });

  it("keeps bob's Pods from alice's Pod and Service, even when alice opens her namespace; alice's namespaces reach each other", async () => {
    // Within the organization: another of alice's namespaces, by the Service's DNS name and by Pod IP.
    const own = await fetchAs(alice, aliceOther, `http://web.${aliceWeb}/`);
    expect(own.log).toMatch(/^200 hello from web/);
    expect((await fetchAs(alice, aliceOther, `http://${webIP}:8080/`)).log).toMatch(/^200 hello from web/);
    // From bob's organization: the name resolves (DNS works), the connection never gets through.
    const byName = await fetchAs(bob, bobNs, `http://web.${aliceWeb}/`);
    expect(byName.phase).toBe('Failed');
    expect(byName.log).toMatch(connectionDropped);
    expect(byName.log).not.toMatch(/no such host/);
    const byIP = await fetchAs(bob, bobNs, `http://${webIP}:8080/`);
    expect(byIP.phase).toBe('Failed');
    expect(byIP.log).toMatch(connectionDropped);

    // alice lets everybody in with a NetworkPolicy of her own: the guardrail above it still holds.
    await alice.client.create(
      {
        group: 'networking.k8s.io',
        version: 'v1',
        plural: 'networkpolicies',
        kind: 'NetworkPolicy',
        namespaced: true,
      },
      {
        metadata: { name: 'allow-all', namespace: aliceWeb },
        spec: { podSelector: {}, policyTypes: ['Ingress'], ingress: [{}] },
      } as KubeObject,
    );
    expect((await fetchAs(bob, bobNs, `http://${webIP}:8080/`)).phase).toBe('Failed');
    expect((await fetchAs(alice, aliceOther, `http://${webIP}:8080/`)).log).toMatch(/^200 hello from web/);
  });

  it('moves a namespace to the other side within seconds when the admin moves it to another organization', async () => {
    const started = Date.now();
    await cluster.admin.patch(Resources.namespaces, bobNs, undefined, {
      metadata: { labels: { [organizationLabel]: alice.organization } },
    });
    // bob keeps his rights in the namespace until the organization RBAC follows; the Pod runs as the admin.
    const admin = { ...bob, client: cluster.admin };
    const moved = await eventually(
      async () => {
        const r = await fetchAs(admin, bobNs, `http://${webIP}:8080/`);
        return r.phase === 'Succeeded' ? r : undefined;
      },
      { what: "the moved namespace's Pod reaching alice's web", timeoutMs: 120_000 },
    );
    expect(moved.log).toMatch(/^200 hello from web/);
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `[network] a moved namespace reached its new organization's Pods after ${seconds.toFixed(1)} s`,
    );
    expect(seconds).toBeLessThan(60);
  });
});
