// Whether a tenant location's endpoint answers at all, asked before Velero is given the location and again
// on every sync. Velero's AWS plugin has no response timeout (velero-plugin-for-aws v1.14: an HTTP client
// with dial and TLS timeouts only): a store that accepts connections and never answers would hold Velero's
// location validation, and any backup to it, forever. tenantkit asks once with a deadline instead, sends no
// credentials, and treats any HTTP answer (403, 404, a TLS error) as "the store answers"; whether the keys
// and bucket work is Velero's validation, reported as the location's phase.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { isLinkLocal } from '../../policy/endpoint.ts';
import type { JsonObject } from '../../policy/enforce.ts';

/** How long a tenant's endpoint has to answer tenantkit's probe. */
export const EndpointProbeTimeoutMs = 5_000;

export type ProbeResult = { ok: true } | { ok: false; message: string };

/** Resolves like the system does, but refuses link-local answers (a name pointed at cloud metadata). */
const refuseLinkLocal: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, '', 0);
    const bad = addresses.find((a) => isLinkLocal(a.address));
    if (bad) {
      const refused = Object.assign(new Error(`${hostname} resolves to link-local ${bad.address}`), {
        code: 'ELINKLOCAL',
      });
      return callback(refused, '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    const first = addresses[0]!;
    return callback(null, first.address, first.family);
  });
};

/**
 * Asks `config.s3Url` (with the bucket as a path) for its headers within `timeoutMs`. No s3Url (AWS's own
 * S3) is not probed.
 */
export function probeEndpoint(
  config: JsonObject,
  bucket: string,
  timeoutMs = EndpointProbeTimeoutMs,
): Promise<ProbeResult> {
  const raw = config.s3Url;
  if (typeof raw !== 'string' || raw === '') return Promise.resolve({ ok: true });
  let url: URL;
  try {
    url = new URL(`${raw.replace(/\/+$/, '')}/${encodeURIComponent(bucket)}`);
  } catch {
    return Promise.resolve({ ok: false, message: `config.s3Url "${raw}" is not a URL` });
  }
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = request(url, {
      method: 'HEAD',
      agent: false,
      // Any answer will do: the certificate is Velero's to check, with the location's CA settings.
      rejectUnauthorized: false,
      lookup: refuseLinkLocal,
      signal: AbortSignal.timeout(timeoutMs),
    });
    req.on('response', (res) => {
      res.resume();
      req.destroy();
      resolve({ ok: true });
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      const seconds = `${timeoutMs / 1000}s`;
      if (err.name === 'TimeoutError' || err.name === 'AbortError') {
        resolve({
          ok: false,
          message: `${raw} did not answer within ${seconds} (tenantkit asked for ${url.pathname} without credentials); Velero would wait for it forever, so the location is not used until it answers`,
        });
      } else if (
        err.code?.startsWith('ERR_TLS') ||
        err.code === 'EPROTO' ||
        /SSL|TLS|certificate/i.test(err.message)
      ) {
        resolve({ ok: true });
      } else {
        resolve({
          ok: false,
          message: `${raw} cannot be reached (${err.code ?? err.message}); check config.s3Url and that the store is running`,
        });
      }
    });
    req.end();
  });
}
