// A TCP relay in front of a real server (TLS passes through it untouched): what its clients meet when
// their connections break (a restarted API server, a killed database Pod behind its Service) without the
// server itself going away. One mechanism for every test that breaks connections.
import { readFileSync } from 'node:fs';
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { KubeClient } from '../../src/kube/client.ts';

export interface Relay {
  /** `url` (http, https or postgres) with the relay's host and port in place of the server's. */
  url: string;
  /** Destroys every connection through the relay; new ones still pass. */
  dropConnections(): void;
  /** Destroys every connection and stops listening. */
  close(): Promise<void>;
}

/**
 * A relay to the server of `url`, listening on `port` (default: any free one) of the same host, so that
 * a certificate for that host still matches, or of `host` when given.
 */
export function relayTo(url: string, options: { port?: number; host?: string } = {}): Promise<Relay> {
  const target = new URL(url);
  const host = options.host ?? target.hostname;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = tcpConnect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const dropConnections = () => {
    for (const s of [...sockets]) s.destroy();
  };
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      const relayed = new URL(url);
      relayed.hostname = host;
      relayed.port = String((server.address() as { port: number }).port);
      resolve({
        url: relayed.toString().replace(/\/$/, url.endsWith('/') ? '/' : ''),
        dropConnections,
        close: () =>
          new Promise<void>((done) => {
            dropConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

/** An admin client of the cluster whose kubeconfig is at `kubeconfigPath`, connecting through a relay. */
export async function apiServerRelay(kubeconfigPath: string): Promise<{ client: KubeClient; relay: Relay }> {
  const kubeconfig = readFileSync(kubeconfigPath, 'utf8');
  const server = /server: (\S+)/.exec(kubeconfig)![1]!;
  const relay = await relayTo(server);
  return { client: KubeClient.fromKubeconfig({ yaml: kubeconfig.replace(server, relay.url) }), relay };
}

/**
 * Breaks every connection through `relay` `times` times in a row; after each break, `step(i)` does
 * something and waits until it is seen. Returns how long each took from its break, in ms.
 */
export async function afterEachBreak(
  relay: Relay,
  times: number,
  step: (i: number) => Promise<void>,
): Promise<number[]> {
  const took: number[] = [];
  for (let i = 0; i < times; i++) {
    relay.dropConnections();
    const at = performance.now();
    await step(i);
    took.push(performance.now() - at);
  }
  return took;
}
