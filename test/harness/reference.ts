// Upstream API definitions (Velero CRDs, OADP CRDs, ACM search schema) live beside the project in
// shared/reference/, not in its tree. Tests install Velero's CRDs from there.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/kube/resources.ts';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export function referenceDir(): string {
  const candidates = [
    process.env.TENANTKIT_REFERENCE_DIR,
    join(repo, '../shared/reference'),
    '/work/shared/reference',
  ].filter((c): c is string => Boolean(c));
  const found = candidates.find((c) => existsSync(join(c, 'velero-crds')));
  if (!found) {
    throw new Error(
      `cannot find the upstream reference schemas (looked in ${candidates.join(', ')}); set TENANTKIT_REFERENCE_DIR to the folder that holds velero-crds/`,
    );
  }
  return found;
}

export async function loadYamlObjects(dir: string): Promise<KubeObject[]> {
  const objects: KubeObject[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort()) {
    for (const doc of parseAllDocuments(await readFile(join(dir, file), 'utf8'))) {
      const object = doc.toJS() as KubeObject | null;
      if (object?.kind) objects.push(object);
    }
  }
  return objects;
}

export const veleroCrds = () => loadYamlObjects(join(referenceDir(), 'velero-crds'));
