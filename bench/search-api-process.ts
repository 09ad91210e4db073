// `tenantkit search api` as its own process, as in its Pod, for the search benchmarks: compiled from
// src/ into dist/ (what the image runs) or run from the .ts sources, serving HTTPS on 127.0.0.1 with a
// bench CA; its memory read from /proc; GraphQL posted to it with bearer tokens over kept-alive TLS. The
// hub's collector runs beside it as a process of its own, as the chart runs them.
import { execFile, spawn } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../devenv/images/build.ts';
import { freePort } from '../src/ports.ts';
import { createCA } from '../src/serving/certs.ts';
import { postGraphQL } from '../test/harness/search-client.ts';

export interface SearchApiProcessOptions {
  /** Where its TLS files go. */
  dir: string;
  kubeconfigPath: string;
  databaseUrl: string;
  /** More flags for `tenantkit search api` (e.g. --no-collector). */
  args?: string[];
  /** NODE_OPTIONS for the process. */
  nodeOptions?: string;
  /** More environment for the process (e.g. MALLOC_ARENA_MAX, as a Pod's env). */
  env?: Record<string, string>;
  /** dist: compiled now from src/ (as the image is); already-built: the dist/ an earlier start compiled. */
  from: 'dist' | 'src' | 'already-built';
  /** Largest number of TLS connections the client keeps to it. */
  maxSockets?: number;
}

export interface GraphQLAnswer {
  data?: Record<string, unknown>;
  errors?: unknown[];
}

export interface SearchApiProcess {
  url: string;
  caPem: string;
  pid: number;
  /** Resident memory in MiB: now (VmRSS) or the highest so far (VmHWM). */
  rss(field: 'VmRSS' | 'VmHWM'): Promise<number>;
  /**
   * Its resident memory now in MiB by kind, from /proc: anonymous (V8's heap, malloc's arenas, Buffers),
   * file-backed (the node binary's pages and other mapped files) and shared.
   */
  rssParts(): Promise<{ anon: number; file: number; shmem: number }>;
  post(token: string, query: string, variables: Record<string, unknown>): Promise<GraphQLAnswer>;
  /**
   * Where its memory is, in MiB, from its /metrics (read with `token`, which may get /metrics): the V8
   * heap used and held, memory outside the heap (Buffers, TLS), and the heap's spaces by name.
   */
  memory(token: string): Promise<ProcessMemory>;
  stop(): Promise<void>;
}

export interface ProcessMemory {
  heapUsed: number;
  heapTotal: number;
  external: number;
  spaces: Record<string, number>;
}

const mib = (bytes: number) => bytes / 1048576;

/** A `Name: N kB` line of /proc/PID/status in MiB (0 when missing). */
const statusMib = (status: string, field: string) =>
  Number(status.match(new RegExp(`${field}:\\s+(\\d+) kB`))?.[1] ?? 0) / 1024;

/** The default process metrics of prom-client (tenantkit's prefix) in a /metrics text. */
export function processMemory(text: string): ProcessMemory {
  const value = (name: string) =>
    Number(new RegExp(`^tenantkit_nodejs_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  const spaces: Record<string, number> = {};
  for (const m of text.matchAll(/^tenantkit_nodejs_heap_space_size_used_bytes\{space="([^"]+)"\} (\S+)$/gm))
    spaces[m[1]!] = mib(Number(m[2]));
  return {
    heapUsed: mib(value('heap_size_used_bytes')),
    heapTotal: mib(value('heap_size_total_bytes')),
    external: mib(value('external_memory_bytes')),
    spaces,
  };
}

export async function startSearchApiProcess(options: SearchApiProcessOptions): Promise<SearchApiProcess> {
  const ca = await createCA('bench-search');
  const serving = await ca.issue({ commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
  const certDir = join(options.dir, 'api-tls');
  await mkdir(certDir, { recursive: true });
  await writeFile(join(certDir, 'tls.crt'), serving.certPem);
  await writeFile(join(certDir, 'tls.key'), serving.keyPem);
  const port = await freePort();
  if (options.from === 'dist') {
    console.error('compiling src/ into dist/ for the search API process, as the image does');
    await rm(join(repoRoot, 'dist'), { recursive: true, force: true });
    await promisify(execFile)(
      process.execPath,
      [join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      { cwd: repoRoot },
    );
  }
  const entry =
    options.from !== 'src'
      ? join(repoRoot, 'dist', 'src', 'cli', 'main.js')
      : join(repoRoot, 'src', 'cli', 'main.ts');
  const api = spawn(
    process.execPath,
    [
      entry,
      'search',
      'api',
      `--cert-dir=${certDir}`,
      '--host=127.0.0.1',
      `--port=${port}`,
      ...(options.args ?? []),
    ],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: {
        ...process.env,
        KUBECONFIG: options.kubeconfigPath,
        TENANTKIT_SEARCH_DATABASE_URL: options.databaseUrl,
        LOG_LEVEL: 'warn',
        NODE_OPTIONS: options.nodeOptions ?? '',
        ...options.env,
      },
    },
  );
  const url = `https://127.0.0.1:${port}`;
  for (let ready = false; !ready; ) {
    if (api.exitCode !== null) throw new Error(`search api exited with code ${api.exitCode}`);
    ready = await new Promise<boolean>((resolve) => {
      const req = httpsRequest(`${url}/readyz`, { ca: ca.certPem }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('error', () => resolve(false));
      req.end();
    });
    if (!ready) await new Promise((r) => setTimeout(r, 200));
  }
  const agent = new Agent({ keepAlive: true, ca: ca.certPem, maxSockets: options.maxSockets ?? 4 });
  return {
    url,
    caPem: ca.certPem,
    pid: api.pid!,
    rss: async (field) => statusMib(await readFile(`/proc/${api.pid}/status`, 'utf8'), field),
    rssParts: async () => {
      const status = await readFile(`/proc/${api.pid}/status`, 'utf8');
      return {
        anon: statusMib(status, 'RssAnon'),
        file: statusMib(status, 'RssFile'),
        shmem: statusMib(status, 'RssShmem'),
      };
    },
    memory: async (token) =>
      processMemory(
        await httpsText(`${url}/metrics`, { agent, headers: { authorization: `Bearer ${token}` } }),
      ),
    post: async (token, query, variables) =>
      (await postGraphQL(url, ca.certPem, token, query, variables, {}, { agent })).body as GraphQLAnswer,
    stop: async () => {
      agent.destroy();
      if (api.exitCode !== null) return;
      api.kill('SIGTERM');
      await new Promise((r) => api.once('exit', r));
    },
  };
}

/** `tenantkit search collector --hub` as its own process, as in the chart's collector Pod. */
export interface HubCollectorProcess {
  pid: number;
  /** Resident memory in MiB: now (VmRSS) or the highest so far (VmHWM). */
  rss(field: 'VmRSS' | 'VmHWM'): Promise<number>;
  /** Resolves once its /readyz answers 200: the first list of every type is in the index. */
  ready(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the hub's collector from the dist/ that {@link startSearchApiProcess} compiled (or from src/),
 * writing straight into the index database as the chart's collector Deployment does.
 */
export async function startHubCollectorProcess(options: {
  kubeconfigPath: string;
  databaseUrl: string;
  nodeOptions?: string;
  from: 'src' | 'already-built';
}): Promise<HubCollectorProcess> {
  const port = await freePort();
  const entry =
    options.from === 'src'
      ? join(repoRoot, 'src', 'cli', 'main.ts')
      : join(repoRoot, 'dist', 'src', 'cli', 'main.js');
  const child = spawn(
    process.execPath,
    [
      entry,
      'search',
      'collector',
      '--hub',
      `--database-url=${options.databaseUrl}`,
      `--metrics-port=${port}`,
    ],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: {
        ...process.env,
        KUBECONFIG: options.kubeconfigPath,
        LOG_LEVEL: 'warn',
        NODE_OPTIONS: options.nodeOptions ?? '',
      },
    },
  );
  const readyz = () =>
    new Promise<boolean>((resolve) => {
      const req = httpRequest(`http://127.0.0.1:${port}/readyz`, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('error', () => resolve(false));
      req.end();
    });
  return {
    pid: child.pid!,
    rss: async (field) => statusMib(await readFile(`/proc/${child.pid}/status`, 'utf8'), field),
    ready: async () => {
      while (!(await readyz())) {
        if (child.exitCode !== null) throw new Error(`the hub collector exited with code ${child.exitCode}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

/** The GraphQL of each kind of query in the benchmarks' mix. */
export const graphqlOf = {
  items: 'query ($i: [SearchInput]) { search(input: $i) { items } }',
  count: 'query ($i: [SearchInput]) { search(input: $i) { count } }',
  complete: '{ searchComplete(property: "name") }',
  relcount: 'query ($i: [SearchInput]) { search(input: $i) { related { kind count } } }',
  relitems: 'query ($i: [SearchInput]) { search(input: $i) { related { kind items } } }',
} as const;
export type QueryKind = keyof typeof graphqlOf;

/** The three users of the search benchmarks' bearer tokens: a cluster admin, a wide and a narrow user. */
export const benchTokenUsers = [
  { name: 'root', groups: ['system:masters'] },
  { name: 'wide', groups: [] },
  { name: 'narrow', groups: [] },
];

/** Milliseconds as the benchmarks print them. */
export const fmt = (ms: number): string => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));

/** The p-th percentile of sorted samples. */
export const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** One HTTPS request whose answer must be 200: its body as text, or an error naming the status and body. */
export function httpsText(target: string, options: RequestOptions): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const req = httpsRequest(target, options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(text)
          : reject(new Error(`${options.method ?? 'GET'} ${target}: ${res.statusCode} ${text}`)),
      );
    });
    req.on('error', reject);
    req.end();
  });
}
