// A batch is checked before it touches the database. Remote collectors are only as trusted as their
// cluster: every uid, reference and property must stay inside the cluster the batch is for.
import type { IndexBatch } from '../model.ts';

export class InvalidBatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidBatchError';
  }
}

const clusterName = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** Whether `name` may name a cluster in the index (a lowercase DNS name). */
export const validClusterName = (name: string): boolean => clusterName.test(name);
export const maxBatchObjects = 5_000;
const streamName = /^\d{1,15}\.[0-9a-f]{8,64}$/;

const isString = (v: unknown): v is string => typeof v === 'string';
const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);

function fail(message: string): never {
  throw new InvalidBatchError(message);
}

export function validateBatch(batch: IndexBatch, hubCluster: string): void {
  const { cluster } = batch;
  if (!isString(cluster) || !clusterName.test(cluster)) {
    fail(`cluster ${JSON.stringify(cluster)} is not a valid cluster name (lowercase DNS name)`);
  }
  if (batch.sequence !== undefined) {
    const { stream, seq } = batch.sequence ?? {};
    if (!isString(stream) || !streamName.test(stream)) {
      fail('sequence.stream must be "<start time in ms>.<hex>", as the collector makes it');
    }
    if (!Number.isSafeInteger(seq) || seq < 1) fail('sequence.seq must be a positive integer');
  }
  const inCluster = (uid: unknown) =>
    isString(uid) && (uid.startsWith(`${cluster}/`) || uid === `cluster__${cluster}`);
  const upserts = batch.upserts ?? [];
  if (!Array.isArray(upserts) || upserts.length > maxBatchObjects) {
    fail(`upserts must be a list of at most ${maxBatchObjects} objects`);
  }
  for (const [i, r] of upserts.entries()) {
    const at = `upserts[${i}]`;
    if (!inCluster(r?.uid)) fail(`${at}.uid must start with "${cluster}/" (the batch's cluster)`);
    const d = r.data as Record<string, unknown> | undefined;
    if (!d || typeof d !== 'object' || Array.isArray(d)) fail(`${at}.data must be an object`);
    for (const key of ['kind', 'kind_plural', 'apiversion', 'name'] as const) {
      if (!isString(d[key]) || d[key] === '') fail(`${at}.data.${key} must be a non-empty string`);
    }
    for (const key of ['namespace', 'apigroup'] as const) {
      if (d[key] !== undefined && !isString(d[key])) fail(`${at}.data.${key} must be a string when present`);
    }
    if (d._hubClusterResource !== undefined && cluster !== hubCluster) {
      fail(`${at}.data._hubClusterResource is reserved for the hub cluster's own collector`);
    }
    if (!Array.isArray(r.edges)) fail(`${at}.edges must be a list`);
    for (const [j, e] of r.edges.entries()) {
      const where = `${at}.edges[${j}]`;
      if (!e || !isString(e.type) || e.type === '') fail(`${where}.type must be a non-empty string`);
      if ('uid' in e) {
        if (!inCluster(e.uid))
          fail(`${where}.uid must start with "${cluster}/": edges stay inside a cluster`);
      } else if (!isString(e.kind) || (e.namespace !== undefined && !isString(e.namespace))) {
        fail(`${where} needs a kind (and a string namespace when present)`);
      } else if ('selector' in e) {
        const s = e.selector as unknown;
        if (!s || typeof s !== 'object' || !Object.values(s).every(isString)) {
          fail(`${where}.selector must map label names to strings`);
        }
      } else if (!isString(e.name)) {
        fail(`${where} needs a uid, a name or a selector`);
      }
    }
  }
  if (batch.deletes !== undefined && !(isStringArray(batch.deletes) && batch.deletes.every(inCluster))) {
    fail(`deletes must be uids that start with "${cluster}/"`);
  }
  for (const [name, list] of [
    ['resyncs', batch.resyncs],
    ['dropTypes', batch.dropTypes],
    ['keepTypes', batch.keepTypes],
  ] as const) {
    if (list === undefined) continue;
    if (!Array.isArray(list)) fail(`${name} must be a list`);
    for (const [i, t] of list.entries()) {
      if (!isString(t?.apigroup) || !isString(t.kind_plural) || t.kind_plural === '') {
        fail(`${name}[${i}] needs apigroup (string, '' for core) and kind_plural`);
      }
      if (name === 'resyncs') {
        const uids = (t as { uids?: unknown }).uids;
        if (!isStringArray(uids)) fail(`resyncs[${i}].uids must be a list of uids`);
      }
    }
  }
}
