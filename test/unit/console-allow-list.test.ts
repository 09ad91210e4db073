import { describe, expect, it } from 'vitest';
import { bodyRefusalOf, refusalOf } from '../../src/console/server/allow-list.ts';

const q = (text = '') => new URLSearchParams(text);
const oadp = '/apis/oadp.openshift.io/v1alpha1';

describe('what the console forwards', () => {
  it.each([
    ['GET', `${oadp}/namespaces/team-a/nonadminbackups`],
    ['POST', `${oadp}/namespaces/team-a/nonadminrestores`],
    ['DELETE', `${oadp}/namespaces/team-a/nonadminbackups/nightly-1`],
    ['GET', '/api/v1/namespaces'],
    ['POST', '/api/v1/namespaces'],
    ['GET', '/api/v1/namespaces/team-a/resourcequotas'],
    ['POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews'],
    ['GET', '/apis/tenancy.tenantkit.io/v1alpha1/organizations'],
  ])('forwards %s %s', (method, path) => {
    expect(refusalOf(method, path, q())).toBeUndefined();
  });

  it.each([
    `/api/v1/namespaces/team-a/pods/web/exec`,
    `/api/v1/namespaces/team-a/pods/web/log`,
    `/api/v1/nodes/node-1/proxy`,
    `/api/v1/namespaces/team-a/services/web:80/proxy`,
    `/apis/apps/v1/namespaces/team-a/deployments/web/scale`,
    `${oadp}/namespaces/team-a/nonadminbackups/x/status`,
    `${oadp}/namespaces/TEAM-A/nonadminbackups`,
    `${oadp}/namespaces/team-a/nonadminbackups%2F..`,
    `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings`,
    '/',
  ])('refuses %s, saying to use kubectl', (path) => {
    const refusal = refusalOf('GET', path, q());
    expect(refusal).toMatchObject({ status: 403, reason: 'PathNotAllowed' });
    expect(refusal?.message).toContain('kubectl');
  });

  it.each([
    '/api/v1/namespaces/team-a/configmaps/settings',
    '/api/v1/namespaces/team-a/pods/web-1',
    '/apis/apps/v1/namespaces/team-a/deployments/web',
    '/apis/oadp.openshift.io/v1alpha1/namespaces/team-a/nonadminbackups/nightly',
    '/api/v1/persistentvolumes/pv-1',
    '/apis/storage.k8s.io/v1/storageclasses/standard',
  ])('forwards GET of one object (its YAML) at %s, and nothing else there', (path) => {
    expect(refusalOf('GET', path, q())).toBeUndefined();
    expect(refusalOf('PUT', path, q())?.status).toBe(405);
  });

  it.each([
    '/api/v1/namespaces/team-a/secrets',
    '/api/v1/namespaces/team-a/secrets/db-password',
    '/api/v1/secrets',
  ])('never reads Secrets (%s), so no Secret data reaches a browser', (path) => {
    expect(refusalOf('GET', path, q())).toMatchObject({ status: 403, reason: 'SecretsNotShown' });
  });

  it('refuses a method the path is not forwarded for, naming the ones it is', () => {
    expect(refusalOf('PATCH', `${oadp}/namespaces/a/nonadminbackups/b`, q())).toMatchObject({
      status: 405,
      message: expect.stringContaining('GET, DELETE'),
    });
    expect(refusalOf('DELETE', '/api/v1/namespaces/team-a', q())?.status).toBe(405);
  });

  it('passes list parameters only (no watch, no dry-run, no field manager)', () => {
    expect(
      refusalOf('GET', `${oadp}/namespaces/a/nonadminbackups`, q('labelSelector=x%3Dy&limit=5')),
    ).toBeUndefined();
    for (const param of ['watch=true', 'dryRun=All', 'fieldManager=x', 'pretty=true']) {
      expect(refusalOf('GET', `${oadp}/namespaces/a/nonadminbackups`, q(param))).toMatchObject({
        status: 400,
        reason: 'QueryNotAllowed',
      });
    }
  });
});

describe('saved searches', () => {
  it('forwards reads and writes of the one ConfigMap, and a create only when it names it', () => {
    const cm = '/api/v1/namespaces/team-a/configmaps/tenantkit-saved-searches';
    expect(refusalOf('GET', cm, q())).toBeUndefined();
    expect(refusalOf('PUT', cm, q())).toBeUndefined();
    expect(refusalOf('DELETE', cm, q())?.status).toBe(405);
    expect(refusalOf('GET', '/api/v1/namespaces/team-a/configmaps', q())?.status).toBe(405);
    const collection = '/api/v1/namespaces/team-a/configmaps';
    expect(bodyRefusalOf(collection, { metadata: { name: 'tenantkit-saved-searches' } })).toBeUndefined();
    for (const body of [
      { metadata: { name: 'kube-root-ca.crt' } },
      { metadata: { generateName: 'x' } },
      null,
      'text',
    ]) {
      expect(bodyRefusalOf(collection, body)).toMatchObject({ status: 403, reason: 'ObjectNotAllowed' });
    }
    expect(
      bodyRefusalOf(`/apis/oadp.openshift.io/v1alpha1/namespaces/a/nonadminbackups`, {}),
    ).toBeUndefined();
  });
});
