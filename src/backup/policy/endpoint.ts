// The endpoint of a tenant's storage location (config.s3Url), checked by the location rules
// (bsl-validate.ts) and by tenantkit's reachability probe.
import { BlockList, isIP } from 'node:net';
import type { JsonObject } from './enforce.ts';

const path = 'spec.backupStorageLocationSpec';

// Velero (and tenantkit's reachability check) send requests to a tenant location's endpoint from inside
// the cluster, and report what came back in the location's status: an endpoint is a way to reach, and
// to probe, whatever Velero can reach. Link-local addresses (where clouds serve instance metadata and
// credentials) are never allowed; an admin's allow-list narrows the rest to stores they trust to answer
// (a store that accepts a connection and never answers holds Velero's one backup worker).

/** Link-local ranges and the names clouds give their metadata service. */
const linkLocal = new BlockList();
linkLocal.addSubnet('169.254.0.0', 16, 'ipv4');
linkLocal.addSubnet('fe80::', 10, 'ipv6');
linkLocal.addSubnet('::ffff:169.254.0.0', 112, 'ipv6');
const metadataHosts = new Set([
  'metadata',
  'metadata.google.internal',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** The host of a URL's hostname without IPv6 brackets, lower case. */
const bareHost = (hostname: string) => hostname.replace(/^\[|\]$/g, '').toLowerCase();

/** Whether `host` (an address or a name) is link-local or a cloud metadata service's name. */
export function isLinkLocal(host: string): boolean {
  const family = isIP(host);
  if (family === 4) return linkLocal.check(host, 'ipv4');
  if (family === 6) return linkLocal.check(host, 'ipv6');
  return metadataHosts.has(host.replace(/\.$/, ''));
}

/**
 * Whether `host`/`port` match an allow-list entry: `host` (any port), `host:port`, `*.domain` (any
 * subdomain, not the domain itself) or `*.domain:port`; IPv6 as `[addr]` or `[addr]:port`.
 */
export function endpointAllowed(host: string, port: string, entry: string): boolean {
  const m = /^(\[[^\]]*\]|[^:]*)(?::([0-9]{1,5}))?$/.exec(entry.toLowerCase());
  if (!m) return false;
  const pattern = bareHost(m[1]!);
  const wantPort = m[2];
  if (wantPort !== undefined && wantPort !== port) return false;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return host === pattern;
}

/**
 * Problems with the endpoint a tenant location's config names (config.s3Url; AWS's own S3 when it is
 * absent), against the admin's allow-list (undefined: any endpoint but link-local ones).
 */
export function endpointProblems(config: JsonObject, allowed: readonly string[] | undefined): string[] {
  const field = `${path}.config.s3Url`;
  const raw = config.s3Url;
  const listed = allowed && allowed.length > 0 ? ` (allowed: ${allowed.join(', ')})` : '';
  const policy = 'NonAdminBackupConfig "cluster" spec.nonAdmin.allowedStorageEndpoints';
  if (raw === undefined || raw === null || raw === '') {
    if (allowed === undefined) return [];
    const region =
      typeof config.region === 'string' && /^[a-z0-9-]{1,32}$/.test(config.region) ? config.region : '';
    const host = region ? `s3.${region}.amazonaws.com` : 's3.amazonaws.com';
    if (allowed.some((e) => endpointAllowed(host, '443', e))) return [];
    return [
      `${field} is required on this cluster: without it the location would use AWS's own S3 (${host}), which is not in ${policy}${listed}; set config.s3Url to an allowed endpoint`,
    ];
  }
  if (typeof raw !== 'string') return [`${field} must be a string such as https://s3.example.com`];
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return [
      `${field} "${raw}" is not a URL; write it like https://s3.example.com or http://minio.storage.svc:9000`,
    ];
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return [`${field} "${raw}" must start with http:// or https://`];
  }
  if (url.username !== '' || url.password !== '') {
    return [`${field} may not hold a user name or password; put the keys in the credential Secret`];
  }
  const host = bareHost(url.hostname);
  if (isLinkLocal(host)) {
    return [
      `${field} "${raw}" names a link-local address (${host}), where clouds serve instance metadata and credentials; tenant locations may never use it`,
    ];
  }
  if (allowed === undefined) return [];
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  if (allowed.some((e) => endpointAllowed(host, port, e))) return [];
  return [
    `${field} "${raw}" is not an endpoint tenants may use on this cluster: ${host}:${port} is not in ${policy}${listed}; use an allowed endpoint or ask your admin to add yours`,
  ];
}
