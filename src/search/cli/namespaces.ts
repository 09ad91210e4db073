// `tenantkit namespaces` (also `kubectl tenantkit namespaces`): the caller's namespaces, from the Projects
// API (project.openshift.io/v1) that search serves through kube-apiserver, as the current kubeconfig user.
import { parseArgs } from 'node:util';
import { ApiError, KubeClient } from '../../kube/client.ts';
import type { KubeObject } from '../../kube/resources.ts';
import { shortAge } from '../text/table.ts';

export const namespacesUsage = `Usage:
  tenantkit namespaces [-o table|name|json]
      list the namespaces you may use (the Projects API, project.openshift.io/v1)
`;

interface Project extends KubeObject {
  status?: { phase?: string };
}

export async function namespacesCommand(args: string[]): Promise<void> {
  if (['help', '--help', '-h'].includes(args[0] ?? '')) {
    process.stdout.write(namespacesUsage);
    return;
  }
  const { values } = parseArgs({
    args,
    options: { output: { type: 'string', short: 'o', default: 'table' } },
  });
  const output = values.output!;
  if (!['table', 'name', 'json'].includes(output))
    throw new Error(`-o ${output} is not an output format; use table, name or json`);
  const client = KubeClient.fromDefault();
  let list: { items?: Project[] };
  try {
    list = await client.request('GET', '/apis/project.openshift.io/v1/projects');
  } catch (err) {
    if (err instanceof ApiError && err.status === 404)
      throw new Error(
        'this cluster does not serve the Projects API (project.openshift.io/v1); a cluster admin turns it on with the chart value search.projects.enabled=true',
      );
    throw err;
  }
  const items = list.items ?? [];
  if (output === 'json') {
    process.stdout.write(`${JSON.stringify({ kind: 'List', apiVersion: 'v1', items }, null, 2)}\n`);
    return;
  }
  if (output === 'name') {
    process.stdout.write(items.map((p) => `namespace/${p.metadata.name}\n`).join(''));
    return;
  }
  if (items.length === 0) {
    process.stderr.write('No namespaces you may use.\n');
    return;
  }
  const rows = [
    ['NAME', 'STATUS', 'AGE'],
    ...items.map((p) => [
      p.metadata.name ?? '',
      p.status?.phase ?? '',
      shortAge(p.metadata.creationTimestamp),
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  process.stdout.write(
    rows
      .map(
        (r) =>
          `${r
            .map((c, i) => c.padEnd(widths[i]!))
            .join('   ')
            .trimEnd()}\n`,
      )
      .join(''),
  );
}
