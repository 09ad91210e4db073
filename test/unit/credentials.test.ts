// Kubeconfig credentials read without @kubernetes/client-node (certificates and tokens, inline or as files
// relative to the kubeconfig, several files merged as kubectl merges them) and handed to it for the rest
// (an exec plugin, run for real here).
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import type { RequestOptions } from 'node:https';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { defaultCredentials, kubeconfigCredentials } from '../../src/kube/credentials.ts';

const kubeconfig = (user: Record<string, unknown>, cluster: Record<string, unknown> = {}, extra = {}) =>
  stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: 'https://10.0.0.1:6443', ...cluster } }],
    users: [{ name: 'u', user }],
    contexts: [
      { name: 'main', context: { cluster: 'c', user: 'u', namespace: 'team-a' } },
      { name: 'other', context: { cluster: 'c', user: 'u' } },
    ],
    'current-context': 'main',
    ...extra,
  });

async function applied(credentials: ReturnType<typeof kubeconfigCredentials>) {
  const options: RequestOptions = { headers: {} };
  await credentials.apply(options);
  return { agent: options.agent as Agent, headers: options.headers as Record<string, string> };
}

describe('kubeconfig credentials', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tk-credentials-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('reads inline certificates and the context namespace, with a keep-alive agent per identity', async () => {
    const credentials = kubeconfigCredentials(
      kubeconfig(
        {
          'client-certificate-data': Buffer.from('CERT').toString('base64'),
          'client-key-data': Buffer.from('KEY').toString('base64'),
        },
        { 'certificate-authority-data': Buffer.from('CA').toString('base64') },
      ),
    );
    expect(credentials.server.href).toBe('https://10.0.0.1:6443/');
    expect(credentials.userName).toBe('u');
    expect(credentials.namespace).toBe('team-a');
    const first = await applied(credentials);
    expect(first.agent).toBeInstanceOf(Agent);
    expect(String(first.agent.options.ca)).toBe('CA');
    expect(String(first.agent.options.cert)).toBe('CERT');
    expect(String(first.agent.options.key)).toBe('KEY');
    expect(first.agent.options.keepAlive).toBe(true);
    expect((await applied(credentials)).agent).toBe(first.agent);
    expect(first.headers.Authorization).toBeUndefined();
  });

  it('reads files relative to the kubeconfig and a token file again when it changes', async () => {
    await writeFile(join(dir, 'ca.crt'), 'FILE-CA');
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'first\n');
    const path = join(dir, 'config');
    await writeFile(path, kubeconfig({ tokenFile: 'token' }, { 'certificate-authority': 'ca.crt' }));
    const credentials = kubeconfigCredentials(readFileSync(path, 'utf8'), { path });
    const before = await applied(credentials);
    expect(String(before.agent.options.ca)).toBe('FILE-CA');
    expect(before.headers.Authorization).toBe('Bearer first');
    await writeFile(tokenFile, 'second\n');
    const later = new Date(Date.now() + 5000);
    await utimes(tokenFile, later, later);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await applied(credentials)).headers.Authorization).toBe('Bearer second');
  });

  it('uses another context when asked, and says which is missing', () => {
    const text = kubeconfig({ token: 't' });
    expect(kubeconfigCredentials(text, { context: 'other' }).namespace).toBeUndefined();
    expect(() => kubeconfigCredentials(text, { context: 'nope' })).toThrow(
      'context "nope" is not in the kubeconfig',
    );
  });

  it('merges $KUBECONFIG files as kubectl does: the first to name an entry wins', async () => {
    const a = join(dir, 'a.yaml');
    const b = join(dir, 'b.yaml');
    await writeFile(
      a,
      stringify({ users: [{ name: 'u', user: { token: 'from-a' } }], 'current-context': 'main' }),
    );
    await writeFile(b, kubeconfig({ token: 'from-b' }));
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = `${a}:${b}`;
    try {
      const credentials = defaultCredentials();
      expect(credentials.server.host).toBe('10.0.0.1:6443');
      expect((await applied(credentials)).headers.Authorization).toBe('Bearer from-a');
    } finally {
      process.env.KUBECONFIG = saved;
    }
  });

  it('hands an exec plugin to client-node, which runs it for the token', async () => {
    const plugin = join(dir, 'plugin.mjs');
    await writeFile(
      plugin,
      `console.log(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'from-exec' } }));`,
    );
    const credentials = kubeconfigCredentials(
      kubeconfig({
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: process.execPath,
          args: [plugin],
          interactiveMode: 'Never',
        },
      }),
    );
    expect(credentials.userName).toBe('u');
    expect((await applied(credentials)).headers.Authorization).toBe('Bearer from-exec');
  });
});
