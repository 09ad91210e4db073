// The tenant console for page tests: its server on a test CA's certificate, forwarding to this cluster's
// API server (and a search service when given), and a Chromium tab signed in with a tenant's token.
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { ConsoleServer } from '../../src/console/server/server.ts';
import { consoleAssets } from '../../src/console/web/build.ts';
import { silentLogger } from '../../src/kube/log.ts';
import { type CertificateAuthority, createCA } from '../../src/serving/certs.ts';
import type { TestCluster } from './cluster.ts';

export interface TestConsole {
  server: ConsoleServer;
  /** The CA that signed the console's certificate (and can sign a search service's). */
  ca: CertificateAuthority;
}

export async function startTestConsole(
  cluster: TestCluster,
  options: { ca?: CertificateAuthority; searchUrl?: URL } = {},
): Promise<TestConsole> {
  const ca = options.ca ?? (await createCA('console-test-ca'));
  const certificate = await ca.issue({
    commonName: '127.0.0.1',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
  });
  const server = await ConsoleServer.start({
    logger: silentLogger,
    certificate,
    kube: { url: new URL(cluster.server), caPem: cluster.caPemText },
    ...(options.searchUrl ? { search: { url: options.searchUrl, caPem: ca.certPem } } : {}),
    assetsDir: await consoleAssets(),
  });
  return { server, ca };
}

/** Script errors and CSP violations a tab reported (none expected). */
export const problemsOf = (page: Page) => (page as Page & { problems?: string[] }).problems ?? [];

/** A new tab at `url`, signed in with `token`; the test CA is not the browser's, so its certificate errors are waived. */
export async function signedIn(browser: Browser, url: string, token: string): Promise<Page> {
  const context = await browser.newContext({
    ignoreHTTPSErrors: true,
    viewport: { width: 1280, height: 720 },
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  (page as Page & { problems?: string[] }).problems = problems;
  await page.goto(url);
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('#signed-in-user');
  return page;
}

/** Saves a screenshot for the docs when CONSOLE_SCREENSHOTS names a directory (docs/images). */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.CONSOLE_SCREENSHOTS;
  if (dir) await page.screenshot({ path: join(dir, `console-${name}.png`) });
}
