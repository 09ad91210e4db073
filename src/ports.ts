// Loopback ports for processes this one starts (the local control plane, an embedded database).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * The ports handed out are below the kernel's ephemeral range: a port the kernel assigned and this
 * process released can be taken a moment later as the source port of any outgoing connection, and
 * the process meant to listen on it then fails with EADDRINUSE (a CI run lost a whole file to one).
 * Ports below the range are only ever taken by a process that binds them on purpose. The NodePort
 * range (30000-32767) is left out too. Each test worker draws from its own slice of the span, so
 * that two workers probing at once do not pick the same port.
 */
const low = 10_000;
const slices = 8;

function ephemeralLow(): number {
  try {
    const first = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    return Number.isInteger(first) && first > 0 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

const high = Math.min(30_000, ephemeralLow());
const handedOut = new Set<number>();

/** A TCP port that nothing listens on right now, on any address, outside the ephemeral range. */
export async function freePort(): Promise<number> {
  const span = Math.floor((high - low) / slices);
  if (span >= 100) {
    const slice = Number(process.env.VITEST_POOL_ID ?? 0) % slices;
    const start = low + slice * span;
    for (let attempt = 0; attempt < 64; attempt++) {
      const port = start + Math.floor(Math.random() * span);
      if (handedOut.has(port) || !(await isFree(port, '0.0.0.0'))) continue;
      handedOut.add(port);
      return port;
    }
  }
  return kernelPort();
}

/** What the kernel assigns: the fallback where the range below the ephemeral ports is too small. */
function kernelPort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.unref();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? done(address.port) : fail(new Error('no port')),
      );
    });
  });
}

function isFree(port: number, host: string): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.unref();
    server.once('error', () => done(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => done(true)));
  });
}

export async function portIsFree(port: number): Promise<boolean> {
  return isFree(port, '127.0.0.1');
}
