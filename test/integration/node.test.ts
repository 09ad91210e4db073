// The local node: real Pods from a locally built image on kubelet + containerd + runc + the CNI bridge,
// scheduled by kube-scheduler, reached through kube-proxy, their logs read through kubelet, and the
// tenancy pod policies seen on running Pods, all done by tenants with their own credentials. The last
// test stops the node and checks that the machine is as it was before; the one after it, that a run that
// was killed is put back by the next start.

import { spawnSync } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hostDifferences,
  hostRecordFile,
  readHost,
  readHostRecord,
  watchedPaths,
} from '../../devenv/node/host.ts';
import { type LocalNode, nodeCgroupRoots } from '../../devenv/node/launch.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { tenancy } from '../../src/tenancy/index.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { runCapability } from '../harness/components.ts';
import { nodeSkipReason, startTestNode, stopTestNode } from '../harness/node.ts';
import {
  expectDefaultNodeSelector,
  expectRunOnceDeadline,
  type Pod,
  podInPhase,
  podPolicyAnnotations,
  serviceRouted,
  testPod,
} from '../harness/pods.ts';
import { organizationNamespace, organizationTenant } from '../harness/tenancy.ts';

const apply = { fieldManager: 'node-test', force: true };

describe.skipIf(nodeSkipReason)('the local node', () => {
  let cluster: TestCluster;
  let node: LocalNode;
  let tenant: KubeClient;
  let ns = '';
  const pod = (name: string, args: string[], spec: Record<string, unknown> = {}) =>
    testPod(ns, node.workloadImage, name, args, spec);
  const phase = (name: string, wanted: string, timeoutMs = 30_000) =>
    podInPhase(tenant, ns, name, wanted, timeoutMs);

  beforeAll(async () => {
    cluster = await TestCluster.connect();
    node = await startTestNode(cluster);
    await cluster.admin.apply(Resources.namespaces, { metadata: { name: 'tenantkit-system' } }, apply);
    const owner = await organizationTenant(cluster, {
      prefix: 'node-tenant',
      namespaceVerbs: ['create', 'get', 'patch'],
    });
    tenant = owner.client;
    await runCapability(cluster, tenancy);
    // The tenant's namespace: its organization's, with the run-once deadline and the default node
    // selector set by the tenant through the annotations the policy lets them set.
    ns = await organizationNamespace(cluster, owner, {
      prefix: 'pods',
      annotations: podPolicyAnnotations(node.name),
    });
  }, 15 * 60_000);
  afterAll(() => stopTestNode(cluster, node), 180_000);

  it('runs a Deployment from the local image and serves it through a Service (kube-proxy)', async () => {
    await tenant.create(Resources.deployments, {
      metadata: { name: 'web', namespace: ns },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: pod('web', ['serve', '8080']).spec },
      },
    } as KubeObject);
    const service = await tenant.create<KubeObject & { spec: { clusterIP: string } }>(Resources.services, {
      metadata: { name: 'web', namespace: ns },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    } as unknown as KubeObject & { spec: { clusterIP: string } });
    const running = await eventually(
      async () => {
        const list = await tenant.list<Pod>(Resources.pods, { namespace: ns, labelSelector: 'app=web' });
        const up = list.items.filter((p) => p.status?.phase === 'Running');
        if (up.length === 2) return up;
        // What a timeout then says: each Pod's phase and why its containers wait.
        const seen = list.items.map((p) => {
          const why = p.status?.conditions?.filter((c) => c.status !== 'True').map((c) => c.reason ?? c.type);
          return `${p.metadata.name} ${p.status?.phase ?? 'no phase'}${why?.length ? ` (${why.join(', ')})` : ''}`;
        });
        throw new Error(`${up.length} of 2 Running: ${seen.join('; ') || 'no Pods yet'}`);
      },
      { what: "the Deployment's 2 Pods Running", timeoutMs: 60_000 },
    );
    for (const p of running) {
      expect(p.spec.nodeName).toBe(node.name);
      expect(p.status?.podIP).toMatch(/^10\.244\./);
    }
    // Run-once client Pods reach the Service by its cluster IP (CNI, kube-proxy's rules, the endpoints)
    // and by its short name (CoreDNS through the namespace's search path).
    expect(service.spec.clusterIP).toMatch(/^10\.96\./);
    // Until kube-proxy has written the Service's endpoints a client is refused (CI saw it: its one try
    // failed and the Pod never Succeeded), so the clients start once both Pods are routed.
    expect((await serviceRouted(node, ns, 'web', 2)).map((e) => e.split('/')[0]).sort()).toEqual(
      running.map((p) => p.status?.podIP).sort(),
    );
    for (const [name, url] of [
      ['by-ip', `http://${service.spec.clusterIP}/`],
      ['by-name', 'http://web/'],
    ] as const) {
      await tenant.create(
        Resources.pods,
        pod(name, ['get', url], { restartPolicy: 'Never', activeDeadlineSeconds: 60 }),
      );
      await phase(name, 'Succeeded', 60_000);
      const log = await tenant.request<string>('GET', `/api/v1/namespaces/${ns}/pods/${name}/log`, {
        text: true,
      });
      expect(log).toMatch(/^200 hello from web-/);
    }
    // Three waits of up to a minute each (the Pods, then each client): the test's own budget covers
    // them, so a slow step fails with its own message, not with the test's timeout.
  }, 200_000);

  it('lets a Pod reach kube-apiserver through the kubernetes Service with its own service account token', async () => {
    await tenant.create(
      Resources.pods,
      pod('in-cluster', ['get', 'https://10.96.0.1/version'], {
        restartPolicy: 'Never',
        activeDeadlineSeconds: 60,
      }),
    );
    await phase('in-cluster', 'Succeeded', 60_000);
    const log = await tenant.request<string>('GET', `/api/v1/namespaces/${ns}/pods/in-cluster/log`, {
      text: true,
    });
    expect(log).toMatch(/^200 /);
    expect(JSON.parse(log.slice(4)).gitVersion).toBe('v1.35.4');
  });

  it("gives a tenant's claim a volume from the default StorageClass that outlives the Pod that wrote it", async () => {
    const claim = await tenant.create<KubeObject & { spec: { storageClassName?: string } }>(
      Resources.persistentVolumeClaims,
      {
        metadata: { name: 'data', namespace: ns },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Mi' } } },
      } as KubeObject & { spec: { storageClassName?: string } },
    );
    expect(claim.spec.storageClassName).toBe('local-path');
    const volume = { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }] };
    const withMount = (p: Pod) => {
      (p.spec.containers as { volumeMounts?: unknown[] }[])[0]!.volumeMounts = [
        { name: 'data', mountPath: '/data' },
      ];
      return p;
    };
    const once = { restartPolicy: 'Never', activeDeadlineSeconds: 60, ...volume };
    await tenant.create(
      Resources.pods,
      withMount(pod('writer', ['write', '/data/hello', `kept for ${ns}`], once)),
    );
    await phase('writer', 'Succeeded', 60_000);
    await tenant.create(Resources.pods, withMount(pod('reader', ['cat', '/data/hello'], once)));
    await phase('reader', 'Succeeded', 60_000);
    const log = await tenant.request<string>('GET', `/api/v1/namespaces/${ns}/pods/reader/log`, {
      text: true,
    });
    expect(log).toBe(`kept for ${ns}`);
    const bound = await tenant.get<KubeObject & { status?: { phase?: string } }>(
      Resources.persistentVolumeClaims,
      'data',
      ns,
    );
    expect(bound?.status?.phase).toBe('Bound');
  });

  it("ends a tenant's run-once Pod at the namespace's deadline", async () => {
    await expectRunOnceDeadline(tenant, ns, node.workloadImage, node.name);
  });

  it("applies the namespace's default node selector to a tenant's Pod, which then runs on the node", async () => {
    await expectDefaultNodeSelector(tenant, ns, node.workloadImage, node.name);
    // A selector no node matches keeps a Pod off the node: the scheduler reads the defaulted field.
    await tenant.patch(Resources.namespaces, ns, undefined, {
      metadata: { annotations: { 'appuio.io/default-node-selector': 'node-class=flex' } },
    });
    const pending = await eventually(
      async () => {
        const p = await tenant.create<Pod>(Resources.pods, pod(cluster.unique('nowhere'), ['sleep', '3600']));
        return p.spec.nodeSelector?.['node-class'] === 'flex' ? p : undefined;
      },
      { what: 'the changed default applies' },
    );
    const unscheduled = await eventually(
      async () => {
        const p = await tenant.get<Pod>(Resources.pods, pending.metadata.name ?? '', ns);
        return p?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
      },
      { what: 'the scheduler reports the Pod unschedulable' },
    );
    expect(unscheduled.reason).toBe('Unschedulable');
    expect(unscheduled.message).toContain("didn't match Pod's node affinity/selector");
  });

  it("deletes a tenant's namespace with its running Pods, then stops leaving nothing on the machine", async () => {
    // kubelet ends the Pods, so the namespace goes away before the node does (nothing stays Terminating).
    await cluster.admin.delete(Resources.namespaces, ns);
    await eventually(async () => (await cluster.admin.get(Resources.namespaces, ns)) === undefined, {
      what: `namespace ${ns} gone`,
      timeoutMs: 60_000,
    });
    // The claim went with the namespace, and its volume with it (reclaim policy Delete, via the provisioner).
    await eventually(
      async () => {
        const volumes = await cluster.admin.list<
          KubeObject & { spec: { claimRef?: { namespace?: string } } }
        >(Resources.persistentVolumes);
        return volumes.items.every((v) => v.spec.claimRef?.namespace !== ns);
      },
      { what: "the tenant's volume deleted", timeoutMs: 60_000 },
    );
    const problems = await node.stop();
    expect(problems).toEqual([]);
    // Nor in the cluster: its add-ons' Pods and its Node are gone.
    expect((await cluster.admin.list(Resources.pods, { namespace: 'kube-system' })).items).toEqual([]);
    expect(await cluster.admin.get(Resources.nodes, node.name)).toBeUndefined();
  });

  it('puts the machine back after a node run that was killed, before the next node starts', async () => {
    // The machine as it is now (no node) is what the killed run found; it left a sysctl kubelet sets, one
    // of kubelet's fixed folders, and its record (its process gone).
    const clean = await readHost(nodeCgroupRoots);
    const sysctl = 'vm/overcommit_memory';
    const value = clean.sysctls[sysctl] === '1' ? '0' : '1';
    await writeFile(`/proc/sys/${sysctl}`, value);
    const folder = watchedPaths.find((p) => !clean.paths.includes(p));
    if (folder) await mkdir(folder, { recursive: true });
    const dead = spawnSync('true').pid!;
    await writeFile(hostRecordFile, JSON.stringify({ pid: dead, before: clean }));
    expect(hostDifferences(clean, await readHost(nodeCgroupRoots)).length).toBeGreaterThan(0);

    try {
      const next = await startTestNode(cluster);
      expect(await readHostRecord()).toMatchObject({ pid: process.pid });
      expect(await next.stop()).toEqual([]);
      expect(hostDifferences(clean, await readHost(nodeCgroupRoots))).toEqual([]);
      expect(await readHostRecord()).toBeUndefined();
    } finally {
      // Whatever happened above, this test's own changes do not outlive it.
      await writeFile(`/proc/sys/${sysctl}`, clean.sysctls[sysctl]!);
      if (folder) await rm(folder, { recursive: true, force: true });
      await rm(hostRecordFile, { force: true });
    }
  }, 120_000);
});
