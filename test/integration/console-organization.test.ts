// The console's organization page, as tenants in Chromium against the real tenancy policies: alice sees
// her organization (its namespaces, its namespace quota used and allowed, who may do what in a namespace),
// creates a namespace in it and is refused, with the policy's message, once the quota is used up; bob, a
// member of nothing, sees no organization at all, and neither reads alice's through the console's backend.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Organization, OrganizationCrd } from '../../src/crds/tenancy.ts';
import { type KubeObject, Resources } from '../../src/kube/resources.ts';
import { tenancy } from '../../src/tenancy/index.ts';
import { browserSkipReason, launchBrowser } from '../harness/browser.ts';
import { eventually, TestCluster } from '../harness/cluster.ts';
import { runCapability } from '../harness/components.ts';
import { screenshot, signedIn, startTestConsole, type TestConsole } from '../harness/console.ts';

const cluster = await TestCluster.connect();
const orgLabel = 'appuio.io/organization';
const id = cluster.unique('corg');
const org = `${id}-team`;
const home = `${id}-home`;
const added = `${id}-added`;
const tooMany = `${id}-too-many`;
let consoleServer: TestConsole;
let alice: string;
let bob: string;

beforeAll(async () => {
  const apply = { fieldManager: 'console-org-test', force: true };
  await cluster.admin.apply(Resources.namespaces, { metadata: { name: 'tenantkit-system' } }, apply);
  // alice is a ServiceAccount of the organization's first namespace (a service account may create
  // namespaces only in its own namespace's organization); bob one of a namespace outside any.
  await cluster.admin.apply(
    Resources.namespaces,
    { metadata: { name: home, labels: { [orgLabel]: org } } },
    apply,
  );
  cluster.defer(() => cluster.admin.delete(Resources.namespaces, home));
  const outside = await cluster.namespace(`${id}-outside`);
  const aliceName = `system:serviceaccount:${home}:alice`;
  await cluster.admin.apply(
    OrganizationCrd.type,
    {
      metadata: { name: org },
      spec: { displayName: 'Console Team', members: { users: [aliceName] }, namespaceQuota: 2 },
    } as Organization,
    apply,
  );
  cluster.defer(() => cluster.admin.delete(OrganizationCrd.type, org));
  for (const ns of [added, tooMany]) cluster.defer(() => cluster.admin.delete(Resources.namespaces, ns));
  ({ token: alice } = await cluster.serviceAccount(home, 'alice'));
  ({ token: bob } = await cluster.serviceAccount(outside, 'bob'));
  // Tenants may create namespaces; the tenancy policies decide which (what `tenantkit dev` grants too).
  for (const [ns, name] of [
    [home, 'alice'],
    [outside, 'bob'],
  ] as const) {
    await cluster.grant(
      { kind: 'ServiceAccount', name, namespace: ns },
      { rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['create'] }] },
    );
  }
  await runCapability(cluster, tenancy);
  consoleServer = await startTestConsole(cluster);
  // The organization RBAC controller made alice admin of her first namespace.
  await eventually(
    async () =>
      (await cluster.admin.get<Organization>(OrganizationCrd.type, org))?.status?.namespaceCount === 1,
    { what: 'organization status' },
  );
});
afterAll(async () => {
  await consoleServer?.server.stop();
  await cluster.cleanup();
});

describe.skipIf(browserSkipReason !== undefined)('the organization page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('shows alice her organization, creates a namespace in it and shows the refusal over quota', async () => {
    const page = await signedIn(browser, consoleServer.server.url, alice);
    await page.click('text=My organization');
    const card = page.locator(`[data-organization="${org}"]`);
    await card.locator('text=1 of 2 namespaces').waitFor();
    expect(await card.locator('h2').textContent()).toBe(`Console Team (${org})`);
    await card.locator(`tr[data-name="${home}"]`).waitFor();
    // A namespace made from the page belongs to the organization (its label set by the page).
    await page.fill(`#new-namespace-${org}`, added);
    await card.locator('button:has-text("Create")').click();
    await card.locator(`text=Namespace ${added} created in ${org}`).waitFor();
    const made = await cluster.admin.get<KubeObject>(Resources.namespaces, added);
    expect(made?.metadata.labels?.[orgLabel]).toBe(org);
    await card.locator('text=2 of 2 namespaces').waitFor({ timeout: 20_000 });
    await card.locator(`tr[data-name="${added}"]`).waitFor();
    // Over quota: the namespace policy's own message, naming the fix.
    await page.fill(`#new-namespace-${org}`, tooMany);
    await card.locator('button:has-text("Create")').click();
    const notice = card.locator('.namespace-notice', { hasText: `Namespace ${tooMany} was refused` });
    await notice.waitFor();
    const refusal = await notice.textContent();
    expect(refusal).toContain(`Namespace ${tooMany} was refused`);
    expect(refusal).toContain(`organization "${org}" already owns 2 of its 2 namespaces (namespace quota)`);
    expect(await cluster.admin.get(Resources.namespaces, tooMany)).toBeUndefined();
    await screenshot(page, 'organization');
    // Who may do what in her first namespace: the organization's admin binding.
    await card.locator(`tr[data-name="${home}"] >> text=Access`).click();
    await page
      .locator(
        '#namespace-access >> text=/ClusterRole admin to User system:serviceaccount:.*:alice \\(Organization /',
      )
      .waitFor();
    await page.context().close();
  });

  it('shows bob, a member of nothing, no organization, and never alice’s', async () => {
    const page = await signedIn(browser, consoleServer.server.url, bob);
    await page.click('text=My organization');
    await page.waitForSelector('text=You are not a member of any organization');
    expect(await page.locator(`[data-organization="${org}"]`).count()).toBe(0);
    // Asking the backend for it directly: the API server's refusal, as bob.
    const reply = await page.evaluate(
      `fetch('/api/kube/apis/tenancy.tenantkit.io/v1alpha1/organizations/${org}', { headers: { authorization: 'Bearer ${bob}' } }).then((r) => r.status)`,
    );
    expect(reply).toBe(403);
    await page.context().close();
  });
});
