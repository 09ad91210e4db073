#!/usr/bin/env node
// Entry point of the `tenantkit` command. tenantkit runs TypeScript directly on Node 24 (type
// stripping); on an older Node this re-runs itself with the project's own Node 24 (devDependency "node").
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const main = join(root, 'src/cli/main.ts');
const major = Number(process.versions.node.split('.')[0]);
if (major >= 24) {
  await import(main);
} else {
  const node24 = join(root, 'node_modules/node/bin/node');
  if (!existsSync(node24)) {
    console.error(`tenantkit needs Node.js 24 or newer (this is ${process.version}); run npm install first`);
    process.exit(1);
  }
  const result = spawnSync(node24, [main, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(result.status ?? 1);
}
