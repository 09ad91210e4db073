// The built page, read once at start and served from memory: gzip-compressed when the browser takes it,
// an ETag per file, and `index.html` for every other page path (the page routes itself). Every answer of
// the console carries the security headers below.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';

/**
 * Scripts, styles, fonts and images only from the console itself, no inline script or style element, API
 * calls only to itself, never framed: an injected string has nothing to run and nowhere to send a token.
 */
export const ContentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const SecurityHeaders: Record<string, string> = {
  'content-security-policy': ContentSecurityPolicy,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.json': 'application/json',
};

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
  etag: string;
}

export class Assets {
  private readonly files = new Map<string, Asset>();

  static async load(dir: string): Promise<Assets> {
    const assets = new Assets();
    for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const path = join(entry.parentPath, entry.name);
      const type = types[extname(entry.name)];
      if (!type) continue;
      const body = await readFile(path);
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
      assets.files.set(`/${relative(dir, path)}`, { type, body, gzip: gzipSync(body, { level: 9 }), etag });
    }
    if (!assets.files.has('/index.html'))
      throw new Error(`${dir} holds no index.html: build the console first`);
    return assets;
  }

  /** Bytes the browser downloads for a first visit, compressed (index, script and style). */
  get firstVisitBytes(): number {
    return ['/index.html', '/app.js', '/app.css']
      .map((p) => this.files.get(p)?.gzip.length ?? 0)
      .reduce((a, b) => a + b, 0);
  }

  serve(req: IncomingMessage, res: ServerResponse, path: string): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    // A page path (no file extension) is the page itself; a missing file is a 404.
    const asset = this.files.get(path) ?? (extname(path) === '' ? this.files.get('/index.html') : undefined);
    if (!asset) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (req.headers['if-none-match'] === asset.etag) {
      res.writeHead(304, { etag: asset.etag }).end();
      return;
    }
    const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    const body = gzip ? asset.gzip : asset.body;
    res.writeHead(200, {
      'content-type': asset.type,
      'content-length': String(body.length),
      etag: asset.etag,
      'cache-control': 'no-cache',
      vary: 'accept-encoding',
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  }
}
