// Downloads one of Velero's files for a tenant: a NonAdminDownloadRequest for it, the presigned URL from
// its status fetched with plain HTTP (no Kubernetes credentials go to the object store), gunzipped; the
// request is deleted afterwards whatever happened (its Velero DownloadRequest goes with it).
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { type NonAdminDownloadRequest, NonAdminDownloadRequestCrd } from '../../crds/backup.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { KubeObject } from '../../kube/resources.ts';

const nadrType = NonAdminDownloadRequestCrd.type;

/** Velero's files are gzip'd; a store that sets Content-Encoding: gzip has them decoded by fetch already. */
export function maybeGunzip(body: Buffer): Buffer {
  return body[0] === 0x1f && body[1] === 0x8b ? gunzipSync(body) : body;
}

export async function fetchPresigned(url: string, what: string): Promise<string> {
  let response: Response;
  try {
    response = await fetch(url);
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new Error(`cannot fetch the ${what} from object storage at ${new URL(url).origin} (${cause})`);
  }
  if (response.status === 404) {
    // Velero uploads an operation's files as it ends; an upload it could not make (a full or read-only
    // store) is only in its server log, and for a restore it counts as the restore's one error.
    throw new Error(
      `the ${what} does not exist in object storage: Velero did not write it (when its upload fails, a full or read-only store say, only Velero's server log says why: ask an admin to check kubectl -n <velero namespace> logs deploy/velero)`,
    );
  }
  if (!response.ok) {
    throw new Error(`object storage refused the ${what}: HTTP ${response.status} ${response.statusText}`);
  }
  return maybeGunzip(Buffer.from(await response.arrayBuffer())).toString('utf8');
}

/**
 * The `kind` file (BackupLog, BackupResourceList, RestoreLog, ...) of NonAdminBackup/NonAdminRestore
 * `target` in `namespace`, as text.
 */
export async function downloadFile(
  client: KubeClient,
  namespace: string,
  kind: string,
  target: string,
  timeoutMs = 60_000,
): Promise<string> {
  const what = `${kind} of ${target}`;
  const created = await client.create<NonAdminDownloadRequest>(nadrType, {
    metadata: { generateName: `${target.slice(0, 40)}-${kind.toLowerCase()}-`, namespace },
    spec: { target: { kind, name: target } },
  } as KubeObject as NonAdminDownloadRequest);
  const name = created.metadata.name!;
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const o = await client.get<NonAdminDownloadRequest>(nadrType, name, namespace);
      if (!o) throw new Error(`NonAdminDownloadRequest ${name} was deleted before Velero answered`);
      const url = o.status?.velero?.status?.downloadURL;
      if (url) return await fetchPresigned(url, what);
      const accepted = o.status?.conditions?.find((c) => c.type === 'Accepted');
      const processed = o.status?.conditions?.find((c) => c.type === 'Processed');
      if (o.status?.phase === 'BackingOff')
        throw new Error(`cannot download the ${what}: ${accepted?.message}`);
      if (processed?.reason === 'VeleroNotProcessing')
        throw new Error(`cannot download the ${what}: ${processed.message}`);
      if (Date.now() > deadline) {
        const state =
          processed?.message ?? accepted?.message ?? 'no status yet: is the tenantkit controller running?';
        throw new Error(
          `timed out after ${Math.round(timeoutMs / 1000)} s waiting for the ${what} (${state})`,
        );
      }
      await sleep(300);
    }
  } finally {
    await client.delete(nadrType, name, namespace).catch(() => {});
  }
}
