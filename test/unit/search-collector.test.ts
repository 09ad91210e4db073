// The collector's transforms on hand-written objects: common properties, pod status as kubectl prints
// it, workload counts, secret redaction, admin-declared sensitive fields and relationships.
import { describe, expect, it } from 'vitest';
import { type KubeObject, resourceType } from '../../src/kube/resources.ts';
import { podStatus } from '../../src/search/collector/pod.ts';
import { parseSensitiveField, SensitiveFieldError } from '../../src/search/collector/sensitive.ts';
import { needsFullObject, type TransformContext, toIndexed } from '../../src/search/collector/transform.ts';

const type = resourceType;
const Pod = type('', 'v1', 'pods', 'Pod');
const Secret = type('', 'v1', 'secrets', 'Secret');
const ConfigMap = type('', 'v1', 'configmaps', 'ConfigMap');
const Deployment = type('apps', 'v1', 'deployments', 'Deployment');
const Widget = type('example.com', 'v1alpha1', 'widgets', 'Widget');

const hub: TransformContext = { cluster: 'local-cluster', hub: true, sensitiveFields: [] };
const managed: TransformContext = { cluster: 'edge-1', hub: false, sensitiveFields: [] };

let n = 0;
function object(
  name: string,
  extra: Record<string, unknown> = {},
  meta: Record<string, unknown> = {},
): KubeObject {
  return {
    metadata: {
      name,
      namespace: 'shop',
      uid: `uid-${++n}`,
      creationTimestamp: '2024-05-01T10:00:00Z',
      ...meta,
    },
    ...extra,
  } as KubeObject;
}

const running = { running: { startedAt: '2024-05-01T10:00:05Z' } };
const container = (name: string, state: Record<string, unknown>, more: Record<string, unknown> = {}) => ({
  name,
  ready: state.running !== undefined,
  restartCount: 0,
  state,
  ...more,
});
const pod = (
  status: Record<string, unknown>,
  spec: Record<string, unknown> = {},
  meta: Record<string, unknown> = {},
) =>
  object(
    'p',
    { spec: { containers: [{ name: 'app', image: 'nginx' }], ...spec }, status },
    meta,
  ) as unknown as Record<string, unknown>;

describe('common properties', () => {
  it('writes ACM property names, the version alone as apiversion, and no group for the core group', () => {
    const row = toIndexed(
      object('settings', { data: { color: 'blue' } }, { labels: { app: 'web' }, annotations: { team: 'a' } }),
      ConfigMap,
      hub,
    );
    expect(row?.uid).toMatch(/^local-cluster\/uid-\d+$/);
    expect(row?.data).toEqual({
      kind: 'ConfigMap',
      kind_plural: 'configmaps',
      apiversion: 'v1',
      name: 'settings',
      namespace: 'shop',
      created: '2024-05-01T10:00:00Z',
      label: { app: 'web' },
      annotation: { team: 'a' },
      _hubClusterResource: true,
    });
    // Config maps are read as metadata only: their data never reaches the collector.
    expect(needsFullObject(ConfigMap)).toBe(false);
    expect(needsFullObject(Pod)).toBe(true);
  });

  it('names the group of grouped types, leaves out namespace for cluster-scoped ones and the hub flag off the hub', () => {
    const row = toIndexed(
      object('w', { spec: { password: 'hunter2', replicas: 3 } }, { namespace: undefined }),
      type('example.com', 'v1alpha1', 'widgets', 'Widget', false),
      managed,
    );
    expect(row?.data).toEqual({
      kind: 'Widget',
      kind_plural: 'widgets',
      apigroup: 'example.com',
      apiversion: 'v1alpha1',
      name: 'w',
      created: '2024-05-01T10:00:00Z',
    });
    expect(row?.uid.startsWith('edge-1/')).toBe(true);
  });

  it('never copies spec fields of kinds it has no transform for', () => {
    const row = toIndexed(
      object('w', { spec: { password: 'hunter2' }, status: { token: 'abc' } }),
      Widget,
      hub,
    );
    expect(JSON.stringify(row)).not.toContain('hunter2');
    expect(JSON.stringify(row)).not.toContain('abc');
  });

  it('drops last-applied-configuration and long annotation values, as ACM does', () => {
    const row = toIndexed(
      object(
        'x',
        {},
        {
          annotations: {
            'kubectl.kubernetes.io/last-applied-configuration': '{"data":{}}',
            short: 'ok',
            long: 'x'.repeat(65),
          },
        },
      ),
      ConfigMap,
      hub,
    );
    expect(row?.data.annotation).toEqual({ short: 'ok' });
  });

  it('makes every owner reference an ownedBy edge to the owner uid in the same cluster', () => {
    const row = toIndexed(
      object(
        'rs',
        {},
        {
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'dep-1', controller: true },
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'other', uid: 'cm-1' },
          ],
        },
      ),
      type('apps', 'v1', 'replicasets', 'ReplicaSet'),
      managed,
    );
    expect(row?.edges).toEqual([
      { type: 'ownedBy', uid: 'edge-1/dep-1' },
      { type: 'ownedBy', uid: 'edge-1/cm-1' },
    ]);
  });

  it('skips objects without uid or name', () => {
    expect(toIndexed({ metadata: { name: 'x' } }, ConfigMap, hub)).toBeUndefined();
  });
});

describe('secrets', () => {
  it('index metadata and type only: never data, stringData, last-applied or token annotations', () => {
    const value = 'c3VwZXItc2VjcmV0LXZhbHVl';
    const secret = object(
      's',
      {
        type: 'kubernetes.io/basic-auth',
        data: { password: value },
        stringData: { password: 'super-secret' },
      },
      {
        annotations: {
          'kubectl.kubernetes.io/last-applied-configuration': `{"data":{"password":"${value}"}}`,
          'openshift.io/token-secret.value': 'tok',
          owner: 'team-a',
        },
      },
    );
    const row = toIndexed(secret, Secret, hub);
    expect(row?.data.type).toBe('kubernetes.io/basic-auth');
    expect(row?.data.annotation).toEqual({ owner: 'team-a' });
    const text = JSON.stringify(row);
    expect(text).not.toContain(value);
    expect(text).not.toContain('super-secret');
    expect(text).not.toContain('tok"');
  });
});

describe('sensitive fields', () => {
  it('parses the documented syntax', () => {
    expect(parseSensitiveField('apps/Deployment:spec.template.metadata.annotations.foo')).toMatchObject({
      group: 'apps',
      kind: 'Deployment',
      path: ['spec', 'template', 'metadata', 'annotations', 'foo'],
    });
    expect(
      parseSensitiveField('*:metadata.annotations[vault.hashicorp.com/agent-inject-token]'),
    ).toMatchObject({
      group: '*',
      kind: '*',
      path: ['metadata', 'annotations', 'vault.hashicorp.com/agent-inject-token'],
    });
    expect(parseSensitiveField('Pod:status.podIP')).toMatchObject({ group: '', kind: 'Pod' });
    expect(parseSensitiveField('*/Secret:metadata.labels[a.b/c]')).toMatchObject({
      group: '*',
      kind: 'Secret',
    });
    for (const bad of ['Pod', 'Pod:', ':a.b', 'Pod:a..b', 'Pod:a[b', '/Pod:a']) {
      expect(() => parseSensitiveField(bad), bad).toThrow(SensitiveFieldError);
    }
  });

  it('removes the fields before any property, label, annotation or edge is derived from them', () => {
    const ctx: TransformContext = {
      ...hub,
      sensitiveFields: [
        '*:metadata.annotations[vault.example.com/token]',
        'Pod:status.podIP',
        'Pod:spec.volumes.*.secret',
        'apps/Deployment:metadata.labels.owner',
        'example.com/Widget:metadata.annotations.*',
      ].map(parseSensitiveField),
    };
    const p = toIndexed(
      object(
        'p',
        {
          spec: {
            containers: [{ name: 'app', image: 'nginx' }],
            volumes: [
              { name: 'creds', secret: { secretName: 'db-password' } },
              { name: 'cfg', configMap: { name: 'settings' } },
            ],
          },
          status: { phase: 'Running', podIP: '10.0.0.7', hostIP: '192.168.1.2' },
        },
        { annotations: { 'vault.example.com/token': 's.abcdef', keep: 'yes' } },
      ),
      Pod,
      ctx,
    );
    expect(p?.data.podIP).toBeUndefined();
    expect(p?.data.hostIP).toBe('192.168.1.2');
    expect(p?.data.annotation).toEqual({ keep: 'yes' });
    expect(p?.edges).toEqual([
      { type: 'attachedTo', kind: 'ConfigMap', namespace: 'shop', name: 'settings' },
    ]);

    const d = toIndexed(object('d', {}, { labels: { owner: 'alice', app: 'web' } }), Deployment, ctx);
    expect(d?.data.label).toEqual({ app: 'web' });
    const w = toIndexed(object('w', {}, { annotations: { a: '1', b: '2' } }), Widget, ctx);
    expect(w?.data.annotation).toBeUndefined();
    // The rule is per kind: another kind keeps its labels.
    expect(toIndexed(object('c', {}, { labels: { owner: 'alice' } }), ConfigMap, ctx)?.data.label).toEqual({
      owner: 'alice',
    });
  });
});

describe('pod status as kubectl shows it', () => {
  it('Running, Pending, Completed and the pod reason', () => {
    expect(podStatus(pod({ phase: 'Running', containerStatuses: [container('app', running)] }))).toEqual({
      status: 'Running',
      restarts: 0,
    });
    expect(podStatus(pod({ phase: 'Pending' })).status).toBe('Pending');
    expect(
      podStatus(
        pod({
          phase: 'Succeeded',
          containerStatuses: [container('app', { terminated: { exitCode: 0, reason: 'Completed' } })],
        }),
      ).status,
    ).toBe('Completed');
    expect(podStatus(pod({ phase: 'Failed', reason: 'Evicted' })).status).toBe('Evicted');
  });

  it('CrashLoopBackOff with the restarts of every container', () => {
    const s = podStatus(
      pod({
        phase: 'Running',
        containerStatuses: [
          container('app', { waiting: { reason: 'CrashLoopBackOff' } }, { restartCount: 4 }),
          container('sidecar', running, { restartCount: 1 }),
        ],
      }),
    );
    expect(s).toEqual({ status: 'CrashLoopBackOff', restarts: 5 });
  });

  it('exit codes and signals without a reason', () => {
    expect(
      podStatus(
        pod({ phase: 'Failed', containerStatuses: [container('app', { terminated: { exitCode: 3 } })] }),
      ).status,
    ).toBe('ExitCode:3');
    expect(
      podStatus(
        pod({
          phase: 'Failed',
          containerStatuses: [container('app', { terminated: { exitCode: 137, signal: 9 } })],
        }),
      ).status,
    ).toBe('Signal:9');
  });

  it('init containers: progress, failures and waiting reasons', () => {
    const spec = { initContainers: [{ name: 'a' }, { name: 'b' }] };
    const done = container('a', { terminated: { exitCode: 0, reason: 'Completed' } });
    expect(
      podStatus(
        pod(
          { phase: 'Pending', initContainerStatuses: [done, container('b', running)], containerStatuses: [] },
          spec,
        ),
      ).status,
    ).toBe('Init:1/2');
    expect(
      podStatus(
        pod(
          {
            phase: 'Pending',
            initContainerStatuses: [
              container('a', { waiting: { reason: 'CrashLoopBackOff' } }, { restartCount: 2 }),
            ],
          },
          spec,
        ),
      ),
    ).toEqual({ status: 'Init:CrashLoopBackOff', restarts: 2 });
    expect(
      podStatus(
        pod(
          { phase: 'Pending', initContainerStatuses: [container('a', { terminated: { exitCode: 1 } })] },
          spec,
        ),
      ).status,
    ).toBe('Init:ExitCode:1');
    expect(
      podStatus(
        pod(
          {
            phase: 'Pending',
            initContainerStatuses: [container('a', { waiting: { reason: 'PodInitializing' } })],
          },
          spec,
        ),
      ).status,
    ).toBe('Init:0/2');
  });

  it('a started sidecar does not hold the pod in Init, and counts its restarts', () => {
    const s = podStatus(
      pod(
        {
          phase: 'Running',
          conditions: [{ type: 'Initialized', status: 'True' }],
          initContainerStatuses: [container('proxy', running, { started: true, restartCount: 2 })],
          containerStatuses: [container('app', running)],
        },
        { initContainers: [{ name: 'proxy', restartPolicy: 'Always' }] },
      ),
    );
    expect(s).toEqual({ status: 'Running', restarts: 2 });
  });

  it('Completed with a container still running is Running when ready, NotReady when not', () => {
    const statuses = [
      container('job', { terminated: { exitCode: 0, reason: 'Completed' } }),
      container('web', running),
    ];
    // kubectl walks containers from the last, so the first container's Completed is the reason seen last.
    expect(
      podStatus(
        pod({
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'True' }],
          containerStatuses: statuses,
        }),
      ).status,
    ).toBe('Running');
    expect(
      podStatus(
        pod({
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'False' }],
          containerStatuses: statuses,
        }),
      ).status,
    ).toBe('NotReady');
  });

  it('Terminating while deleted, Unknown when the node is lost, SchedulingGated', () => {
    const deleted = { deletionTimestamp: '2024-05-01T11:00:00Z' };
    expect(
      podStatus(pod({ phase: 'Running', containerStatuses: [container('app', running)] }, {}, deleted))
        .status,
    ).toBe('Terminating');
    expect(podStatus(pod({ phase: 'Running', reason: 'NodeLost' }, {}, deleted)).status).toBe('Unknown');
    expect(podStatus(pod({ phase: 'Succeeded' }, {}, deleted)).status).toBe('Succeeded');
    expect(
      podStatus(pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', reason: 'SchedulingGated' }] }))
        .status,
    ).toBe('SchedulingGated');
  });
});

describe('kind properties and relationships', () => {
  it('pod: properties and edges to its node, claims, config maps and secrets (volumes, env, envFrom, pull secrets)', () => {
    const row = toIndexed(
      object('web-1', {
        spec: {
          nodeName: 'node-a',
          imagePullSecrets: [{ name: 'registry' }],
          initContainers: [
            { name: 'init', image: 'busybox', envFrom: [{ configMapRef: { name: 'init-env' } }] },
          ],
          containers: [
            {
              name: 'app',
              image: 'nginx:1.27',
              env: [
                { name: 'A', value: 'literal' },
                { name: 'B', valueFrom: { secretKeyRef: { name: 'api-key', key: 'k' } } },
                { name: 'C', valueFrom: { configMapKeyRef: { name: 'settings', key: 'k' } } },
              ],
              envFrom: [{ secretRef: { name: 'db' } }],
            },
            { name: 'sidecar', image: 'envoy' },
          ],
          volumes: [
            { name: 'data', persistentVolumeClaim: { claimName: 'data-claim' } },
            { name: 'cfg', configMap: { name: 'settings' } },
            { name: 'tls', secret: { secretName: 'tls' } },
            {
              name: 'all',
              projected: { sources: [{ secret: { name: 'projected' } }, { configMap: { name: 'p-cm' } }] },
            },
            { name: 'scratch', ephemeral: { volumeClaimTemplate: {} } },
          ],
        },
        status: {
          phase: 'Running',
          hostIP: '192.168.1.2',
          podIP: '10.0.0.7',
          startTime: '2024-05-01T10:00:01Z',
          conditions: [{ type: 'Ready', status: 'True' }],
          containerStatuses: [container('app', running, { restartCount: 1 }), container('sidecar', running)],
        },
      }),
      Pod,
      hub,
    );
    expect(row?.data).toMatchObject({
      status: 'Running',
      restarts: 1,
      hostIP: '192.168.1.2',
      podIP: '10.0.0.7',
      startedAt: '2024-05-01T10:00:01Z',
      container: ['app', 'sidecar'],
      image: ['nginx:1.27', 'envoy'],
      condition: { Ready: 'True' },
    });
    const ref = (kind: string, name: string) => ({ type: 'attachedTo', kind, namespace: 'shop', name });
    expect(row?.edges).toEqual([
      { type: 'runsOn', kind: 'Node', name: 'node-a' },
      ref('PersistentVolumeClaim', 'data-claim'),
      ref('ConfigMap', 'settings'),
      ref('Secret', 'tls'),
      ref('Secret', 'projected'),
      ref('ConfigMap', 'p-cm'),
      ref('PersistentVolumeClaim', 'web-1-scratch'),
      ref('ConfigMap', 'init-env'),
      ref('Secret', 'api-key'),
      ref('Secret', 'db'),
      ref('Secret', 'registry'),
    ]);
  });

  it('deployment counts, and its template uses what the pods will attach', () => {
    const row = toIndexed(
      object('web', {
        spec: {
          replicas: 3,
          template: {
            spec: {
              containers: [{ name: 'app', envFrom: [{ configMapRef: { name: 'settings' } }] }],
              volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'shared' } }],
            },
          },
        },
        status: { replicas: 3, readyReplicas: 2, availableReplicas: 2, updatedReplicas: 1 },
      }),
      Deployment,
      hub,
    );
    expect(row?.data).toMatchObject({ desired: 3, current: 3, ready: 2, available: 2, updated: 1 });
    expect(row?.edges).toEqual([
      { type: 'uses', kind: 'PersistentVolumeClaim', namespace: 'shop', name: 'shared' },
      { type: 'uses', kind: 'ConfigMap', namespace: 'shop', name: 'settings' },
    ]);
    // A deployment that has not reported status yet counts zeros.
    expect(toIndexed(object('new', { spec: { replicas: 2 } }), Deployment, hub)?.data).toMatchObject({
      desired: 2,
      current: 0,
      ready: 0,
      available: 0,
      updated: 0,
    });
  });

  it('replica sets, stateful sets, daemon sets, jobs and cron jobs', () => {
    const t = (kind: string, plural: string, group = 'apps') => type(group, 'v1', plural, kind);
    expect(
      toIndexed(
        object('rs', {
          spec: { replicas: 2 },
          status: { replicas: 2, readyReplicas: 1, availableReplicas: 1 },
        }),
        t('ReplicaSet', 'replicasets'),
        hub,
      )?.data,
    ).toMatchObject({ desired: 2, current: 2, ready: 1, available: 1 });
    expect(
      toIndexed(
        object('db', {
          spec: { replicas: 3 },
          status: { replicas: 3, readyReplicas: 3, updatedReplicas: 2 },
        }),
        t('StatefulSet', 'statefulsets'),
        hub,
      )?.data,
    ).toMatchObject({ desired: 3, current: 3, ready: 3, updated: 2 });
    expect(
      toIndexed(
        object('agent', {
          status: {
            desiredNumberScheduled: 4,
            currentNumberScheduled: 4,
            numberReady: 3,
            numberAvailable: 3,
            updatedNumberScheduled: 2,
          },
        }),
        t('DaemonSet', 'daemonsets'),
        hub,
      )?.data,
    ).toMatchObject({ desired: 4, current: 4, ready: 3, available: 3, updated: 2 });
    expect(
      toIndexed(
        object('migrate', { spec: { completions: 5, parallelism: 2 }, status: { succeeded: 3 } }),
        t('Job', 'jobs', 'batch'),
        hub,
      )?.data,
    ).toMatchObject({ completions: 5, parallelism: 2, successful: 3 });
    const cron = toIndexed(
      object('nightly', {
        spec: {
          schedule: '0 3 * * *',
          suspend: true,
          jobTemplate: {
            spec: {
              template: { spec: { containers: [{ name: 'c', envFrom: [{ secretRef: { name: 'db' } }] }] } },
            },
          },
        },
        status: { active: [{ name: 'nightly-1' }], lastScheduleTime: '2024-05-01T03:00:00Z' },
      }),
      t('CronJob', 'cronjobs', 'batch'),
      hub,
    );
    expect(cron?.data).toMatchObject({
      schedule: '0 3 * * *',
      suspend: true,
      active: 1,
      lastSchedule: '2024-05-01T03:00:00Z',
    });
    expect(cron?.edges).toEqual([{ type: 'uses', kind: 'Secret', namespace: 'shop', name: 'db' }]);
  });

  it('service: type, cluster IP, ports as ACM writes them, usedBy the pods its selector matches', () => {
    const row = toIndexed(
      object('web', {
        spec: {
          type: 'NodePort',
          clusterIP: '10.96.0.10',
          selector: { app: 'web' },
          ports: [
            { port: 80, protocol: 'TCP', nodePort: 30080 },
            { port: 53, protocol: 'UDP' },
          ],
        },
      }),
      type('', 'v1', 'services', 'Service'),
      hub,
    );
    expect(row?.data).toMatchObject({
      type: 'NodePort',
      clusterIP: '10.96.0.10',
      port: ['80:30080/TCP', '53/UDP'],
    });
    expect(row?.edges).toEqual([
      { type: 'usedBy', kind: 'Pod', namespace: 'shop', selector: { app: 'web' } },
    ]);
    // No selector: no pods.
    expect(
      toIndexed(object('ext', { spec: { ports: [] } }), type('', 'v1', 'services', 'Service'), hub)?.edges,
    ).toEqual([]);
  });

  it('ingress: hosts and the services it routes to', () => {
    const row = toIndexed(
      object('site', {
        spec: {
          defaultBackend: { service: { name: 'fallback', port: { number: 80 } } },
          rules: [
            {
              host: 'shop.example.com',
              http: { paths: [{ path: '/', backend: { service: { name: 'web' } } }] },
            },
            {
              host: 'api.example.com',
              http: { paths: [{ path: '/', backend: { service: { name: 'web' } } }] },
            },
          ],
        },
      }),
      type('networking.k8s.io', 'v1', 'ingresses', 'Ingress'),
      hub,
    );
    expect(row?.data.host).toEqual(['shop.example.com', 'api.example.com']);
    expect(row?.edges).toEqual([
      { type: 'usedBy', kind: 'Service', namespace: 'shop', name: 'fallback' },
      { type: 'usedBy', kind: 'Service', namespace: 'shop', name: 'web' },
    ]);
  });

  it('node, namespace, persistent volume and claim', () => {
    const node = toIndexed(
      object(
        'node-a',
        {
          status: {
            capacity: { cpu: '8', memory: '16Gi' },
            allocatable: { cpu: '7500m', memory: '15Gi' },
            nodeInfo: { architecture: 'arm64', osImage: 'Ubuntu 24.04' },
            addresses: [
              { type: 'Hostname', address: 'node-a' },
              { type: 'InternalIP', address: '192.168.1.2' },
            ],
            conditions: [{ type: 'Ready', status: 'True' }],
          },
        },
        {
          namespace: undefined,
          labels: { 'node-role.kubernetes.io/control-plane': '', 'node-role.kubernetes.io/infra': '' },
        },
      ),
      type('', 'v1', 'nodes', 'Node', false),
      hub,
    );
    expect(node?.data).toMatchObject({
      role: ['control-plane', 'infra'],
      architecture: 'arm64',
      osImage: 'Ubuntu 24.04',
      cpu: 8,
      memoryCapacity: 16 * 2 ** 30,
      memoryAllocatable: 15 * 2 ** 30,
      ipAddress: '192.168.1.2',
      condition: { Ready: 'True' },
    });
    expect(
      toIndexed(object('n2', {}, { namespace: undefined }), type('', 'v1', 'nodes', 'Node', false), hub)?.data
        .role,
    ).toEqual(['worker']);
    expect(
      toIndexed(
        object('team-a', { status: { phase: 'Active' } }, { namespace: undefined }),
        type('', 'v1', 'namespaces', 'Namespace', false),
        hub,
      )?.data.status,
    ).toBe('Active');
    const pv = toIndexed(
      object(
        'pv-1',
        {
          spec: {
            capacity: { storage: '10Gi' },
            accessModes: ['ReadWriteOnce'],
            persistentVolumeReclaimPolicy: 'Retain',
            storageClassName: 'fast',
            claimRef: { namespace: 'shop', name: 'data-claim' },
            hostPath: { path: '/mnt/data' },
          },
          status: { phase: 'Bound' },
        },
        { namespace: undefined },
      ),
      type('', 'v1', 'persistentvolumes', 'PersistentVolume', false),
      hub,
    );
    expect(pv?.data).toMatchObject({
      status: 'Bound',
      capacity: '10Gi',
      accessMode: ['ReadWriteOnce'],
      reclaimPolicy: 'Retain',
      storageClassName: 'fast',
      claimRef: 'shop/data-claim',
      type: 'Hostpath',
      path: '/mnt/data',
    });
    expect(pv?.data.namespace).toBeUndefined();
    const pvc = toIndexed(
      object('data-claim', {
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: 'fast',
          volumeName: 'pv-1',
          resources: { requests: { storage: '5Gi' } },
          volumeMode: 'Filesystem',
        },
        status: { phase: 'Bound', capacity: { storage: '10Gi' } },
      }),
      type('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim'),
      hub,
    );
    expect(pvc?.data).toMatchObject({
      status: 'Bound',
      volumeName: 'pv-1',
      storageClassName: 'fast',
      capacity: '10Gi',
      accessMode: ['ReadWriteOnce'],
      request: '5Gi',
      requestedStorage: 5 * 2 ** 30,
      volumeMode: 'Filesystem',
    });
    expect(pvc?.edges).toEqual([{ type: 'boundTo', kind: 'PersistentVolume', name: 'pv-1' }]);
  });
});
