// A tiny certificate authority for the local control plane and the webhook server: ECDSA P-256 keys
// (fast to generate, accepted by Go's TLS stack and by kube-apiserver for service-account signing).
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const keyAlgorithm = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const signingAlgorithm = { name: 'ECDSA', hash: 'SHA-256' } as const;
const day = 24 * 60 * 60 * 1000;

/** A certificate and its private key, both PEM-encoded. */
export interface KeyPair {
  certPem: string;
  keyPem: string;
}

export interface CertificateAuthority extends KeyPair {
  /** Issues a certificate signed by this CA. */
  issue(request: IssueRequest): Promise<KeyPair>;
}

export interface IssueRequest {
  /** Subject common name: the user name for client certificates. */
  commonName: string;
  /** Subject organizations: the groups for client certificates. */
  organizations?: string[];
  /** DNS names and IP addresses for serving certificates. */
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client';
  validDays?: number;
}

async function generateKeys(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(keyAlgorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** Exports a public key as an SPKI PEM ("PUBLIC KEY"). */
export async function publicKeyPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('spki', key);
  return x509.PemConverter.encode(der, 'PUBLIC KEY');
}

/** A bare key pair for service-account token signing. */
export async function generateSigningKey(): Promise<{ privatePem: string; publicPem: string }> {
  const keys = await generateKeys();
  return { privatePem: await privateKeyPem(keys.privateKey), publicPem: await publicKeyPem(keys.publicKey) };
}

function escapeRdn(value: string): string {
  return value.replace(/([,+"\\<>;=])/g, '\\$1');
}

/** Creates a new self-signed CA. */
export async function createCA(commonName: string, validDays = 3650): Promise<CertificateAuthority> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${escapeRdn(commonName)}`,
    keys,
    signingAlgorithm,
    notBefore: new Date(Date.now() - day),
    notAfter: new Date(Date.now() + validDays * day),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return caFrom(cert, keys.privateKey, await privateKeyPem(keys.privateKey));
}

/** Loads a CA written earlier by {@link createCA}. */
export async function loadCA(pair: KeyPair): Promise<CertificateAuthority> {
  const cert = new x509.X509Certificate(pair.certPem);
  const der = x509.PemConverter.decodeFirst(pair.keyPem);
  const key = await webcrypto.subtle.importKey('pkcs8', der, keyAlgorithm, true, ['sign']);
  return caFrom(cert, key, pair.keyPem);
}

function caFrom(cert: x509.X509Certificate, signingKey: CryptoKey, keyPem: string): CertificateAuthority {
  return {
    certPem: cert.toString('pem'),
    keyPem,
    async issue(request) {
      const keys = await generateKeys();
      const subject = [`CN=${escapeRdn(request.commonName)}`]
        .concat((request.organizations ?? []).map((o) => `O=${escapeRdn(o)}`))
        .join(', ');
      const names: x509.JsonGeneralName[] = [
        ...(request.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
        ...(request.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
      ];
      const extensions: x509.Extension[] = [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
          true,
        ),
        new x509.ExtendedKeyUsageExtension(
          [request.usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth],
          false,
        ),
        await x509.AuthorityKeyIdentifierExtension.create(cert, false),
      ];
      if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names, false));
      const issued = await x509.X509CertificateGenerator.create({
        subject,
        issuer: cert.subject,
        publicKey: keys.publicKey,
        signingKey,
        signingAlgorithm,
        notBefore: new Date(Date.now() - day),
        notAfter: new Date(Date.now() + (request.validDays ?? 365) * day),
        extensions,
      });
      return { certPem: issued.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
    },
  };
}
