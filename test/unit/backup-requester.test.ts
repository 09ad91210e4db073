// The requester of a NonAdminRestore is whoever last decided what it restores: recorded on CREATE and on
// every UPDATE that changes the spec (by anyone), kept otherwise, and never writable by hand.
import { describe, expect, it } from 'vitest';
import { recordRequester, requesterUnchanged } from '../../src/backup/admission/requester.ts';
import { RequesterAnnotation, requesterValue } from '../../src/backup/model.ts';
import type { NonAdminRestore } from '../../src/crds/backup.ts';
import type { UserInfo } from '../../src/kube/access.ts';
import type { AdmissionRequest } from '../../src/webhook/admission.ts';

const alice: UserInfo = { username: 'alice', groups: ['team-a', 'system:authenticated'] };
const dave: UserInfo = { username: 'dave', groups: ['system:authenticated'] };

const nar = (backupName: string, requester?: UserInfo): NonAdminRestore =>
  ({
    apiVersion: 'oadp.openshift.io/v1alpha1',
    kind: 'NonAdminRestore',
    metadata: {
      name: 'r',
      namespace: 'team-a',
      ...(requester ? { annotations: { [RequesterAnnotation]: requesterValue(requester) } } : {}),
    },
    spec: { restoreSpec: { backupName } },
  }) as NonAdminRestore;

const update = (user: UserInfo, old: NonAdminRestore, object: NonAdminRestore) =>
  ({
    uid: '1',
    kind: { group: 'oadp.openshift.io', version: 'v1alpha1', kind: 'NonAdminRestore' },
    resource: { group: 'oadp.openshift.io', version: 'v1alpha1', resource: 'nonadminrestores' },
    operation: 'UPDATE',
    userInfo: user,
    object,
    oldObject: old,
  }) as AdmissionRequest<NonAdminRestore>;

/** The JSON patch recordRequester answers with, as text. */
const patchOf = (request: AdmissionRequest<NonAdminRestore>) =>
  JSON.stringify(recordRequester(request).patch ?? []);

describe('recordRequester / requesterUnchanged', () => {
  it('records whoever changes the spec, with their groups then', () => {
    const old = nar('not-yet', alice);
    const request = update(dave, old, nar('old-backup', alice));
    expect(recordRequester(request).allowed).toBe(true);
    expect(patchOf(request)).toContain(JSON.stringify(requesterValue(dave)));
    // The validating side accepts exactly dave's record and refuses alice's left in place.
    expect(requesterUnchanged(request)?.allowed).toBe(false);
    expect(requesterUnchanged(update(dave, old, nar('old-backup', dave)))).toBeUndefined();
  });

  it('keeps the record on an update that leaves the spec alone, and refuses a hand-written one', () => {
    const old = nar('b', alice);
    expect(requesterUnchanged(update(dave, old, nar('b', alice)))).toBeUndefined();
    expect(requesterUnchanged(update(alice, old, nar('b', dave)))?.allowed).toBe(false);
    // An apply that drops it gets it back unchanged.
    expect(patchOf(update(dave, old, nar('b')))).toContain(JSON.stringify(requesterValue(alice)));
  });
});
