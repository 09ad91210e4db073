// Who is calling an aggregated API: kube-apiserver authenticates the user and proxies the request with
// its front-proxy client certificate and the user in X-Remote-* headers. The headers count only on a
// connection whose certificate is issued by the request-header CA with an allowed common name, as
// kube-apiserver publishes them in kube-system/extension-apiserver-authentication; any other caller
// (a Pod that reaches the port) is refused, whatever headers it sends.

import { X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { setOwn } from '../../kube/own.ts';
import type { SearchUser } from '../model.ts';

export interface FrontProxyConfig {
  /** PEM bundle of the request-header CA(s). */
  caPem: string;
  /** Common names the proxy's certificate may have; empty: any from the CA. */
  allowedNames: string[];
  usernameHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

/** kube-apiserver's published configuration (the ConfigMap's data), or undefined when it has none. */
export function frontProxyConfig(data: Record<string, string> | undefined): FrontProxyConfig | undefined {
  const caPem = data?.['requestheader-client-ca-file'];
  if (!caPem) return undefined;
  const list = (key: string, fallback: string[]) => {
    try {
      const value = JSON.parse(data?.[key] ?? 'null') as unknown;
      return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : fallback;
    } catch {
      return fallback;
    }
  };
  return {
    caPem,
    allowedNames: list('requestheader-allowed-names', []),
    usernameHeaders: list('requestheader-username-headers', ['X-Remote-User']),
    groupHeaders: list('requestheader-group-headers', ['X-Remote-Group']),
    extraHeaderPrefixes: list('requestheader-extra-headers-prefix', ['X-Remote-Extra-']),
  };
}

function certificates(pem: string): X509Certificate[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map(
    (block) => new X509Certificate(block),
  );
}

export class FrontProxyAuthenticator {
  private readonly cas: X509Certificate[];
  private readonly config: FrontProxyConfig;

  constructor(config: FrontProxyConfig) {
    this.config = config;
    this.cas = certificates(config.caPem);
  }

  /** Why the connection is not kube-apiserver's front proxy, or undefined when it is. */
  private proxyProblem(req: IncomingMessage): string | undefined {
    const peer = (req.socket as TLSSocket).getPeerCertificate?.();
    if (!peer?.raw) return 'no client certificate';
    const cert = new X509Certificate(peer.raw);
    const now = Date.now();
    if (now < Date.parse(cert.validFrom) || now > Date.parse(cert.validTo))
      return 'certificate not valid now';
    if (!this.cas.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey)))
      return 'certificate not issued by the request-header CA';
    const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1] ?? '';
    if (this.config.allowedNames.length > 0 && !this.config.allowedNames.includes(cn))
      return `certificate name ${cn} is not an allowed front proxy`;
    return undefined;
  }

  /** The user kube-apiserver proxies for, or a reason the request is not from it. */
  authenticate(req: IncomingMessage): { user: SearchUser } | { problem: string } {
    const problem = this.proxyProblem(req);
    if (problem) return { problem };
    const values = (name: string) => req.headersDistinct[name.toLowerCase()] ?? [];
    const username = this.config.usernameHeaders.map((h) => values(h)[0]).find((v) => v);
    if (!username) return { problem: 'no user in the request headers' };
    const groups = this.config.groupHeaders.flatMap(values);
    const extra: Record<string, string[]> = {};
    for (const [header, list] of Object.entries(req.headersDistinct)) {
      const prefix = this.config.extraHeaderPrefixes.find((p) => header.startsWith(p.toLowerCase()));
      if (!prefix || !list) continue;
      let key: string;
      try {
        key = decodeURIComponent(header.slice(prefix.length));
      } catch {
        continue;
      }
      setOwn(extra, key, list);
    }
    return { user: { username, groups, ...(Object.keys(extra).length ? { extra } : {}) } };
  }
}
