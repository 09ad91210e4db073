import { describe, expect, it } from 'vitest';
import { bodyRefusalOf, parseApiPath, refusalOf } from '../../src/console/server/allow-list.ts';

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

describe('reading a path as the API server does', () => {
  it.each([
    [
      '/api/v1/namespaces/a/secrets/s',
      { group: '', version: 'v1', namespace: 'a', resource: 'secrets', name: 's' },
    ],
    ['/api/v1/namespaces/a', { group: '', version: 'v1', resource: 'namespaces', name: 'a' }],
    [
      '/api/v1/namespaces/a/status',
      { group: '', version: 'v1', resource: 'namespaces', name: 'a', subresource: 'status' },
    ],
    [
      '/apis/apps/v1/namespaces/a/deployments/d/scale',
      {
        group: 'apps',
        version: 'v1',
        namespace: 'a',
        resource: 'deployments',
        name: 'd',
        subresource: 'scale',
      },
    ],
    ['/api/v1/nodes', { group: '', version: 'v1', resource: 'nodes' }],
  ])('reads %s', (path, parsed) => {
    expect(parseApiPath(path)).toEqual(parsed);
  });

  it.each([
    '/api/v1/watch/secrets',
    '/api/v1/proxy/nodes/n',
    '/api/v1/namespaces/a/watch/secrets',
    '/api/v1/namespaces/a/secrets/s/',
    '/api/v1//secrets',
    '/api/v1/namespaces/a/%73ecrets/s',
    '/api/v1/namespaces/a/Secrets/s',
    '/api/v1/namespaces/a/../secrets',
    '/api/v1/namespaces/a/services/https:web:443/proxy',
    '/api/v1/namespaces/a/pods/p/proxy/x',
    '/api',
    '/apis/apps',
  ])('cannot read %s, and the console refuses it', (path) => {
    expect(parseApiPath(path)).toBeUndefined();
    expect(refusalOf('GET', path, q())?.status).toBe(403);
  });

  it.each(['/api/v1/secrets', '/apis/core/v1/namespaces/a/secrets/s', '/api/v1/namespaces/a/secrets'])(
    'refuses the Secret path %s',
    (path) => {
      expect(refusalOf('GET', path, q())).toMatchObject({ status: 403, reason: 'SecretsNotShown' });
    },
  );
});
