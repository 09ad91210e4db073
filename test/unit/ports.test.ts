import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../src/ports.ts';

const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0]);

function listen(port: number, host: string): Promise<() => Promise<void>> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen({ port, host, exclusive: true }, () =>
      done(() => new Promise((closed) => server.close(() => closed()))),
    );
  });
}

describe('ports for the processes tenantkit starts', () => {
  it('hands out distinct ports below the ephemeral range and the NodePort range, free on every address', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 40; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(Math.min(30_000, ephemeralLow));
    }
    // Each can be listened on, on the wildcard address and so on any one address (a node's bridge too).
    const closers = await Promise.all(ports.slice(0, 10).map((port) => listen(port, '0.0.0.0')));
    await Promise.all(closers.map((close) => close()));
  });
});
