// The chart renders the same objects as before a change that should not touch it (issue 40's
// restructuring moved every capability's files, and the chart's RBAC and webhooks are generated from
// them): `helm template` (the templates; the CRDs are held to src/crds by the generate drift test) with the
// default values and with the optional parts on, compared object by object with the renders kept in
// test/fixtures/chart-render/ (made from the chart before the restructuring). The random password the chart
// makes for the bundled database, and what is derived from it, is masked. After a deliberate chart change,
// rewrite the fixtures with UPDATE_CHART_FIXTURES=1 and review their diff.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { ensureHelm } from '../../devenv/helm/build.ts';
import { chartDir } from '../harness/chart.ts';

const fixtures = join(import.meta.dirname, '..', 'fixtures', 'chart-render');

const valueSets: Record<string, string[]> = {
  default: [],
  'all-parts': [
    '--set',
    'search.projects.enabled=true',
    '--set',
    'networkPolicies.webhookSources={10.244.0.1/32}',
  ],
};

type Obj = { kind?: string; metadata?: { name?: string; annotations?: Record<string, string> } } & Record<
  string,
  unknown
>;

/** The objects `helm template` renders, in order, with the database password's traces masked. */
async function render(values: string[]): Promise<Obj[]> {
  const helm = await ensureHelm();
  const { stdout } = await promisify(execFile)(
    helm,
    ['template', 'tk', chartDir, '--namespace', 'tenantkit-system', ...values],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null)
    .map(masked);
}

function masked(o: Obj): Obj {
  const text = JSON.stringify(o)
    .replace(/"(password|url)":"[A-Za-z0-9+/=]{20,}"/g, '"$1":"(random)"')
    .replace(/"checksum\/password":"[0-9a-f]+"/g, '"checksum/password":"(random)"');
  return JSON.parse(text) as Obj;
}

describe('the Helm chart', () => {
  for (const [name, values] of Object.entries(valueSets)) {
    it(`renders the same objects as the fixture (${name} values)`, async () => {
      const objects = await render(values);
      const file = join(fixtures, `${name}.yaml`);
      if (process.env.UPDATE_CHART_FIXTURES === '1') {
        await writeFile(file, objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n'));
      }
      const expected = parseAllDocuments(await readFile(file, 'utf8')).map((d) => d.toJS() as Obj);
      const names = (list: Obj[]) => list.map((o) => `${o.kind}/${o.metadata?.name}`);
      expect(names(objects)).toEqual(names(expected));
      expect(objects).toEqual(expected);
    }, 600_000);
  }
});
