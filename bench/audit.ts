// Who sends kube-apiserver what: an audit policy that records (at Metadata level, no bodies) every request
// of one namespace's ServiceAccounts, and a reader that counts them by user and verb over a time window.
// A watch is counted when it starts (ResponseStarted), every other request when it ends.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface Audit {
  /** kube-apiserver flags that turn the log on. */
  flags: string[];
  /** Requests received in [from, to) (ms since the epoch), counted by `user verb resource`. */
  count(from: number, to: number): Promise<Map<string, number>>;
}

interface AuditEvent {
  stage: string;
  verb: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string };
  requestReceivedTimestamp: string;
}

export const writeVerbs = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** An audit log in `dir` of the requests of the ServiceAccounts of `namespace`. */
export async function auditServiceAccounts(dir: string, namespace: string): Promise<Audit> {
  const policy = join(dir, 'audit-policy.yaml');
  const log = join(dir, 'audit.log');
  await writeFile(
    policy,
    [
      'apiVersion: audit.k8s.io/v1',
      'kind: Policy',
      'omitStages: [RequestReceived]',
      'rules:',
      `  - level: Metadata`,
      `    userGroups: ["system:serviceaccounts:${namespace}"]`,
      '  - level: None',
      '',
    ].join('\n'),
  );
  return {
    flags: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${log}`,
      '--audit-log-format=json',
      '--audit-log-maxsize=2000',
      '--audit-log-maxbackup=1',
    ],
    async count(from, to) {
      const counts = new Map<string, number>();
      const text = await readFile(log, 'utf8').catch(() => '');
      for (const line of text.split('\n')) {
        if (!line) continue;
        const event = JSON.parse(line) as AuditEvent;
        const at = Date.parse(event.requestReceivedTimestamp);
        if (at < from || at >= to) continue;
        const counted = event.verb === 'watch' ? 'ResponseStarted' : 'ResponseComplete';
        if (event.stage !== counted) continue;
        const user = (event.user?.username ?? '').replace(`system:serviceaccount:${namespace}:`, '');
        const ref = event.objectRef;
        const resource = `${ref?.resource ?? '-'}${ref?.subresource ? `/${ref.subresource}` : ''}`;
        const key = `${user} ${event.verb} ${resource}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      return counts;
    },
  };
}
