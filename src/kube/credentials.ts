// Who a KubeClient is and how it proves it: the API server's address and CA and the user's credentials,
// from a kubeconfig or the in-cluster service account. The cases tenantkit's own Pods and tests use
// (the service account, client certificates, bearer tokens and token files) are read here; a kubeconfig
// that needs more (exec plugins, auth providers, proxies, several files merged) is handed to
// @kubernetes/client-node's KubeConfig, imported on first use only: importing that package costs about
// 85 MiB of memory (its generated API models), which every tenantkit Pod would otherwise carry.
import { readFileSync, statSync } from 'node:fs';
import { Agent, type RequestOptions } from 'node:https';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';

export interface Credentials {
  server: URL;
  /** The user's name in the kubeconfig (or `in-cluster`), for logs and messages. */
  userName: string;
  /** The context's namespace, when it names one (in a Pod: the Pod's namespace). */
  namespace?: string;
  /** Puts the credentials on a request: a keep-alive agent trusting the cluster's CA, a bearer token. */
  apply(options: RequestOptions): Promise<void>;
}

interface NamedCluster {
  name: string;
  cluster: Record<string, unknown> & { server?: string };
}
interface NamedUser {
  name: string;
  user?: Record<string, unknown>;
}
interface NamedContext {
  name: string;
  context: { cluster: string; user: string; namespace?: string };
}
interface Kubeconfig {
  clusters?: NamedCluster[];
  users?: NamedUser[];
  contexts?: NamedContext[];
  'current-context'?: string;
}

/** Kubeconfig fields read here; any other field (exec, auth-provider, proxy-url, …) goes to client-node. */
const clusterFields = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
  'extensions',
]);
const userFields = new Set([
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'token',
  'tokenFile',
  'extensions',
]);

const agentOptions = { keepAlive: true, keepAliveMsecs: 1000, timeout: 4000, maxFreeSockets: 16 };

/** A token read from a file, read again when the file changed (bound service account tokens rotate). */
function tokenFromFile(path: string): () => string {
  let token = '';
  let mtime = -1;
  let checked = 0;
  return () => {
    const now = Date.now();
    if (now - checked > 1000) {
      checked = now;
      const changed = statSync(path).mtimeMs;
      if (changed !== mtime) {
        token = readFileSync(path, 'utf8').trim();
        mtime = changed;
      }
    }
    return token;
  };
}

function staticCredentials(
  server: URL,
  userName: string,
  namespace: string | undefined,
  tls: {
    ca?: string | Buffer;
    cert?: string | Buffer;
    key?: string | Buffer;
    insecure?: boolean;
    servername?: string;
  },
  token: (() => string) | undefined,
): Credentials {
  const agent = new Agent({
    ...agentOptions,
    ...(tls.ca ? { ca: tls.ca } : {}),
    ...(tls.cert ? { cert: tls.cert } : {}),
    ...(tls.key ? { key: tls.key } : {}),
    ...(tls.servername ? { servername: tls.servername } : {}),
    rejectUnauthorized: !tls.insecure,
  });
  return {
    server,
    userName,
    ...(namespace ? { namespace } : {}),
    async apply(options) {
      options.agent = agent;
      if (token) {
        options.headers = {
          ...(options.headers as Record<string, string>),
          Authorization: `Bearer ${token()}`,
        };
      }
    },
  };
}

const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The Pod's service account, as client-go's in-cluster config reads it; undefined outside a Pod. */
export function inClusterCredentials(): Credentials | undefined {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return undefined;
  const server = new URL(`https://${host.includes(':') ? `[${host}]` : host}:${port}`);
  let namespace: string | undefined;
  try {
    namespace = readFileSync(join(serviceAccountDir, 'namespace'), 'utf8').trim();
  } catch {
    namespace = undefined;
  }
  return staticCredentials(
    server,
    'in-cluster',
    namespace,
    { ca: readFileSync(join(serviceAccountDir, 'ca.crt')) },
    tokenFromFile(join(serviceAccountDir, 'token')),
  );
}

/** client-node's KubeConfig for what is not read here, imported when a request first needs it. */
function delegated(load: (config: import('@kubernetes/client-node').KubeConfig) => void) {
  let config: Promise<import('@kubernetes/client-node').KubeConfig> | undefined;
  const agents = new WeakMap<Agent, Agent>();
  return async (options: RequestOptions) => {
    config ??= import('@kubernetes/client-node').then(({ KubeConfig }) => {
      const c = new KubeConfig();
      load(c);
      return c;
    });
    await (await config).applyToHTTPSOptions(options);
    // One keep-alive twin per agent it hands out (a proxy agent, or none, is left as it is).
    if (options.agent instanceof Agent) {
      let twin = agents.get(options.agent);
      if (!twin) {
        twin = new Agent({ ...options.agent.options, ...agentOptions });
        agents.set(options.agent, twin);
      }
      options.agent = twin;
    }
  };
}

/** File names in a kubeconfig, which are relative to the file that holds them. */
const fileFields = ['certificate-authority', 'client-certificate', 'client-key', 'tokenFile'];

function absolutize(config: Kubeconfig, base: string): Kubeconfig {
  const fix = (entry: Record<string, unknown> | undefined) => {
    for (const field of fileFields) {
      const value = entry?.[field];
      if (typeof value === 'string' && !isAbsolute(value)) entry![field] = join(base, value);
    }
  };
  for (const c of config.clusters ?? []) fix(c.cluster);
  for (const u of config.users ?? []) fix(u.user);
  return config;
}

/** Several kubeconfig files as kubectl merges them: the first file to name an entry or value wins. */
function merge(configs: Kubeconfig[]): Kubeconfig {
  const byName = <T extends { name: string }>(lists: (T[] | undefined)[]) => {
    const seen = new Map<string, T>();
    for (const item of lists.flatMap((l) => l ?? [])) if (!seen.has(item.name)) seen.set(item.name, item);
    return [...seen.values()];
  };
  const current = configs.map((c) => c['current-context']).find(Boolean);
  return {
    clusters: byName(configs.map((c) => c.clusters)),
    users: byName(configs.map((c) => c.users)),
    contexts: byName(configs.map((c) => c.contexts)),
    ...(current ? { 'current-context': current } : {}),
  };
}

function fromKubeconfig(
  config: Kubeconfig,
  contextOverride: string | undefined,
  load: (c: import('@kubernetes/client-node').KubeConfig) => void,
): Credentials {
  const contextName = contextOverride ?? config['current-context'];
  const context = config.contexts?.find((c) => c.name === contextName)?.context;
  if (!context) {
    throw new Error(
      contextOverride
        ? `context "${contextOverride}" is not in the kubeconfig`
        : 'the kubeconfig has no current context',
    );
  }
  const cluster = config.clusters?.find((c) => c.name === context.cluster)?.cluster;
  if (!cluster?.server) throw new Error(`the kubeconfig has no server for cluster "${context.cluster}"`);
  const named = config.users?.find((u) => u.name === context.user);
  const user = named?.user ?? {};
  const server = new URL(cluster.server);
  const userName = named?.name ?? 'unknown';
  const simple =
    Object.keys(cluster).every((k) => clusterFields.has(k)) &&
    Object.keys(user).every((k) => userFields.has(k));
  if (!simple) {
    const apply = delegated((c) => {
      load(c);
      c.setCurrentContext(contextName!);
    });
    return { server, userName, ...(context.namespace ? { namespace: context.namespace } : {}), apply };
  }
  const pick = (dataKey: string, fileKey: string, from: Record<string, unknown>) =>
    from[dataKey] !== undefined
      ? Buffer.from(String(from[dataKey]), 'base64')
      : from[fileKey] !== undefined
        ? readFileSync(String(from[fileKey]))
        : undefined;
  const token =
    user.token !== undefined
      ? () => String(user.token)
      : user.tokenFile !== undefined
        ? tokenFromFile(String(user.tokenFile))
        : undefined;
  return staticCredentials(
    server,
    userName,
    context.namespace,
    {
      ca: pick('certificate-authority-data', 'certificate-authority', cluster),
      cert: pick('client-certificate-data', 'client-certificate', user),
      key: pick('client-key-data', 'client-key', user),
      insecure: cluster['insecure-skip-tls-verify'] === true,
      ...(typeof cluster['tls-server-name'] === 'string' ? { servername: cluster['tls-server-name'] } : {}),
    },
    token,
  );
}

/**
 * The credentials of a kubeconfig (YAML text; `path`, the file it came from, anchors its relative file
 * names), for its current context or `context`.
 */
export function kubeconfigCredentials(
  text: string,
  options: { path?: string; context?: string } = {},
): Credentials {
  const config = absolutize(
    (parse(text) ?? {}) as Kubeconfig,
    options.path ? dirname(options.path) : process.cwd(),
  );
  return fromKubeconfig(config, options.context, (c) => {
    if (options.path) c.loadFromFile(options.path);
    else c.loadFromString(text);
  });
}

/** The kubeconfig files kubectl would use: $KUBECONFIG's, else ~/.kube/config when it exists. */
function defaultKubeconfigPaths(): string[] {
  const fromEnvironment = (process.env.KUBECONFIG ?? '').split(':').filter(Boolean);
  if (fromEnvironment.length > 0) return fromEnvironment;
  const home = join(homedir(), '.kube', 'config');
  try {
    statSync(home);
    return [home];
  } catch {
    return [];
  }
}

/**
 * What kubectl and client-go use without flags: $KUBECONFIG (several files merged), else
 * ~/.kube/config, else the Pod's service account.
 */
export function defaultCredentials(context?: string): Credentials {
  const paths = defaultKubeconfigPaths();
  if (paths.length === 0) {
    const inCluster = inClusterCredentials();
    if (inCluster && !context) return inCluster;
    throw new Error('no kubeconfig: set $KUBECONFIG or create ~/.kube/config (or run in a Pod)');
  }
  const configs = paths.map((p) =>
    absolutize((parse(readFileSync(p, 'utf8')) ?? {}) as Kubeconfig, dirname(p)),
  );
  return fromKubeconfig(merge(configs), context, (c) => c.loadFromDefault());
}
