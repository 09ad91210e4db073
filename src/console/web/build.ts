// Bundles the console page (app/) with esbuild (its WebAssembly build: no platform package to install): one script, one stylesheet and the fonts and images the
// stylesheet names, plus index.html. `npm run build` writes it to dist/console-page; a checkout builds it on
// first use into ~/.cache/tenantkit/console-<hash of the sources>.
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheDir } from '../../cache-dir.ts';

const here = dirname(fileURLToPath(import.meta.url));

/** Writes the built page into `outDir` (replaced). */
export async function buildConsole(outDir: string): Promise<void> {
  const { build } = await import('esbuild-wasm');
  const partial = `${outDir}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  await build({
    entryPoints: { app: join(here, 'app', 'shell', 'main.tsx') },
    outdir: partial,
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    legalComments: 'none',
    define: { 'process.env.NODE_ENV': '"production"' },
    loader: { '.woff2': 'file', '.woff': 'file', '.svg': 'file', '.png': 'file', '.jpg': 'file' },
    assetNames: 'assets/[name]-[hash]',
    logLevel: 'warning',
  });
  await copyFile(join(here, 'index.html'), join(partial, 'index.html'));
  await rm(outDir, { recursive: true, force: true });
  await rename(partial, outDir);
}

async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  const files = (await readdir(here, { recursive: true })).filter((f) => /\.(tsx?|html)$/.test(f)).sort();
  for (const f of files) hash.update(f).update(await readFile(join(here, f)));
  return hash.digest('hex').slice(0, 16);
}

/**
 * The built page's folder: built at pack time in a package (dist/console-page, beside dist/src/ where this
 * file is compiled), else once per source hash.
 */
export async function consoleAssets(): Promise<string> {
  if (!import.meta.url.endsWith('.ts')) return join(here, '..', '..', '..', 'console-page');
  const dir = join(cacheDir(), `console-${await sourceHash()}`);
  try {
    await readFile(join(dir, 'index.html'));
  } catch {
    await buildConsole(dir);
  }
  return dir;
}

// `node src/console/web/build.ts DIR` (npm run build): the page for the package.
if (import.meta.main) await buildConsole(process.argv[2] ?? 'dist/console-page');
