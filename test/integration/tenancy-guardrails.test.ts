// Guardrails per organization, tried by tenants with their own credentials through the real API server:
// labels the organization requires on its namespaces (Pod Security Admission's level, enforced by the API
// server), image registries for every Pod (one a workload controller makes too),
// Priority/RuntimeClasses, StorageClasses and IngressClasses with the organization's defaults, and
// Ingress host names. Every refusal must name the rule, what is allowed and where an admin changes it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Organization, OrganizationCrd, TenancyConfigCrd } from '../../src/crds/tenancy.ts';
import { type ApiError, type KubeClient, PatchType } from '../../src/kube/client.ts';
import { type KubeObject, Resources, resourceType } from '../../src/kube/resources.ts';
import { organizationBindingName } from '../../src/tenancy/controllers/org-rbac.ts';
import { tenancy } from '../../src/tenancy/index.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { runCapability } from '../harness/components.ts';

const cluster = await TestCluster.connect();
const orgLabel = 'appuio.io/organization';
const apply = { fieldManager: 'guardrails-test', force: true };
const id = cluster.unique('g');
const orgA = `${id}-a`;
const orgB = `${id}-b`;
const alice = `alice-${id}`;
const bob = `bob-${id}`;
const psa = 'pod-security.kubernetes.io/enforce';
const cls = (name: string) => `${name}-${id}`;
type ClaimShape = KubeObject & { spec: { storageClassName?: string } };
type IngressShape = KubeObject & { spec: { ingressClassName?: string } };

const priorityClasses = resourceType('scheduling.k8s.io', 'v1', 'priorityclasses', 'PriorityClass', false);
const runtimeClasses = resourceType('node.k8s.io', 'v1', 'runtimeclasses', 'RuntimeClass', false);

let aliceClient: KubeClient;
let bobClient: KubeClient;
let nsA: string;
let nsB: string;

async function refusal(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (e: unknown) => `${(e as ApiError).status} ${(e as ApiError).message}`,
  );
}

/** A Pod that Pod Security Admission's "restricted" level admits. */
function pod(name: string, namespace: string, image: string, spec: Record<string, unknown> = {}): KubeObject {
  return {
    metadata: { name, namespace },
    spec: {
      securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'app',
          image,
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
      ...spec,
    },
  } as KubeObject;
}

async function clusterObject(type: Parameters<KubeClient['apply']>[0], object: KubeObject) {
  await cluster.admin.apply(type, object, apply);
  cluster.defer(() => cluster.admin.delete(type, object.metadata.name!));
}

async function tenantNamespace(client: KubeClient, prefix: string, organization: string): Promise<string> {
  const name = cluster.unique(prefix);
  await client.create(Resources.namespaces, { metadata: { name, labels: { [orgLabel]: organization } } });
  cluster.defer(() => cluster.admin.delete(Resources.namespaces, name));
  await eventually(() => cluster.admin.get(Resources.roleBindings, organizationBindingName('admin'), name), {
    what: `organization RoleBinding in ${name}`,
  });
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
        guardrails: { registries: ['docker.io/library', 'registry.example.com'] },
      },
    } as KubeObject,
    apply,
  );
  cluster.defer(() => cluster.admin.delete(TenancyConfigCrd.type, 'cluster'));
  for (const [name, users, guardrails] of [
    [
      orgA,
      [alice],
      {
        registries: ['ghcr.io/acme'],
        storageClasses: { allowed: [cls('fast'), cls('cheap')], default: cls('cheap') },
        ingressClasses: { allowed: [cls('internal')], default: cls('internal') },
        ingressHostnames: ['*.a.apps.example'],
        priorityClasses: { allowed: [cls('tenant')] },
        runtimeClasses: { allowed: [] },
        namespaceLabels: { [psa]: 'restricted' },
        namespaceAnnotations: { 'example.org/cost-center': 'a-1' },
      },
    ],
    [orgB, [bob], {}],
  ] as const) {
    await cluster.admin.apply(
      OrganizationCrd.type,
      { metadata: { name }, spec: { members: { users: [...users] }, guardrails } } as unknown as Organization,
      apply,
    );
    cluster.defer(() => cluster.admin.delete(OrganizationCrd.type, name));
  }
  // The cluster's classes; the "standard" ones are the cluster's defaults.
  const isDefault = (key: string) => ({ annotations: { [key]: 'true' } });
  for (const name of ['fast', 'cheap', 'gold', 'standard'])
    await clusterObject(Resources.storageClasses, {
      metadata: {
        name: cls(name),
        ...(name === 'standard' ? isDefault('storageclass.kubernetes.io/is-default-class') : {}),
      },
      provisioner: 'example.com/guardrails-test',
    } as KubeObject);
  for (const name of ['internal', 'standard'])
    await clusterObject(Resources.ingressClasses, {
      metadata: {
        name: cls(name),
        ...(name === 'standard' ? isDefault('ingressclass.kubernetes.io/is-default-class') : {}),
      },
      spec: { controller: 'example.com/ingress' },
    } as KubeObject);
  for (const [name, value] of [
    ['tenant', 1000],
    ['vip', 100000],
  ] as const)
    await clusterObject(priorityClasses, { metadata: { name: cls(name) }, value } as KubeObject);
  await clusterObject(runtimeClasses, { metadata: { name: cls('gvisor') }, handler: 'runsc' } as KubeObject);
  // Tenants may create namespaces; their organization's admin role does the rest there.
  await cluster.grant(
    { kind: 'Group', name: `${id}-tenants` },
    {
      name: `${id}-namespace-creator`,
      rules: [
        { apiGroups: [''], resources: ['namespaces'], verbs: ['create', 'get', 'list', 'watch', 'patch'] },
      ],
    },
  );
  aliceClient = await cluster.user(alice, [`${id}-tenants`]);
  bobClient = await cluster.user(bob, [`${id}-tenants`]);
  await runCapability(cluster, tenancy);
  nsA = await eventually(() => tenantNamespace(aliceClient, 'ga', orgA), { what: 'tenancy webhooks active' });
  nsB = await tenantNamespace(bobClient, 'gb', orgB);
  // The organization's admin role in force for alice.
  await eventually(
    async () => {
      await aliceClient.list(Resources.pods, { namespace: nsA });
      return true;
    },
    { what: 'alice works in her namespace' },
  );
});
afterAll(() => cluster.cleanup());

describe('organization guardrails', () => {
  it('gives every new namespace the labels its organization requires, which its tenants cannot change', async () => {
    const ns = await aliceClient.get<KubeObject>(Resources.namespaces, nsA);
    expect(ns?.metadata.labels?.[psa]).toBe('restricted');
    expect(ns?.metadata.annotations?.['example.org/cost-center']).toBe('a-1');
    // Removing or weakening the level: refused, naming the rule and who changes it.
    for (const value of [null, 'privileged']) {
      const refused = await refusal(
        aliceClient.patch(Resources.namespaces, nsA, undefined, { metadata: { labels: { [psa]: value } } }),
      );
      expect(refused).toContain(`organization "${orgA}" requires label ${psa}=restricted`);
      expect(refused).toContain(`Organization ${orgA}, spec.guardrails.namespaceLabels`);
    }
    // The API server's Pod Security Admission holds the level the label sets.
    const privileged = pod('root', nsA, 'ghcr.io/acme/app:1', {
      securityContext: {},
      containers: [{ name: 'app', image: 'ghcr.io/acme/app:1', securityContext: { privileged: true } }],
    });
    expect(await refusal(aliceClient.create(Resources.pods, privileged))).toContain(
      'violates PodSecurity "restricted',
    );
    // Another organization's namespace carries none of it.
    expect(
      (await bobClient.get<KubeObject>(Resources.namespaces, nsB))?.metadata.labels?.[psa],
    ).toBeUndefined();
  });

  it('puts what the admin comes to require on namespaces that already exist', async () => {
    const before = await tenantNamespace(bobClient, 'gb2', orgB);
    await cluster.admin.patch(OrganizationCrd.type, orgB, undefined, {
      spec: { guardrails: { namespaceLabels: { [psa]: 'baseline' } } },
    });
    try {
      const started = Date.now();
      await eventually(
        async () => {
          const ns = await bobClient.get<KubeObject>(Resources.namespaces, before);
          if (ns?.metadata.labels?.[psa] !== 'baseline') throw new Error(JSON.stringify(ns?.metadata.labels));
          return ns;
        },
        { timeoutMs: 20_000, what: 'the required label on an existing namespace' },
      );
      console.log(
        `[figures] guardrails: a required label reached an existing namespace after ${Date.now() - started} ms`,
      );
      expect(
        await refusal(
          bobClient.patch(Resources.namespaces, before, undefined, { metadata: { labels: { [psa]: null } } }),
        ),
      ).toContain('tenants may not change or remove them');
    } finally {
      await cluster.admin.patch(OrganizationCrd.type, orgB, undefined, { spec: { guardrails: null } });
    }
  });

  it("runs images only from the organization's registries, in Pods a Deployment makes too", async () => {
    const refused = await refusal(aliceClient.create(Resources.pods, pod('web', nsA, 'nginx:1.27')));
    expect(refused).toContain('403');
    expect(refused).toContain('image "nginx:1.27" (repository docker.io/library/nginx)');
    expect(refused).toContain('allowed: ghcr.io/acme');
    expect(refused).toContain(`Organization ${orgA}, spec.guardrails.registries`);
    await aliceClient.create(Resources.pods, pod('web', nsA, 'ghcr.io/acme/web:1'));
    // An update that changes no image (a label, Velero's managed-fields patch) is not even sent.
    await aliceClient.patch(Resources.pods, 'web', nsA, { metadata: { labels: { tier: 'front' } } });
    // Changing the image afterwards, or bringing one in as an ephemeral container: refused too.
    expect(
      await refusal(
        aliceClient.patch(
          Resources.pods,
          'web',
          nsA,
          { spec: { containers: [{ name: 'app', image: 'ghcr.io/evil/web:1' }] } },
          PatchType.strategic,
        ),
      ),
    ).toContain('image "ghcr.io/evil/web:1"');
    // Debugging is not in Kubernetes' admin role: the admin grants it, as a cluster would.
    await cluster.grant(
      { kind: 'User', name: alice },
      { rules: [{ apiGroups: [''], resources: ['pods/ephemeralcontainers'], verbs: ['patch', 'update'] }] },
      nsA,
    );
    // (The grant reaches the API server's authorizer a moment later.)
    const debug = await eventually(
      async () => {
        const answer = await refusal(
          aliceClient.request('PATCH', `/api/v1/namespaces/${nsA}/pods/web/ephemeralcontainers`, {
            body: {
              spec: {
                ephemeralContainers: [
                  {
                    name: 'debug',
                    image: 'busybox',
                    securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
                  },
                ],
              },
            },
            contentType: PatchType.strategic,
          }),
        );
        if (answer?.includes('cannot patch')) throw new Error(answer);
        return answer;
      },
      { what: 'the debug grant in force' },
    );
    expect(debug).toContain('ephemeralContainers debug: image "busybox"');
    // A Deployment's Pods are made by kube-controller-manager's replicaset-controller, a control-plane
    // identity other webhooks skip: this one holds it to the same rule. (The test control plane runs no
    // workload controllers; the Pod is created with that controller's own identity and RBAC.)
    const replicaSets = await cluster.user('system:serviceaccount:kube-system:replicaset-controller', [
      'system:serviceaccounts',
      'system:serviceaccounts:kube-system',
    ]);
    const controllerMade = await refusal(replicaSets.create(Resources.pods, pod('web-7d9f', nsA, 'nginx')));
    expect(controllerMade).toContain('image "nginx" (repository docker.io/library/nginx)');
    await replicaSets.create(Resources.pods, pod('web-8e0a', nsA, 'ghcr.io/acme/web:1'));
    // The TenancyConfig's default where the Organization sets nothing: docker.io/library, not quay.io.
    await bobClient.create(Resources.pods, pod('web', nsB, 'nginx'));
    const other = await refusal(bobClient.create(Resources.pods, pod('q', nsB, 'quay.io/acme/app')));
    expect(other).toContain('allowed: docker.io/library, registry.example.com');
    expect(other).toContain('TenancyConfig cluster, spec.guardrails.registries');
    // An admin is not held by it.
    await cluster.admin.create(Resources.pods, pod('admin', nsA, 'quay.io/tools/debug'));
  });

  it('shows members the classes their organization may use, in its status', async () => {
    const classes = await eventually(
      async () => {
        const org = await aliceClient.get<Organization>(OrganizationCrd.type, orgA);
        if (!org?.status?.classes?.ingressClasses?.length)
          throw new Error(JSON.stringify(org?.status?.classes));
        return org.status.classes;
      },
      { what: "the organization's classes in its status" },
    );
    expect(classes).toEqual({
      storageClasses: [cls('cheap'), cls('fast')],
      ingressClasses: [cls('internal')],
      priorityClasses: [cls('tenant')],
      runtimeClasses: [],
    });
  });

  it('admits only the PriorityClasses and RuntimeClasses the organization may use', async () => {
    const vip = await refusal(
      aliceClient.create(
        Resources.pods,
        pod('vip', nsA, 'ghcr.io/acme/a', { priorityClassName: cls('vip') }),
      ),
    );
    expect(vip).toContain(`spec.priorityClassName: PriorityClass "${cls('vip')}" is not one organization`);
    expect(vip).toContain(`allowed: ${cls('tenant')}`);
    await aliceClient.create(
      Resources.pods,
      pod('normal', nsA, 'ghcr.io/acme/a', { priorityClassName: cls('tenant') }),
    );
    const sandbox = await refusal(
      aliceClient.create(
        Resources.pods,
        pod('sandbox', nsA, 'ghcr.io/acme/a', { runtimeClassName: cls('gvisor') }),
      ),
    );
    expect(sandbox).toContain(
      `RuntimeClass "${cls('gvisor')}" is not one organization "${orgA}" may use; allowed: (none)`,
    );
  });

  it("gives claims the organization's StorageClass and refuses the others", async () => {
    const claim = (name: string, storageClassName?: string) =>
      ({
        metadata: { name, namespace: nsA },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          ...(storageClassName ? { storageClassName } : {}),
        },
      }) as ClaimShape;
    const warnings: string[] = [];
    aliceClient.onWarning = (w) => warnings.push(w);
    // None named: the cluster's default is filled in first, which this organization may not use.
    const none = await aliceClient
      .create<ClaimShape>(Resources.persistentVolumeClaims, claim('none'))
      .finally(() => {
        aliceClient.onWarning = () => {};
      });
    expect(none.spec.storageClassName).toBe(cls('cheap'));
    expect(warnings.join('\n')).toContain(
      `StorageClass "${cls('standard')}", the cluster's default, is not one`,
    );
    const chosen = await aliceClient.create<ClaimShape>(
      Resources.persistentVolumeClaims,
      claim('chosen', cls('fast')),
    );
    expect(chosen.spec.storageClassName).toBe(cls('fast'));
    const gold = await refusal(
      aliceClient.create(Resources.persistentVolumeClaims, claim('gold', cls('gold'))),
    );
    expect(gold).toContain(
      `spec.storageClassName: StorageClass "${cls('gold')}" is not one organization "${orgA}"`,
    );
    expect(gold).toContain(`allowed: ${cls('fast')}, ${cls('cheap')}`);
  });

  it("gives Ingresses the organization's IngressClass and only its host names", async () => {
    const ingress = (name: string, hosts: string[], ingressClassName?: string) =>
      ({
        metadata: { name, namespace: nsA },
        spec: {
          ...(ingressClassName ? { ingressClassName } : {}),
          rules: hosts.map((host) => ({
            host,
            http: {
              paths: [
                {
                  path: '/',
                  pathType: 'Prefix',
                  backend: { service: { name: 'web', port: { number: 80 } } },
                },
              ],
            },
          })),
        },
      }) as IngressShape;
    const made = await aliceClient.create<IngressShape>(
      Resources.ingresses,
      ingress('shop', ['shop.a.apps.example']),
    );
    expect(made.spec.ingressClassName).toBe(cls('internal'));
    const host = await refusal(
      aliceClient.create(Resources.ingresses, ingress('steal', ['shop.b.apps.example'])),
    );
    expect(host).toContain('host "shop.b.apps.example" is not one organization');
    expect(host).toContain('allowed: *.a.apps.example');
    // Adding another organization's host later: refused as well.
    expect(
      await refusal(
        aliceClient.patch(Resources.ingresses, 'shop', nsA, {
          spec: { rules: [{ host: 'shop.a.apps.example' }, { host: 'login.b.apps.example' }] },
        }),
      ),
    ).toContain('host "login.b.apps.example"');
    expect(
      await refusal(aliceClient.create(Resources.ingresses, ingress('pub', ['x.a.apps.example'], 'nope'))),
    ).toContain('IngressClass "nope" is not one');
  });
});

describe('a quota summed over an organization', () => {
  const orgQ = `${id}-q`;
  const podWithCpu = (name: string, namespace: string) => {
    const p = pod(name, namespace, 'nginx') as unknown as { spec: { containers: Record<string, unknown>[] } };
    p.spec.containers[0]!.resources = { requests: { cpu: '100m' }, limits: { cpu: '100m' } };
    return p as unknown as KubeObject;
  };
  const podsIn = async (namespaces: string[]) =>
    (
      await Promise.all(namespaces.map((ns) => cluster.admin.list(Resources.pods, { namespace: ns })))
    ).flatMap((l) => l.items);

  it('never lets parallel creates in several namespaces pass the total, and moves room to where it is used', async () => {
    await cluster.admin.apply(
      OrganizationCrd.type,
      {
        metadata: { name: orgQ },
        spec: { members: { users: [alice] }, quota: { hard: { pods: '5', 'requests.cpu': '2' } } },
      } as unknown as Organization,
      apply,
    );
    cluster.defer(() => cluster.admin.delete(OrganizationCrd.type, orgQ));
    const spaces = [
      await tenantNamespace(aliceClient, 'q1', orgQ),
      await tenantNamespace(aliceClient, 'q2', orgQ),
    ];
    await eventually(
      async () => {
        const parts = await Promise.all(
          spaces.map((ns) =>
            cluster.admin.get<KubeObject>(Resources.resourceQuotas, 'organization-quota', ns),
          ),
        );
        if (parts.some((p) => !p)) throw new Error('parts missing');
        return parts;
      },
      { what: "each namespace's part of the organization's quota" },
    );
    // Waves of 12 creates at once, spread over both namespaces, until the organization is full.
    let n = 0;
    let most = 0;
    const started = Date.now();
    while (Date.now() - started < 30_000) {
      await Promise.allSettled(
        Array.from({ length: 12 }, () => {
          const ns = spaces[n % 2]!;
          n++;
          return aliceClient.create(Resources.pods, podWithCpu(`p${n}`, ns));
        }),
      );
      const count = (await podsIn(spaces)).length;
      most = Math.max(most, count);
      if (count >= 5) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    console.log(
      `[figures] organization quota: ${n} creates in ${Date.now() - started} ms filled it to ${most} of 5 pods`,
    );
    expect(most).toBe(5);
    const refused = await refusal(aliceClient.create(Resources.pods, podWithCpu('one-more', spaces[0]!)));
    expect(refused).toContain('exceeded quota: organization-quota');
    // Members see what is used and left.
    const seen = await eventually(
      async () => {
        const org = await aliceClient.get<Organization>(OrganizationCrd.type, orgQ);
        if (org?.status?.quota?.pods?.used !== '5') throw new Error(JSON.stringify(org?.status?.quota));
        return org.status.quota;
      },
      { what: "the organization's quota in its status" },
    );
    expect(seen.pods).toEqual({ hard: '5', used: '5', remaining: '0' });
    expect(seen['requests.cpu']).toEqual({ hard: '2', used: '500m', remaining: '1500m' });
    // Freed room in one namespace reaches the other.
    const [first] = await podsIn([spaces[0]!]);
    const from = first ? spaces[0]! : spaces[1]!;
    const victims = (await podsIn([from])).slice(0, 2);
    for (const p of victims) await cluster.admin.delete(Resources.pods, p.metadata.name!, from);
    const other = spaces.find((s) => s !== from)!;
    await eventually(
      async () => {
        await aliceClient.create(Resources.pods, podWithCpu(cluster.unique('moved'), other));
        return true;
      },
      { timeoutMs: 20_000, what: 'room freed in one namespace used in the other' },
    );
    expect((await podsIn(spaces)).length).toBeLessThanOrEqual(5);
    // The parts are tenantkit's: tenants may not change or delete them.
    expect(
      await refusal(aliceClient.delete(Resources.resourceQuotas, 'organization-quota', other)),
    ).toBeDefined();
  });
});
