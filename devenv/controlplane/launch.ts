// Starts the local control plane (etcd + kube-apiserver + kube-controller-manager, built from devenv/go/controlplane/)
// on free loopback ports, with a PKI kept in its directory so that a restart reuses data and credentials.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, openSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { freePort, portIsFree } from '../../src/ports.ts';
import {
  type CertificateAuthority,
  createCA,
  generateSigningKey,
  type IssueRequest,
  type KeyPair,
  loadCA,
} from '../../src/serving/certs.ts';
import { ensureControlPlaneBinary, type Progress } from './build.ts';
import { renderKubeconfig } from './kubeconfig.ts';

export interface TokenUser {
  name: string;
  groups: string[];
  /** Default namespace of the user's kubeconfig context. */
  namespace?: string;
}

export interface ControlPlaneOptions {
  /** Holds etcd data, the PKI, kubeconfigs and the log. Reused when it already exists. */
  dir: string;
  /** Users authenticated by static bearer tokens (`--token-auth-file`). */
  tokenUsers?: TokenUser[];
  /** Skip etcd fsync: much faster, but data may be lost on a machine crash. For tests. */
  unsafeNoFsync?: boolean;
  /**
   * Runs once kube-apiserver is ready and before kube-controller-manager starts, with an admin
   * kubeconfig: install CRDs here so the garbage collector knows them from its first discovery
   * (otherwise it learns new types only on its 30 s rediscovery).
   */
  beforeControllers?: (adminKubeconfig: string) => Promise<void>;
  /**
   * The address kube-apiserver listens on and advertises; default 127.0.0.1. The local node's address
   * (node-network.ts) when Pods must reach it: the `kubernetes` Service then has that endpoint.
   */
  address?: string;
  /** Extra kube-apiserver flags, e.g. `--watch-cache=false` (tests that need old versions compacted away). */
  apiserverFlags?: string[];
  progress?: Progress;
}

export interface ControlPlane {
  server: string;
  caPem: string;
  dir: string;
  /** Path of a cluster-admin kubeconfig (client certificate in system:masters). */
  adminKubeconfigPath: string;
  adminKubeconfig: string;
  /** Path of a kubeconfig for a user from {@link ControlPlaneOptions.tokenUsers}. */
  tokenKubeconfigPath(user: string): string;
  /** Issues a certificate from the cluster CA (e.g. for the local node's components). */
  issue(request: IssueRequest): Promise<KeyPair>;
  /** A kubeconfig for any user and groups, authenticated by a freshly issued client certificate. */
  userKubeconfig(user: string, groups?: string[], namespace?: string): Promise<string>;
  /** Stops every process; resolves once they exited. */
  stop(): Promise<void>;
}

interface Ports {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
}

/** Reuses the ports of the previous run when they are free, so etcd's stored member URLs stay valid. */
async function choosePorts(file: string): Promise<Ports> {
  if (existsSync(file)) {
    const previous = JSON.parse(await readFile(file, 'utf8')) as Ports;
    const all = [previous.etcdClient, previous.etcdPeer, previous.apiserver];
    if ((await Promise.all(all.map(portIsFree))).every(Boolean)) return previous;
  }
  const ports = { etcdClient: await freePort(), etcdPeer: await freePort(), apiserver: await freePort() };
  await writeFile(file, JSON.stringify(ports));
  return ports;
}

async function readPair(dir: string, name: string): Promise<KeyPair | undefined> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  if (!existsSync(cert) || !existsSync(key)) return undefined;
  return { certPem: await readFile(cert, 'utf8'), keyPem: await readFile(key, 'utf8') };
}

async function writePair(dir: string, name: string, pair: KeyPair): Promise<void> {
  await writeFile(join(dir, `${name}.crt`), pair.certPem);
  await writeFile(join(dir, `${name}.key`), pair.keyPem, { mode: 0o600 });
}

/** Creates (or reuses) the CA, serving certificate and service-account signing key. */
async function preparePki(pki: string, address: string): Promise<CertificateAuthority> {
  await mkdir(pki, { recursive: true, mode: 0o700 });
  const existing = await readPair(pki, 'ca');
  const ca = existing ? await loadCA(existing) : await createCA('tenantkit-local-ca');
  if (!existing) await writePair(pki, 'ca', ca);
  // The serving certificate names every address clients use: a changed address gets a new certificate.
  const ipAddresses = [...new Set(['127.0.0.1', address, '10.96.0.1'])];
  const addressesFile = join(pki, 'apiserver.addresses');
  const issuedFor = existsSync(addressesFile) ? await readFile(addressesFile, 'utf8') : '';
  if (!existsSync(join(pki, 'apiserver.crt')) || issuedFor !== ipAddresses.join(',')) {
    const serving = await ca.issue({
      commonName: 'kube-apiserver',
      usage: 'server',
      dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'],
      ipAddresses,
    });
    await writePair(pki, 'apiserver', serving);
    await writeFile(addressesFile, ipAddresses.join(','));
  }
  if (!existsSync(join(pki, 'apiserver-kubelet-client.crt'))) {
    // kube-apiserver's identity towards kubelets (logs, exec, port-forward); RBAC grants it kubelet's API.
    await writePair(
      pki,
      'apiserver-kubelet-client',
      await ca.issue({ commonName: 'kube-apiserver-kubelet-client', usage: 'client' }),
    );
  }
  if (!existsSync(join(pki, 'sa.key'))) {
    const sa = await generateSigningKey();
    await writeFile(join(pki, 'sa.key'), sa.privatePem, { mode: 0o600 });
    await writeFile(join(pki, 'sa.pub'), sa.publicPem);
  }
  return ca;
}

/** Keeps each user's token across restarts so kubeconfigs handed out earlier keep working. */
async function writeTokens(pki: string, users: TokenUser[]): Promise<Map<string, string>> {
  const file = join(pki, 'tokens.csv');
  const previous = new Map<string, string>();
  if (existsSync(file)) {
    for (const line of (await readFile(file, 'utf8')).split('\n')) {
      const [token, user] = line.split(',');
      if (token && user) previous.set(user, token);
    }
  }
  const tokens = new Map<string, string>();
  const lines: string[] = [];
  for (const user of users) {
    const token = previous.get(user.name) ?? randomBytes(24).toString('hex');
    tokens.set(user.name, token);
    lines.push(`${token},${user.name},${user.name},"${user.groups.join(',')}"`);
  }
  // kube-apiserver refuses an empty token file; a disabled placeholder user keeps the flag valid.
  if (lines.length === 0) lines.push(`${randomBytes(24).toString('hex')},tenantkit:nobody,tenantkit:nobody`);
  await writeFile(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return tokens;
}

async function waitReady(
  server: string,
  caPem: string,
  admin: KeyPair,
  child: ChildProcess,
  logFile: string,
): Promise<void> {
  const deadline = Date.now() + 180_000;
  let exited: number | null = null;
  child.once('exit', (code) => {
    exited = code ?? -1;
  });
  let last = '';
  while (Date.now() < deadline) {
    if (exited !== null) {
      const log = await readFile(logFile, 'utf8').catch(() => '');
      throw new Error(`control plane exited with code ${exited}; log tail:\n${log.slice(-3000)}`);
    }
    const status = await new Promise<number>((done) => {
      const req = request(
        `${server}/readyz`,
        { ca: caPem, cert: admin.certPem, key: admin.keyPem, timeout: 2000 },
        (res) => {
          res.resume();
          done(res.statusCode ?? 0);
        },
      );
      req.on('error', (err) => {
        last = err.message;
        done(0);
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end();
    });
    if (status === 200) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`kube-apiserver not ready after 180 s (last error: ${last}); see ${logFile}`);
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const progress = options.progress ?? (() => {});
  const binary = await ensureControlPlaneBinary(progress);
  const dir = options.dir;
  const pki = join(dir, 'pki');
  await mkdir(dir, { recursive: true });
  const address = options.address ?? '127.0.0.1';
  const ca = await preparePki(pki, address);
  const ports = await choosePorts(join(dir, 'ports.json'));
  const server = `https://${address}:${ports.apiserver}`;

  const admin =
    (await readPair(pki, 'admin')) ??
    (await ca.issue({ commonName: 'tenantkit-admin', organizations: ['system:masters'], usage: 'client' }));
  await writePair(pki, 'admin', admin);
  const kcm = await ca.issue({ commonName: 'system:kube-controller-manager', usage: 'client' });
  const kubeconfig = (
    user: string,
    credentials: Parameters<typeof renderKubeconfig>[0]['credentials'],
    namespace?: string,
  ) =>
    renderKubeconfig({ server, caPem: ca.certPem, user, credentials, ...(namespace ? { namespace } : {}) });
  await writeFile(
    join(pki, 'controller-manager.kubeconfig'),
    kubeconfig('system:kube-controller-manager', { clientCertPem: kcm.certPem, clientKeyPem: kcm.keyPem }),
    { mode: 0o600 },
  );
  const adminKubeconfig = kubeconfig('admin', { clientCertPem: admin.certPem, clientKeyPem: admin.keyPem });
  const adminKubeconfigPath = join(dir, 'admin.kubeconfig');
  await writeFile(adminKubeconfigPath, adminKubeconfig, { mode: 0o600 });

  const tokenUsers = options.tokenUsers ?? [];
  const tokens = await writeTokens(pki, tokenUsers);
  for (const user of tokenUsers) {
    await writeFile(
      join(dir, `${user.name}.kubeconfig`),
      kubeconfig(user.name, { token: tokens.get(user.name)! }, user.namespace),
      {
        mode: 0o600,
      },
    );
  }

  const logFile = join(dir, 'controlplane.log');
  const log = openSync(logFile, 'a');
  const args = [
    `--data-dir=${dir}`,
    `--pki-dir=${pki}`,
    `--etcd-client-port=${ports.etcdClient}`,
    `--etcd-peer-port=${ports.etcdPeer}`,
    `--secure-port=${ports.apiserver}`,
    `--address=${address}`,
  ];
  if (options.unsafeNoFsync) args.push('--unsafe-no-fsync');
  if (options.apiserverFlags?.length) {
    // The binary splits this one value on spaces, so a flag cannot contain one.
    const bad = options.apiserverFlags.find((f) => /\s/.test(f) || !f.startsWith('--'));
    if (bad) {
      throw new Error(`kube-apiserver flag ${JSON.stringify(bad)} must start with -- and contain no spaces`);
    }
    args.push(`--apiserver-extra-flags=${options.apiserverFlags.join(' ')}`);
  }
  const gate = join(dir, 'start-controllers');
  await rm(gate, { force: true });
  args.push(`--start-controllers-after=${gate}`);
  progress(`starting the control plane on ${server} (log: ${logFile})`);
  const child = spawn(binary, args, { stdio: ['ignore', log, log] });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  try {
    await waitReady(server, ca.certPem, admin, child, logFile);
    await options.beforeControllers?.(adminKubeconfig);
    await writeFile(gate, '');
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }

  return {
    server,
    caPem: ca.certPem,
    dir,
    adminKubeconfigPath,
    adminKubeconfig,
    tokenKubeconfigPath: (user) => join(dir, `${user}.kubeconfig`),
    issue: (request) => ca.issue(request),
    async userKubeconfig(user, groups = [], namespace) {
      const pair = await ca.issue({
        commonName: user,
        organizations: groups,
        usage: 'client',
        validDays: 30,
      });
      return kubeconfig(user, { clientCertPem: pair.certPem, clientKeyPem: pair.keyPem }, namespace);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
