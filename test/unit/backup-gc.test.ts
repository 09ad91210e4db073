// The garbage collector's pure rules: what can be said of an object before its origin is looked at, and
// the condition a pass writes. The passes themselves run against the real API server in
// test/integration/backup-gc-rules.test.ts (frozen cache snapshots) and backup-gc.test.ts (real Velero).
import { describe, expect, it } from 'vitest';
import { gcCondition, Origins, precheck, Targets } from '../../src/backup/controllers/gc/rules.ts';
import { Labels, managedLabels } from '../../src/backup/model.ts';

const veleroNs = 'velero';
const meta = (
  name: string,
  origin: (typeof Origins)[keyof typeof Origins],
  uuid: string,
  originNs = 'shop',
) => ({
  name,
  namespace: veleroNs,
  labels: { ...managedLabels, [origin.uuidLabel]: uuid },
  annotations: { [origin.nameAnnotation]: 'mine', [origin.namespaceAnnotation]: originNs },
});

describe('precheck', () => {
  const restores = Targets.find((t) => t.kind === 'Restore')!;
  it("looks only at tenantkit's objects in Velero's namespace that carry a full identity", () => {
    const now = Date.now();
    const m = meta('x', Origins.nar, 'u');
    expect(
      precheck(restores, { metadata: { ...m, labels: { [Labels.narUuid]: 'u' } } }, veleroNs, now).verdict,
    ).toBe('keep');
    expect(precheck(restores, { metadata: { ...m, namespace: 'shop' } }, veleroNs, now).verdict).toBe('keep');
    expect(precheck(restores, { metadata: { ...m, annotations: {} } }, veleroNs, now).verdict).toBe('keep');
    expect(precheck(restores, { metadata: { ...m, deletionTimestamp: 'x' } }, veleroNs, now).verdict).toBe(
      'keep',
    );
    expect(precheck(restores, { metadata: m }, veleroNs, now).verdict).toBe('origin');
  });
});

describe('precheck by age', () => {
  const requests = Targets.find((t) => t.kind === 'DeleteBackupRequest')!;
  const downloads = Targets.find((t) => t.kind === 'DownloadRequest')!;
  const now = Date.parse('2026-11-26T12:00:00Z');
  const dbr = (phase: string | undefined, created: string) => ({
    metadata: { ...meta('d', Origins.nab, 'u'), creationTimestamp: created },
    ...(phase ? { status: { phase } } : {}),
  });
  it('collects a processed DeleteBackupRequest over a day old, never an unprocessed one', () => {
    expect(precheck(requests, dbr('Processed', '2026-11-25T11:59:59Z'), veleroNs, now).verdict).toBe(
      'collect',
    );
    expect(precheck(requests, dbr('Processed', '2026-11-25T12:00:01Z'), veleroNs, now).verdict).toBe(
      'origin',
    );
    expect(precheck(requests, dbr('InProgress', '2020-01-01T00:00:00Z'), veleroNs, now).verdict).toBe('keep');
    expect(precheck(requests, dbr(undefined, '2020-01-01T00:00:00Z'), veleroNs, now).verdict).toBe('keep');
    expect(precheck(requests, dbr('Processed', 'not a time'), veleroNs, now).verdict).toBe('origin');
  });
  it('collects an expired DownloadRequest whatever its origin', () => {
    const dr = (expiration: unknown) => ({ metadata: meta('r', Origins.nadr, 'u'), status: { expiration } });
    expect(precheck(downloads, dr('2026-11-26T11:59:59Z'), veleroNs, now).verdict).toBe('collect');
    expect(precheck(downloads, dr('2026-11-26T12:10:00Z'), veleroNs, now).verdict).toBe('origin');
    expect(precheck(downloads, dr(42), veleroNs, now).verdict).toBe('origin');
  });
});

describe('the config condition', () => {
  it('says what the last pass removed, and that GC is off at 0', () => {
    expect(gcCondition({ collected: {}, dataDeletions: 0, errors: [] }, 3)).toMatchObject({
      status: 'True',
      reason: 'Collected',
      message: 'the last pass found no orphaned Velero-side objects',
      observedGeneration: 3,
    });
    expect(
      gcCondition({ collected: { Secret: 2, Restore: 1 }, dataDeletions: 1, errors: [] }, 3).message,
    ).toBe("the last pass removed 1 Restore, 2 Secret; asked Velero to delete 1 backups' data");
    expect(
      gcCondition({ collected: {}, dataDeletions: 0, errors: ['list Secret: forbidden'] }, 3),
    ).toMatchObject({
      status: 'False',
      reason: 'Failed',
    });
    expect(gcCondition('disabled', 3)).toMatchObject({ status: 'False', reason: 'Disabled' });
  });
});
