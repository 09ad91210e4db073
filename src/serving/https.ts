// HTTPS serving shared by tenantkit's servers (admission webhooks, search): a serving certificate that can
// be swapped live (files re-read when they change on disk, e.g. a rotated Secret), bounded request
// bodies, and a stop that finishes requests in flight without waiting on idle keep-alive connections.
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { metrics } from '../kube/metrics.ts';
import type { KeyPair } from './certs.ts';

export type ServingCertificate = KeyPair | { certFile: string; keyFile: string };

export interface HttpsListenerOptions {
  host?: string;
  port?: number;
  logger: Logger;
  certificate: ServingCertificate;
  /**
   * PEM bundle of CAs whose client certificates identify callers. Clients are then asked for a
   * certificate (none is required); the handler reads `socket.authorized` and the peer certificate.
   */
  clientCaPem?: string;
  /**
   * On stop, keep serving this long first, answering with `Connection: close`, so that clients holding
   * keep-alive connections (kube-apiserver calling webhooks) move to other replicas between requests
   * rather than have a connection closed under a request they are just sending (default 0).
   */
  drainMs?: number;
  handler(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** The metrics label of a request path (default: the path); a server with open-ended paths folds them. */
  route?(path: string): string;
}

export class HttpsListener {
  readonly server: Server;
  private readonly options: HttpsListenerOptions;
  private draining = false;

  constructor(options: HttpsListenerOptions) {
    this.options = options;
    const pair = this.read();
    const clientAuth = options.clientCaPem
      ? { requestCert: true, rejectUnauthorized: false, ca: options.clientCaPem }
      : {};
    this.server = createServer({ cert: pair.certPem, key: pair.keyPem, ...clientAuth }, (req, res) => {
      if (this.draining) res.setHeader('Connection', 'close');
      const started = performance.now();
      res.once('finish', () => {
        const path = (req.url ?? '').split('?')[0] ?? '';
        // Paths are the server's own routes; anything else is one label, so callers cannot add series.
        const route = options.route ? options.route(path) : path;
        metrics.httpsRequestDuration.observe(
          { path: res.statusCode === 404 ? 'other' : route },
          (performance.now() - started) / 1000,
        );
      });
      options.handler(req, res).catch((err: unknown) => {
        options.logger.error({ path: req.url, err: String(err) }, 'request failed');
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
    this.server.keepAliveTimeout = 65_000;
    this.server.on('secureConnection', () => metrics.httpsConnections.inc());
  }

  get port(): number {
    return (this.server.address() as AddressInfo | null)?.port ?? 0;
  }

  private read(): KeyPair {
    const c = this.options.certificate;
    if ('certPem' in c) return c;
    return { certPem: readFileSync(c.certFile, 'utf8'), keyPem: readFileSync(c.keyFile, 'utf8') };
  }

  /** Replaces the serving certificate; new TLS handshakes use it, open connections keep theirs. */
  setCertificate(pair: KeyPair): void {
    this.server.setSecureContext({
      cert: pair.certPem,
      key: pair.keyPem,
      ...(this.options.clientCaPem ? { ca: this.options.clientCaPem } : {}),
    });
  }

  async start(): Promise<number> {
    const c = this.options.certificate;
    if (!('certPem' in c)) {
      const reload = () => {
        try {
          this.setCertificate(this.read());
          this.options.logger.info('serving certificate reloaded');
        } catch (err) {
          this.options.logger.warn(
            { err: String(err) },
            'serving certificate reload failed; keeping the old one',
          );
        }
      };
      watchFile(c.certFile, { interval: 2000 }, reload);
      watchFile(c.keyFile, { interval: 2000 }, reload);
    }
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port ?? 0, this.options.host ?? '127.0.0.1', () => resolve());
    });
    return this.port;
  }

  async stop(): Promise<void> {
    const c = this.options.certificate;
    if (!('certPem' in c)) {
      unwatchFile(c.certFile);
      unwatchFile(c.keyFile);
    }
    if (!this.server.listening) return;
    if (this.options.drainMs) {
      this.draining = true;
      await new Promise((resolve) => setTimeout(resolve, this.options.drainMs));
    }
    // Finish requests in flight, but do not wait for clients' idle keep-alive connections: they would
    // hold the close open for the whole keep-alive timeout.
    const force = setTimeout(() => this.server.closeAllConnections(), 2000);
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
    });
    clearTimeout(force);
  }
}

/**
 * The request body as text, or undefined when it is larger than `max` bytes. The rest of an oversized body
 * is still read and dropped, so that the client, still sending, gets the caller's 413 rather than a reset;
 * a client that keeps sending past 8 times the limit is cut off.
 */
export function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (tooLarge) {
        if (size > 8 * max) req.destroy();
        return;
      }
      if (size > max) {
        tooLarge = true;
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!tooLarge) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

/** Deepest JSON nesting a request body may have (a Pod is about 12 levels deep; CRDs rarely pass 30). */
export const MaxJsonDepth = 128;

/**
 * Whether JSON text nests arrays and objects deeper than `max`, found without parsing it (so a deep body
 * never reaches a recursive reader). Brackets inside strings do not count.
 */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
