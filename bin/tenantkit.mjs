#!/usr/bin/env node
// Entry point of the `tenantkit` command (and of `kubectl-tenantkit`, the same command as a kubectl plugin).
// In a checkout it runs the TypeScript sources directly on Node 24 (type stripping), re-running itself
// with the project's own Node 24 (devDependency "node") on an older Node. An installed package has no
// sources (Node refuses to strip types under node_modules): it runs the JavaScript that `npm run build`
// compiled into dist/, and needs Node 24 itself. Keep this file plain JavaScript that old Nodes parse.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src/cli/main.ts');
const compiled = join(root, 'dist/src/cli/main.js');
const checkout = existsSync(source) && !root.split(sep).includes('node_modules');
const main = checkout ? source : compiled;
const major = Number(process.versions.node.split('.')[0]);

if (!existsSync(main)) {
  console.error(`tenantkit: ${main} is missing; this package was packed without running \`npm run build\``);
  process.exit(1);
}
if (major >= 24) {
  await import(pathToFileURL(main).href);
} else {
  const node24 = join(root, 'node_modules/node/bin/node');
  if (!checkout || !existsSync(node24)) {
    console.error(
      `tenantkit needs Node.js 24 or newer, and this is Node.js ${process.version} (${process.execPath}).\n` +
        (checkout
          ? 'Run `npm install` in the checkout first: it brings the project its own Node 24.'
          : 'Install Node.js 24 LTS (https://nodejs.org) and put it first on PATH.'),
    );
    process.exit(1);
  }
  const result = spawnSync(node24, [main, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(result.status ?? 1);
}
