// What a test file uses to talk to the shared control plane: an admin client, clients for non-admin
// users (client certificates issued on demand, or the static token users), a fresh namespace per test,
// and polling helpers. Everything a test creates through it is removed by cleanup().
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { inject } from 'vitest';
import { renderKubeconfig } from '../../devenv/controlplane/kubeconfig.ts';
import type { TokenUser } from '../../devenv/controlplane/launch.ts';
import { processAlive } from '../../devenv/node/host.ts';
import { type AccessQuery, subjectCan, type UserInfo } from '../../src/kube/access.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import {
  type CertificateAuthority,
  type IssueRequest,
  type KeyPair,
  loadCA,
} from '../../src/serving/certs.ts';
import type { ClusterInfo } from './global-setup.ts';
import { laneOf } from './lanes.ts';

let lane: ClusterInfo | undefined;

/**
 * The control plane of this file's lane (global-setup.ts, lanes.ts), claimed for this process: a lock
 * file in the control plane's folder holds the claiming pid until it exits, so that two files never share
 * a control plane whatever numbers vitest gives its workers. A file waits for a lane whose last file's
 * process is still ending.
 */
export function clusterInfo(): ClusterInfo {
  if (lane) return lane;
  const clusters = inject('clusters');
  const first = laneOf(clusters.length);
  const order = clusters.map((_, i) => clusters[(first + i) % clusters.length]!);
  const deadline = Date.now() + 120_000;
  for (;;) {
    for (const candidate of order) {
      if (claimLane(candidate.dir)) {
        lane = candidate;
        return lane;
      }
    }
    if (Date.now() > deadline) {
      throw new Error(
        `no free control plane among ${clusters.length} after 120 s (lane locks in their folders)`,
      );
    }
    // Synchronous, as callers are: the lane's previous process is ending.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  }
}

/** Takes `dir`'s lane lock for this process (a lock whose process is gone is taken over). */
function claimLane(dir: string): boolean {
  const lock = join(dir, 'lane.lock');
  try {
    writeFileSync(lock, String(process.pid), { flag: 'wx' });
  } catch {
    const holder = Number(readFileSyncOr(lock));
    if (holder === process.pid) return true;
    if (holder && processAlive(holder)) return false;
    rmSync(lock, { force: true });
    return claimLane(dir);
  }
  process.once('exit', () => {
    if (readFileSyncOr(lock) === String(process.pid)) rmSync(lock, { force: true });
  });
  return true;
}

function readFileSyncOr(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Users the API server authenticates by static token (--token-auth-file). */
export const testTokenUsers: TokenUser[] = [{ name: 'token-tenant', groups: ['tenantkit:tenants'] }];

export class TestCluster {
  readonly admin: KubeClient;
  readonly server: string;
  readonly dir: string;
  /** The admin's kubeconfig file, for tools run as processes (helm, kubectl). */
  readonly adminKubeconfigPath: string;
  private readonly ca: CertificateAuthority;
  private readonly caPem: string;
  /** The cluster CA certificate (PEM). */
  get caPemText(): string {
    return this.caPem;
  }
  private readonly cleanups: (() => Promise<unknown>)[] = [];

  private constructor(
    dir: string,
    server: string,
    adminKubeconfigPath: string,
    admin: KubeClient,
    ca: CertificateAuthority,
  ) {
    this.dir = dir;
    this.adminKubeconfigPath = adminKubeconfigPath;
    this.server = server;
    this.admin = admin;
    this.ca = ca;
    this.caPem = ca.certPem;
  }

  static async connect(): Promise<TestCluster> {
    const info = clusterInfo();
    const pki = join(info.dir, 'pki');
    const ca = await loadCA({
      certPem: await readFile(join(pki, 'ca.crt'), 'utf8'),
      keyPem: await readFile(join(pki, 'ca.key'), 'utf8'),
    });
    return new TestCluster(
      info.dir,
      info.server,
      info.adminKubeconfigPath,
      KubeClient.fromKubeconfig({ path: info.adminKubeconfigPath }),
      ca,
    );
  }

  /** A certificate from the cluster CA (the local node's components and serving certificate). */
  issueCertificate(request: IssueRequest): Promise<KeyPair> {
    return this.ca.issue(request);
  }

  /** A kubeconfig for `user` in `groups`, authenticated by a client certificate from the cluster CA. */
  async userKubeconfig(user: string, groups: string[] = []): Promise<string> {
    const pair = await this.ca.issue({
      commonName: user,
      organizations: groups,
      usage: 'client',
      validDays: 1,
    });
    return renderKubeconfig({
      server: this.server,
      caPem: this.caPem,
      user,
      credentials: { clientCertPem: pair.certPem, clientKeyPem: pair.keyPem },
    });
  }

  /** A client acting as a non-admin user (no permissions unless a test grants them). */
  async user(user: string, groups: string[] = []): Promise<KubeClient> {
    return KubeClient.fromKubeconfig({ yaml: await this.userKubeconfig(user, groups) });
  }

  /** Creates a ServiceAccount and returns a client that acts as it, with a TokenRequest token. */
  async serviceAccount(namespace: string, name: string): Promise<{ client: KubeClient; token: string }> {
    await this.admin.apply(
      Resources.serviceAccounts,
      { metadata: { name, namespace } },
      { fieldManager: 'tenantkit-test' },
    );
    const request = await this.admin.request<{ status: { token: string } }>(
      'POST',
      `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
      {
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds: 3600 },
        },
      },
    );
    const token = request.status.token;
    const yaml = renderKubeconfig({
      server: this.server,
      caPem: this.caPem,
      user: name,
      credentials: { token },
    });
    return { client: KubeClient.fromKubeconfig({ yaml }), token };
  }

  /** A client for one of {@link testTokenUsers}, authenticated by its bearer token. */
  tokenUser(name: string): KubeClient {
    return KubeClient.fromKubeconfig({ path: join(this.dir, `${name}.kubeconfig`) });
  }

  /** A unique name, safe as a namespace or object name. */
  unique(prefix = 't'): string {
    return `${prefix}-${randomBytes(4).toString('hex')}`;
  }

  /** Creates a fresh namespace that cleanup() deletes. */
  async namespace(prefix = 't', labels: Record<string, string> = {}): Promise<string> {
    const name = this.unique(prefix);
    await this.admin.create(Resources.namespaces, { metadata: { name, labels } });
    this.defer(() => this.admin.delete(Resources.namespaces, name));
    return name;
  }

  /**
   * Grants a subject either new `rules` (a Role in `namespace`, else a ClusterRole) or an existing
   * `clusterRole`, by a RoleBinding in `namespace` or else a ClusterRoleBinding. Cluster-scoped objects
   * are removed by cleanup(); namespaced ones go with their namespace. Returns the role's name.
   */
  async grant(
    subject: { kind: 'User' | 'Group' | 'ServiceAccount'; name: string; namespace?: string },
    what: { rules: unknown[]; name?: string } | { clusterRole: string },
    namespace?: string,
  ): Promise<string> {
    const apply = { fieldManager: 'tenantkit-test', force: true };
    const name =
      'rules' in what ? (what.name ?? this.unique('grant')) : this.unique(`grant-${what.clusterRole}`);
    const roleRef =
      'rules' in what
        ? { apiGroup: 'rbac.authorization.k8s.io', kind: namespace ? 'Role' : 'ClusterRole', name }
        : { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: what.clusterRole };
    if ('rules' in what) {
      const type = namespace ? Resources.roles : Resources.clusterRoles;
      await this.admin.apply(
        type,
        { metadata: { name, ...(namespace ? { namespace } : {}) }, rules: what.rules } as KubeObject,
        apply,
      );
      if (!namespace) this.defer(() => this.admin.delete(Resources.clusterRoles, name));
    }
    const binding = {
      metadata: { name, ...(namespace ? { namespace } : {}) },
      roleRef,
      subjects: [
        subject.kind === 'ServiceAccount' ? subject : { apiGroup: 'rbac.authorization.k8s.io', ...subject },
      ],
    } as KubeObject;
    await this.admin.apply(
      namespace ? Resources.roleBindings : Resources.clusterRoleBindings,
      binding,
      apply,
    );
    if (!namespace) this.defer(() => this.admin.delete(Resources.clusterRoleBindings, name));
    await this.effective(subject, 'rules' in what ? what.rules : undefined, roleRef, namespace);
    return roleRef.name;
  }

  /**
   * Waits until the API server's authorizer sees a new binding: it reads RBAC from its own informers, so
   * for a moment after the write (longer on a loaded machine) the subject is still refused. Asks it
   * (SubjectAccessReview) about one request the bound role allows.
   */
  private async effective(
    subject: { kind: 'User' | 'Group' | 'ServiceAccount'; name: string; namespace?: string },
    rules: unknown[] | undefined,
    roleRef: { kind: string; name: string },
    namespace: string | undefined,
  ): Promise<void> {
    const role =
      rules ??
      (await this.admin.get<KubeObject & { rules?: unknown[] }>(Resources.clusterRoles, roleRef.name))?.rules;
    const probe = probeOf((role ?? []) as PolicyRule[], namespace);
    if (!probe) return;
    const user: UserInfo =
      subject.kind === 'User'
        ? { username: subject.name, groups: ['system:authenticated'] }
        : subject.kind === 'Group'
          ? { username: this.unique('probe'), groups: [subject.name, 'system:authenticated'] }
          : {
              username: `system:serviceaccount:${subject.namespace}:${subject.name}`,
              groups: ['system:serviceaccounts', `system:serviceaccounts:${subject.namespace}`],
            };
    await eventually(() => subjectCan(this.admin, user, probe), {
      timeoutMs: 30_000,
      what: `the authorizer to honour the new binding of ${subject.kind} ${subject.name} to ${roleRef.kind} ${roleRef.name}`,
    });
  }

  /**
   * Waits until kube-controller-manager has aggregated rules on `resource` into ClusterRole `role` (e.g.
   * a capability's tenant roles into `admin`), so that bindings to that role grant them.
   */
  async aggregated(role: string, resource: string): Promise<void> {
    await eventually(
      async () =>
        (
          await this.admin.get<KubeObject & { rules?: { resources?: string[] }[] }>(
            Resources.clusterRoles,
            role,
          )
        )?.rules?.some((r) => r.resources?.includes(resource)),
      { what: `rules on ${resource} aggregated into ClusterRole ${role}` },
    );
  }

  /** Registers work for cleanup(), run in reverse order. */
  defer(fn: () => Promise<unknown>): void {
    this.cleanups.push(fn);
  }

  async cleanup(): Promise<void> {
    for (const fn of this.cleanups.splice(0).reverse()) await fn().catch(() => {});
  }
}

/**
 * Polls `probe` until it returns a value other than undefined/false, or throws the last failure after
 * `timeoutMs`. For asserting on eventually-consistent controller results.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      last = new Error(`${options.what ?? 'condition'} not met yet`);
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${options.what ?? 'condition'}: ${last instanceof Error ? last.message : String(last)}`,
      );
    }
    await sleep(options.intervalMs ?? 100);
  }
}

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** One request that `rules` allow, in concrete terms (a wildcard stands for any value, so any one does). */
function probeOf(rules: PolicyRule[], namespace: string | undefined): AccessQuery | undefined {
  const concrete = (values: string[] | undefined, any: string) => {
    const v = values?.[0];
    return v === undefined || v === '*' ? any : v;
  };
  const rule = rules.find((r) => r.resources?.length && r.verbs?.length);
  if (rule) {
    const [resource, subresource] = concrete(rule.resources, 'pods').split('/');
    return {
      resource: {
        ...(namespace ? { namespace } : {}),
        verb: concrete(rule.verbs, 'get'),
        group: concrete(rule.apiGroups, ''),
        resource: resource!,
        ...(subresource && subresource !== '*' ? { subresource } : {}),
        ...(rule.resourceNames?.length ? { name: rule.resourceNames[0] } : {}),
      },
    };
  }
  const url = rules.find((r) => r.nonResourceURLs?.length && r.verbs?.length);
  if (url && !namespace) {
    return {
      nonResource: {
        path: concrete(url.nonResourceURLs, '/').replace(/\*$/, ''),
        verb: concrete(url.verbs, 'get'),
      },
    };
  }
  return undefined;
}
