// The signer of requests to the test object store (devenv/velero/s3-sign.ts) against AWS's own
// Signature Version 4 example ("GET Object", Authenticating Requests: Using the Authorization Header).
import { describe, expect, it } from 'vitest';
import { parseCredentials, signRequest, uriEncode } from '../../devenv/velero/s3-sign.ts';

const example = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};

describe('s3-sign', () => {
  it("signs AWS's GET Object example to its published signature", () => {
    const { url, headers } = signRequest(example, {
      method: 'GET',
      endpoint: 'http://examplebucket.s3.amazonaws.com',
      path: '/test.txt',
      headers: { Range: 'bytes=0-9' },
      region: 'us-east-1',
      now: new Date('2013-05-24T00:00:00Z'),
    });
    expect(url).toBe('http://examplebucket.s3.amazonaws.com/test.txt');
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
  });

  it('sends the path and query encoded as it signs them', () => {
    const { url } = signRequest(example, {
      method: 'GET',
      endpoint: 'http://127.0.0.1:9000',
      path: "/b/a b+c(1)!'*.txt",
      query: { prefix: 'x y/', 'list-type': '2' },
    });
    expect(url).toBe('http://127.0.0.1:9000/b/a%20b%2Bc%281%29%21%27%2A.txt?list-type=2&prefix=x%20y%2F');
    expect(uriEncode('é')).toBe('%C3%A9');
  });

  it("reads the [default] keys of Velero's credentials file", () => {
    expect(parseCredentials('[default]\naws_access_key_id = A\naws_secret_access_key = s/+k\n')).toEqual({
      accessKeyId: 'A',
      secretAccessKey: 's/+k',
    });
  });
});
