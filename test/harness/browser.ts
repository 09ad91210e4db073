// A real browser for page tests: Debian's `chromium` (installed by .ci/run), driven by playwright-core
// over the DevTools protocol; no browser is downloaded. Root needs --no-sandbox (Chromium refuses to run
// its sandbox as root). Tests that need it skip with one line when it is missing.
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

const candidates = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
export const chromiumPath = candidates.find((p) => existsSync(p));
export const browserSkipReason = chromiumPath
  ? undefined
  : 'no Chromium at /usr/bin/chromium (Debian package `chromium`; .ci/run installs it)';

export async function launchBrowser(): Promise<Browser> {
  if (!chromiumPath) throw new Error(browserSkipReason);
  return chromium.launch({
    executablePath: chromiumPath,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}
