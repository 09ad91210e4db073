// Lists a bucket of the local S3 server (ListObjectsV2 over plain HTTP), so tests can check what Velero
// wrote to or removed from object storage. Requests are signed with the store's credentials (the local
// server refuses unsigned ones); no AWS SDK is needed for one read-only call.
import { type S3Credentials, s3Fetch } from './s3-sign.ts';

export interface S3Object {
  key: string;
  size: number;
}

const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function unescapeXml(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-f]+);/gi, (_, entity: string) => {
    if (entity.startsWith('#x') || entity.startsWith('#X'))
      return String.fromCodePoint(Number.parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(Number.parseInt(entity.slice(1), 10));
    return entities[entity.toLowerCase()] ?? '';
  });
}

const element = (xml: string, name: string): string | undefined => {
  const match = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  return match?.[1] === undefined ? undefined : unescapeXml(match[1]);
};

/** Every object in `bucket` whose key starts with `prefix`, in key order. */
export async function listObjects(
  endpoint: string,
  credentials: S3Credentials,
  bucket: string,
  prefix = '',
): Promise<S3Object[]> {
  const objects: S3Object[] = [];
  let token: string | undefined;
  do {
    const query: Record<string, string> = { 'list-type': '2', prefix };
    if (token) query['continuation-token'] = token;
    const response = await s3Fetch(
      credentials,
      { method: 'GET', endpoint, path: `/${bucket}`, query },
      { signal: AbortSignal.timeout(10_000) },
    );
    const body = await response.text();
    if (!response.ok) {
      throw new Error(
        `listing s3://${bucket}/${prefix} failed: HTTP ${response.status}: ${body.slice(0, 500)}`,
      );
    }
    for (const [, contents = ''] of body.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
      const key = element(contents, 'Key');
      if (key !== undefined) objects.push({ key, size: Number(element(contents, 'Size') ?? 0) });
    }
    token = element(body, 'IsTruncated') === 'true' ? element(body, 'NextContinuationToken') : undefined;
  } while (token);
  return objects;
}
