// The Projects API (project.openshift.io/v1) as an aggregated API: kube-apiserver proxies
// /apis/project.openshift.io/v1/... here (an APIService), authenticated as the front proxy with the user
// in headers (front-proxy.ts). It lists, gets and watches the caller's projects from the namespace cache
// and the caller's access set, and answers `kubectl get` with a Table. It has a listener of its own, which
// takes no other credential: its port serves kube-apiserver only.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Informer } from '../../kube/informer.ts';
import { setOwn } from '../../kube/own.ts';
import { compileSelector, type LabelSelector, type Matcher } from '../../kube/selectors.ts';
import type { KeyPair } from '../../serving/certs.ts';
import { HttpsListener, type ServingCertificate } from '../../serving/https.ts';
import type { AccessProvider, AccessSet, SearchUser } from '../model.ts';
import { FrontProxyAuthenticator, type FrontProxyConfig } from './front-proxy.ts';
import {
  apiGroup,
  mayUseNamespace,
  type Namespace,
  type Project,
  ProjectGroup,
  ProjectGroupVersion,
  projectOf,
  projectTable,
  resourceList,
  wantsTable,
} from './projects.ts';

export interface ProjectsServerOptions {
  host?: string;
  port?: number;
  logger: Logger;
  certificate: ServingCertificate;
  frontProxy: FrontProxyConfig;
  namespaces: Informer<Namespace>;
  access: AccessProvider & { onChange?(listener: () => void): () => void };
}

const base = `/apis/${ProjectGroupVersion}`;
/** A watch ends after this long unless the client asks for less (kubectl then watches again). */
const maxWatchSeconds = 1800;

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code });
  res.writeHead(code, { 'content-type': 'application/json' }).end(body);
}

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A watcher of one user's projects: sent each change of a namespace it may see, and of what it may see. */
interface Watcher {
  access: () => AccessSet;
  matches: (ns: Namespace) => boolean;
  visible: Set<string>;
  send(type: 'ADDED' | 'MODIFIED' | 'DELETED', ns: Namespace): void;
}

export class ProjectsServer {
  private readonly listener: HttpsListener;
  private readonly options: ProjectsServerOptions;
  private readonly proxy: FrontProxyAuthenticator;
  private readonly watchers = new Set<Watcher>();

  constructor(options: ProjectsServerOptions) {
    this.options = options;
    this.proxy = new FrontProxyAuthenticator(options.frontProxy);
    this.listener = new HttpsListener({
      logger: options.logger,
      certificate: options.certificate,
      clientCaPem: options.frontProxy.caPem,
      ...(options.host ? { host: options.host } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
      handler: (req, res) => this.handle(req, res),
      route: (path) => (path.startsWith(base) ? base : path),
    });
    const changed = (ns: Namespace, gone = false) => {
      for (const w of this.watchers) this.deliver(w, ns, gone);
    };
    options.namespaces.addHandlers({
      onAdd: (ns) => changed(ns),
      onUpdate: (_, ns) => changed(ns),
      onDelete: (ns) => changed(ns, true),
    });
    // RBAC changed: what each watcher may see is worked out again, and the difference sent.
    options.access.onChange?.(() => {
      for (const w of this.watchers) for (const ns of options.namespaces.list()) this.deliver(w, ns, false);
    });
  }

  get port(): number {
    return this.listener.port;
  }

  start(): Promise<number> {
    return this.listener.start();
  }

  /** Replaces the serving certificate (a rotated one). */
  setCertificate(pair: KeyPair): void {
    this.listener.setCertificate(pair);
  }

  async stop(): Promise<void> {
    await this.listener.stop();
  }

  private deliver(w: Watcher, ns: Namespace, gone: boolean): void {
    const name = ns.metadata.name!;
    const now = !gone && w.matches(ns) && mayUseNamespace(w.access(), name);
    const before = w.visible.has(name);
    if (now) w.visible.add(name);
    else w.visible.delete(name);
    if (now) w.send(before ? 'MODIFIED' : 'ADDED', ns);
    else if (before) w.send('DELETED', ns);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://projects.invalid');
    const path = url.pathname.replace(/\/+$/, '');
    if (path === '/healthz' || path === '/readyz' || path === '/livez') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    const who = this.proxy.authenticate(req);
    if ('problem' in who) {
      status(
        res,
        401,
        'Unauthorized',
        `only kube-apiserver's front proxy may call this API (${who.problem})`,
      );
      return;
    }
    if (req.method !== 'GET') {
      status(
        res,
        405,
        'MethodNotAllowed',
        `projects are read-only here: ${req.method} is not supported; create a namespace instead (kubectl create namespace <name>)`,
      );
      return;
    }
    if (path === '/apis') return json(res, { kind: 'APIGroupList', apiVersion: 'v1', groups: [apiGroup] });
    if (path === `/apis/${ProjectGroup}`) return json(res, apiGroup);
    if (path === base) return json(res, resourceList);
    const watchPath = `${base}/watch/projects`;
    const match = /^\/apis\/project\.openshift\.io\/v1\/(?:watch\/)?projects(?:\/([^/]+))?$/.exec(path);
    if (!match) {
      status(res, 404, 'NotFound', `the server could not find the requested resource (${path})`);
      return;
    }
    const name = match[1] ? decodeURIComponentSafe(match[1]) : undefined;
    const watching =
      path.startsWith(watchPath) || ['true', '1'].includes(url.searchParams.get('watch') ?? '');
    const filter = this.filterOf(url, name);
    if (typeof filter === 'string') {
      status(res, 400, 'BadRequest', filter);
      return;
    }
    const access = () => this.options.access.forUser(who.user);
    if (watching) return this.watch(req, res, who.user, access, filter, url);
    if (name !== undefined) return this.get(res, access(), name);
    return this.list(req, res, access(), filter);
  }

  /** The objects a request's selectors and name let through, or why the selectors are not understood. */
  private filterOf(url: URL, name: string | undefined): ((ns: Namespace) => boolean) | string {
    const fields = url.searchParams.get('fieldSelector') ?? '';
    let byName = name;
    for (const term of fields.split(',').filter(Boolean)) {
      const m = /^metadata\.name(==?)(.+)$/.exec(term);
      if (!m) return `field selector "${term}" is not supported; only metadata.name=<name> is`;
      byName = m[2];
    }
    const labels = url.searchParams.get('labelSelector') ?? '';
    let matchesLabels: Matcher = () => true;
    if (labels) {
      const selector = parseLabelSelector(labels);
      if (typeof selector === 'string') return selector;
      const compiled = compileSelector(selector);
      if (!compiled.ok) return `label selector "${labels}": ${compiled.error}`;
      matchesLabels = compiled.matches;
    }
    return (ns) => (byName === undefined || ns.metadata.name === byName) && matchesLabels(ns.metadata.labels);
  }

  private get(res: ServerResponse, access: AccessSet, name: string): void {
    const ns = this.options.namespaces.get(name);
    // A namespace the caller may not use is not found, as OpenShift answers: its existence is not told.
    if (!ns || !mayUseNamespace(access, name)) {
      status(res, 404, 'NotFound', `projects.${ProjectGroup} "${name}" not found`);
      return;
    }
    json(res, projectOf(ns));
  }

  private list(
    req: IncomingMessage,
    res: ServerResponse,
    access: AccessSet,
    filter: (ns: Namespace) => boolean,
  ): void {
    const projects: Project[] = this.options.namespaces
      .list()
      .filter((ns) => filter(ns) && mayUseNamespace(access, ns.metadata.name!))
      .sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!))
      .map(projectOf);
    const resourceVersion = this.options.namespaces.lastResourceVersion();
    if (wantsTable(req.headers.accept)) {
      json(res, projectTable(projects, resourceVersion));
      return;
    }
    json(res, {
      kind: 'ProjectList',
      apiVersion: ProjectGroupVersion,
      metadata: { resourceVersion },
      items: projects,
    });
  }

  private watch(
    req: IncomingMessage,
    res: ServerResponse,
    user: SearchUser,
    access: () => AccessSet,
    filter: (ns: Namespace) => boolean,
    url: URL,
  ): void {
    const table = wantsTable(req.headers.accept);
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache' });
    const watcher: Watcher = {
      access,
      matches: filter,
      visible: new Set(),
      send: (type, ns) => {
        const object = table
          ? projectTable([projectOf(ns)], ns.metadata.resourceVersion ?? '')
          : projectOf(ns);
        res.write(`${JSON.stringify({ type, object })}\n`);
      },
    };
    // Without a version to start from, the watch begins with every project the caller sees now (as
    // Kubernetes does); with one (kubectl lists first), with what changes from here.
    const from = url.searchParams.get('resourceVersion');
    for (const ns of this.options.namespaces.list()) {
      if (!filter(ns) || !mayUseNamespace(access(), ns.metadata.name!)) continue;
      watcher.visible.add(ns.metadata.name!);
      if (!from || from === '0') watcher.send('ADDED', ns);
    }
    this.watchers.add(watcher);
    const seconds = Math.min(
      Number(url.searchParams.get('timeoutSeconds')) || maxWatchSeconds,
      maxWatchSeconds,
    );
    const end = () => {
      clearTimeout(timer);
      this.watchers.delete(watcher);
      res.end();
    };
    const timer = setTimeout(end, seconds * 1000);
    req.on('close', end);
    this.options.logger.debug({ user: user.username }, 'projects watch opened');
  }
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

type Term = Required<LabelSelector>;
/** The forms of one term of a label selector in kubectl's text form, and what each adds. */
const termForms: [RegExp, (m: RegExpExecArray, into: Term) => void][] = [
  [
    /^([\w./-]+)\s*==?\s*([\w.-]*)$/,
    (m, into) => {
      setOwn(into.matchLabels, m[1]!, m[2]!);
    },
  ],
  [
    /^([\w./-]+)\s*!=\s*([\w.-]*)$/,
    (m, into) => void into.matchExpressions.push({ key: m[1]!, operator: 'NotIn', values: [m[2]!] }),
  ],
  [
    /^([\w./-]+)\s+(in|notin)\s*\(([^)]*)\)$/,
    (m, into) =>
      void into.matchExpressions.push({
        key: m[1]!,
        operator: m[2] === 'in' ? 'In' : 'NotIn',
        values: m[3]!
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean),
      }),
  ],
  [/^!([\w./-]+)$/, (m, into) => void into.matchExpressions.push({ key: m[1]!, operator: 'DoesNotExist' })],
  [/^([\w./-]+)$/, (m, into) => void into.matchExpressions.push({ key: m[1]!, operator: 'Exists' })],
];

/** A label selector in kubectl's text form (a=b, a!=b, a in (x,y), a notin (x), a, !a). */
function parseLabelSelector(text: string): LabelSelector | string {
  const selector: Term = { matchLabels: {}, matchExpressions: [] };
  for (const raw of text.match(/[^,(]+(\([^)]*\))?/g) ?? []) {
    const term = raw.trim();
    const form = termForms.map(([re, add]) => [re.exec(term), add] as const).find(([m]) => m);
    if (!form) return `label selector "${text}" is not understood at "${term}"`;
    form[1](form[0]!, selector);
  }
  return selector;
}
