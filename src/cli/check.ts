// `tenantkit check`: is each URL answering 200 over TLS that a given CA vouches for? The chart's
// `helm test` Pod runs it against the release's Services (webhooks, search), so an admin learns in one
// line per component whether what they installed is reachable, serving the right certificate and ready.
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { parseArgs } from 'node:util';

export const checkUsage = `Usage: tenantkit check [--ca-file FILE]... [--ca-base64 PEM_B64]... [--timeout-ms 10000] URL...
  GETs each https URL, trusting only the given CAs (every given CA for every URL), and prints one line
  per URL. Exits 1 when any URL does not answer 200.
`;

export interface Outcome {
  url: string;
  ok: boolean;
  detail: string;
}

/** GETs `url` trusting only `ca`; never rejects (a failure is an outcome that says what went wrong). */
export function checkUrl(url: string, ca: string[], timeoutMs: number): Promise<Outcome> {
  const started = performance.now();
  const elapsed = () => `${Math.round(performance.now() - started)} ms`;
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      resolve({ url, ok: false, detail: 'not a URL (e.g. https://tenantkit-webhooks.tenantkit.svc/readyz)' });
      return;
    }
    if (target.protocol !== 'https:') {
      resolve({ url, ok: false, detail: 'only https URLs are checked' });
      return;
    }
    const req = request(target, { method: 'GET', ca, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => {
        const ok = res.statusCode === 200;
        resolve({ url, ok, detail: `HTTP ${res.statusCode} in ${elapsed()}` });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({
        url,
        ok: false,
        detail: `${err.code ? `${err.code}: ` : ''}${err.message} after ${elapsed()}`,
      }),
    );
    req.end();
  });
}

export async function checkCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'ca-file': { type: 'string', multiple: true, default: [] },
      'ca-base64': { type: 'string', multiple: true, default: [] },
      'timeout-ms': { type: 'string', default: '10000' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length === 0) {
    process.stdout.write(checkUsage);
    if (!values.help) process.exitCode = 2;
    return;
  }
  const ca = [
    ...(await Promise.all(values['ca-file'].map((f) => readFile(f, 'utf8')))),
    ...values['ca-base64'].map((b) => Buffer.from(b, 'base64').toString()),
  ];
  if (ca.length === 0) throw new Error('give the CA of the servers with --ca-file or --ca-base64');
  const outcomes = await Promise.all(
    positionals.map((url) => checkUrl(url, ca, Number(values['timeout-ms']))),
  );
  for (const o of outcomes) console.log(`${o.ok ? 'ok    ' : 'FAILED'} ${o.url}: ${o.detail}`);
  if (outcomes.some((o) => !o.ok)) process.exitCode = 1;
}
