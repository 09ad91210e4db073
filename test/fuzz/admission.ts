// AdmissionReviews for every webhook path tenantkit serves, and the answer each must get whatever a hostile
// client does to them: an HTTP status of 200, 400 or 413 (never 5xx, never a reset), a well-formed review
// answering the same uid, no error text from JavaScript, and a denial code below 500.
import { Agent, request } from 'node:https';
import type { WebhookDefinition } from '../../src/webhook/registration.ts';
import { type Json, leakedError } from './json.ts';

/** A plausible object for each resource tenantkit's webhooks match. */
const objects: Record<string, { kind: string; object: Json }> = {
  pods: {
    kind: 'Pod',
    object: {
      spec: { containers: [{ name: 'app', image: 'busybox:1.37', resources: { requests: { cpu: '10m' } } }] },
    },
  },
  persistentvolumeclaims: {
    kind: 'PersistentVolumeClaim',
    object: { spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
  },
  ingresses: {
    kind: 'Ingress',
    object: {
      spec: {
        rules: [{ host: 'a.fuzz.example', http: { paths: [{ path: '/', pathType: 'Prefix' }] } }],
        tls: [{ hosts: ['a.fuzz.example'] }],
      },
    },
  },
  namespaces: { kind: 'Namespace', object: { metadata: { labels: { team: 'a' } } } },
  resourcequotas: { kind: 'ResourceQuota', object: { spec: { hard: { pods: '10' } } } },
  limitranges: {
    kind: 'LimitRange',
    object: { spec: { limits: [{ type: 'Container', max: { cpu: '1' } }] } },
  },
  projectrequests: { kind: 'ProjectRequest', object: { displayName: 'p' } },
  projects: { kind: 'Project', object: { spec: {} } },
  tenancyconfigs: { kind: 'TenancyConfig', object: { spec: {} } },
  scopetemplates: { kind: 'ScopeTemplate', object: { spec: { clusterRoles: [] } } },
  scopeinstances: {
    kind: 'ScopeInstance',
    object: { spec: { scopeTemplateName: 't', namespaces: ['fuzz'] } },
  },
  nonadminbackups: { kind: 'NonAdminBackup', object: { spec: { backupSpec: { ttl: '24h0m0s' } } } },
  nonadminschedules: {
    kind: 'NonAdminSchedule',
    object: { spec: { schedule: '0 3 * * *', backupSpec: {} } },
  },
  nonadminbackupstoragelocations: {
    kind: 'NonAdminBackupStorageLocation',
    object: {
      spec: {
        backupStorageLocationSpec: {
          provider: 'aws',
          objectStorage: { bucket: 'b' },
          credential: { name: 'c', key: 'cloud' },
          config: { region: 'r', s3Url: 'https://s3.example.com' },
        },
      },
    },
  },
  nonadminrestores: { kind: 'NonAdminRestore', object: { spec: { restoreSpec: { backupName: 'b' } } } },
  nonadmindownloadrequests: {
    kind: 'NonAdminDownloadRequest',
    object: { spec: { target: { kind: 'BackupLog', name: 'b' } } },
  },
};

/** A valid review for `def` (its first rule's first resource and operation), as tenant `fuzz-tenant`. */
export function baseReview(def: WebhookDefinition, uid: string): Json {
  const rule = def.rules[0]!;
  const resource = rule.resources[0]!;
  const known = objects[resource] ?? { kind: 'Unknown', object: {} };
  const group = rule.apiGroups[0] === '*' ? '' : rule.apiGroups[0]!;
  const version = rule.apiVersions[0] === '*' || !rule.apiVersions[0] ? 'v1' : rule.apiVersions[0]!;
  const operation = rule.operations.includes('CREATE') ? 'CREATE' : (rule.operations[0] as string);
  const namespaced = resource !== 'namespaces' && resource !== 'projects' && resource !== 'projectrequests';
  const base = known.object as { [key: string]: Json };
  const metadata = {
    name: 'fuzz',
    ...(namespaced ? { namespace: 'fuzz' } : {}),
    ...((base.metadata as { [key: string]: Json } | undefined) ?? {}),
  };
  const object: Json = {
    apiVersion: group ? `${group}/${version}` : version,
    kind: known.kind,
    ...base,
    metadata,
  };
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group, version, kind: known.kind },
      resource: { group, version, resource },
      name: 'fuzz',
      ...(namespaced ? { namespace: 'fuzz' } : {}),
      operation,
      userInfo: { username: 'fuzz-tenant', uid: 'u-1', groups: ['system:authenticated'], extra: {} },
      object: operation === 'DELETE' ? null : object,
      oldObject: operation === 'CREATE' ? null : object,
      dryRun: false,
    },
  };
}

export interface Answer {
  status: number;
  body: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 8, rejectUnauthorized: false });

/** Posts `body` to the webhook server; a reset or any network error rejects. */
export function postReview(port: number, path: string, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Everything wrong with the answer to a review sent with `uid` (a string uid, or anything else). */
export function answerProblems(answer: Answer, uid: unknown): string[] {
  const problems: string[] = [];
  if (![200, 400, 413].includes(answer.status)) problems.push(`HTTP ${answer.status}`);
  if (leakedError.test(answer.body))
    problems.push(`error text reached the client: ${answer.body.slice(0, 300)}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    problems.push(`body is not JSON: ${answer.body.slice(0, 200)}`);
    return problems;
  }
  if (answer.status !== 200) {
    const refusal = parsed as { code?: unknown; message?: unknown };
    if (typeof refusal.code !== 'string' || typeof refusal.message !== 'string') {
      problems.push(`a ${answer.status} without code and message: ${answer.body.slice(0, 200)}`);
    }
    return problems;
  }
  const response = (parsed as { response?: { uid?: unknown; allowed?: unknown; status?: { code?: number } } })
    .response;
  if (!response || typeof response.allowed !== 'boolean') problems.push('no response.allowed');
  else if (typeof uid !== 'string' || response.uid !== uid)
    problems.push(`uid ${String(response.uid)} answered`);
  else if (!response.allowed && (response.status?.code ?? 0) >= 500) {
    problems.push(`denied with code ${response.status?.code}: ${answer.body.slice(0, 300)}`);
  }
  return problems;
}

/** The verdict of a well-formed answer, for comparing two answers. */
export function verdictOf(answer: Answer): boolean | undefined {
  try {
    return (JSON.parse(answer.body) as { response?: { allowed?: boolean } }).response?.allowed;
  } catch {
    return undefined;
  }
}
