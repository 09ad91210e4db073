// The non-admin backup API must accept everything OADP's non-admin CRDs accept, with the same meaning.
// These tests compare tenantkit's generated CRDs with the upstream CRDs kept beside the project
// (shared/reference/oadp-crds, OADP non-admin at 4e22229), property by property: every path in the
// reference must exist in ours with the same type, format, enum, required set, default, nullability,
// list/map markers and validation keywords. Where the reference embeds Velero types, tenantkit embeds
// Velero v1.18's (the Velero it runs): a difference there is accepted only when ours is exactly what
// Velero's own CRD (shared/reference/velero-crds, v1.18.1) says at that path.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type EnforcedKind, policyProblems, unenforceable } from '../../src/backup/policy/enforce.ts';
import {
  backupCrds,
  NonAdminBackupConfigCrd,
  NonAdminBackupCrd,
  NonAdminBackupStorageLocationCrd,
  NonAdminBackupStorageLocationRequestCrd,
  NonAdminDownloadRequestCrd,
  NonAdminRestoreCrd,
  NonAdminScheduleCrd,
} from '../../src/crds/backup.ts';
import { allCrds } from '../../src/crds/index.ts';
import { type CrdDefinition, crdManifest } from '../../src/crds/schema.ts';
import type { KubeObject } from '../../src/kube/resources.ts';
import { loadYamlObjects, referenceDir } from '../harness/reference.ts';

type Json = Record<string, unknown>;
interface Schema extends Json {
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  required?: string[];
}
interface Crd extends KubeObject {
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string; singular: string; listKind: string; shortNames?: string[] };
    versions: {
      name: string;
      subresources?: { status?: Json };
      additionalPrinterColumns?: { name: string; type: string; jsonPath: string }[];
      schema: { openAPIV3Schema: Schema };
    }[];
  };
}

/** What a schema node means to the API server; descriptions and child schemas aside. */
type Facts = Json;
const compared = [
  'type',
  'format',
  'nullable',
  'default',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
];

function facts(schema: Schema): Facts {
  const out: Facts = {};
  for (const [key, value] of Object.entries(schema)) {
    if (compared.includes(key) || key.startsWith('x-kubernetes-')) out[key] = value;
  }
  // Order does not matter for enums and required lists.
  if (Array.isArray(schema.enum)) out.enum = [...(schema.enum as string[])].sort();
  if (schema.required?.length) out.required = [...schema.required].sort();
  if (typeof schema.additionalProperties === 'boolean')
    out.additionalProperties = schema.additionalProperties;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/** Every node of a schema by path: `.spec.x`, `[]` for array items, `{}` for map values. */
function flatten(schema: Schema, path = '', out = new Map<string, Facts>()): Map<string, Facts> {
  out.set(path, facts(schema));
  for (const [name, child] of Object.entries(schema.properties ?? {})) flatten(child, `${path}.${name}`, out);
  if (schema.items) flatten(schema.items, `${path}[]`, out);
  if (typeof schema.additionalProperties === 'object') flatten(schema.additionalProperties, `${path}{}`, out);
  return out;
}

/** The nodes under `prefix`, re-rooted at `at`. */
function subtree(all: Map<string, Facts>, prefix: string, at = ''): Map<string, Facts> {
  const out = new Map<string, Facts>();
  for (const [path, f] of all) {
    if (
      path === prefix ||
      path.startsWith(`${prefix}.`) ||
      path.startsWith(`${prefix}[`) ||
      path.startsWith(`${prefix}{`)
    )
      out.set(at + path.slice(prefix.length), f);
  }
  return out;
}

const show = (f: Facts | undefined) =>
  f && JSON.stringify(Object.fromEntries(Object.entries(f).sort(([a], [b]) => a.localeCompare(b))));

/**
 * Differences between a reference and ours: `missing <path>`, `extra <path>`, `<path>: ours {...},
 * reference {...}`. `accept(path, ours)` may excuse a difference (it returns true when ours is right).
 */
function differences(
  reference: Map<string, Facts>,
  ours: Map<string, Facts>,
  accept: (path: string, ours: Facts | undefined) => boolean = () => false,
): string[] {
  const out: string[] = [];
  for (const [path, want] of reference) {
    const got = ours.get(path);
    if (!got) {
      if (!accept(path, undefined)) out.push(`missing ${path || '(root)'}`);
    } else if (show(got) !== show(want) && !accept(path, got)) {
      out.push(`${path || '(root)'}: ours ${show(got)}, reference ${show(want)}`);
    }
  }
  for (const [path, got] of ours) {
    if (!reference.has(path) && !accept(path, got)) out.push(`extra ${path}`);
  }
  return out;
}

const schemaOf = (crd: Crd) => crd.spec.versions[0]!.schema.openAPIV3Schema;
const ours = (def: CrdDefinition) => crdManifest(def) as unknown as Crd;

const reference = referenceDir();
const oadp = new Map(
  ((await loadYamlObjects(join(reference, 'oadp-crds'))) as Crd[]).map((c) => [c.spec.names.kind, c]),
);
const velero = new Map(
  ((await loadYamlObjects(join(reference, 'velero-crds'))) as Crd[]).map((c) => [c.spec.names.kind, c]),
);
const veleroSchema = (kind: string, prefix: string) => {
  const crd = velero.get(kind);
  if (!crd) throw new Error(`no Velero CRD for ${kind} in ${reference}/velero-crds`);
  return subtree(flatten(schemaOf(crd)), prefix);
};

/** Where each non-admin kind embeds a Velero type: our path, Velero kind, path in Velero's schema. */
const embedded: Record<string, [string, string, string][]> = {
  NonAdminBackup: [
    ['.spec.backupSpec', 'Backup', '.spec'],
    ['.status.veleroBackup.spec', 'Backup', '.spec'],
    ['.status.veleroBackup.status', 'Backup', '.status'],
    ['.status.veleroDeleteBackupRequest.status', 'DeleteBackupRequest', '.status'],
  ],
  NonAdminRestore: [
    ['.spec.restoreSpec', 'Restore', '.spec'],
    ['.status.veleroRestore.status', 'Restore', '.status'],
  ],
  NonAdminBackupStorageLocation: [
    ['.spec.backupStorageLocationSpec', 'BackupStorageLocation', '.spec'],
    ['.status.veleroBackupStorageLocation.status', 'BackupStorageLocation', '.status'],
  ],
  NonAdminBackupStorageLocationRequest: [
    ['.status.nonAdminBackupStorageLocation.requestedSpec', 'BackupStorageLocation', '.spec'],
  ],
  NonAdminDownloadRequest: [
    ['.spec.target', 'DownloadRequest', '.spec.target'],
    ['.status.velero.status', 'DownloadRequest', '.status'],
  ],
  NonAdminSchedule: [
    ['.spec.template.backupSpec', 'Backup', '.spec'],
    ['.status.veleroSchedule.status', 'Schedule', '.status'],
  ],
};

/**
 * Fields tenantkit adds to an OADP kind (clients ignore unknown status fields): OADP's
 * NonAdminDownloadRequest has no NACUUID reference in status, tenantkit's has one as every other kind.
 */
const volumeCounts = {
  NonAdminBackup: ['fileSystemPodVolumeBackups', 'dataMoverDataUploads'],
  NonAdminRestore: ['fileSystemPodVolumeRestores', 'dataMoverDataDownloads'],
};
/** The volume counts' bytes moved and to move (OADP has the counts by phase only). */
const bytesOf = (fields: string[]) =>
  fields.flatMap((f) => [`.status.${f}.bytesDone`, `.status.${f}.totalBytes`]);
const tenantkitExtras: Record<string, string[]> = {
  NonAdminDownloadRequest: ['.status.velero.nacuuid', '.status.velero.name', '.status.velero.namespace'],
  NonAdminBackup: bytesOf(volumeCounts.NonAdminBackup),
  NonAdminRestore: bytesOf(volumeCounts.NonAdminRestore),
};
/**
 * Whole status subtrees tenantkit adds: the objects a restore left out because its requester may not
 * write them, and why each failed volume failed.
 */
const tenantkitExtraTrees: Record<string, string[]> = {
  NonAdminBackup: volumeCounts.NonAdminBackup.map((f) => `.status.${f}.failures`),
  NonAdminRestore: [
    '.status.refusedItems',
    ...volumeCounts.NonAdminRestore.map((f) => `.status.${f}.failures`),
  ],
};
const inExtraTree = (kind: string, path: string) =>
  (tenantkitExtraTrees[kind] ?? []).some(
    (at) =>
      path === at || path.startsWith(`${at}.`) || path.startsWith(`${at}[`) || path.startsWith(`${at}{`),
  );

/** Accepts a difference inside an embedded Velero type when ours is what Velero v1.18.1 says there. */
function veleroAccepts(kind: string) {
  return (path: string, got: Facts | undefined) => {
    if (got && (tenantkitExtras[kind]?.includes(path) || inExtraTree(kind, path))) return true;
    for (const [at, veleroKind, veleroPrefix] of embedded[kind] ?? []) {
      if (
        path !== at &&
        !path.startsWith(`${at}.`) &&
        !path.startsWith(`${at}[`) &&
        !path.startsWith(`${at}{`)
      )
        continue;
      const want = veleroSchema(veleroKind, veleroPrefix).get(path.slice(at.length));
      return show(got) === show(want);
    }
    return false;
  };
}

const columns = (crd: Crd) =>
  (crd.spec.versions[0]!.additionalPrinterColumns ?? []).map(({ name, type, jsonPath }) => ({
    name,
    type,
    jsonPath,
  }));

function compareCrd(mine: Crd, ref: Crd) {
  return {
    group: mine.spec.group,
    scope: mine.spec.scope,
    names: {
      kind: mine.spec.names.kind,
      plural: mine.spec.names.plural,
      singular: mine.spec.names.singular,
      listKind: mine.spec.names.listKind,
      shortNames: mine.spec.names.shortNames,
    },
    version: mine.spec.versions.map((v) => v.name),
    statusSubresource: Boolean(mine.spec.versions[0]!.subresources?.status),
    columns: columns(mine),
    reference: {
      group: ref.spec.group,
      scope: ref.spec.scope,
      names: {
        kind: ref.spec.names.kind,
        plural: ref.spec.names.plural,
        singular: ref.spec.names.singular,
        listKind: ref.spec.names.listKind,
        shortNames: ref.spec.names.shortNames,
      },
      version: ref.spec.versions.map((v) => v.name),
      statusSubresource: Boolean(ref.spec.versions[0]!.subresources?.status),
      columns: columns(ref),
    },
  };
}

const oadpDefinitions = [
  NonAdminBackupCrd,
  NonAdminRestoreCrd,
  NonAdminBackupStorageLocationCrd,
  NonAdminBackupStorageLocationRequestCrd,
  NonAdminDownloadRequestCrd,
];

describe('OADP non-admin API compatibility', () => {
  it('defines every kind of the reference, and registers them all', () => {
    expect([...oadp.keys()].sort()).toEqual(oadpDefinitions.map((d) => d.kind).sort());
    for (const def of backupCrds) expect(allCrds).toContain(def);
  });

  for (const def of oadpDefinitions) {
    describe(def.kind, () => {
      const ref = oadp.get(def.kind)!;
      const mine = ours(def);

      it('has the same names, short names, scope, version, status subresource and printer columns', () => {
        const { reference: want, ...got } = compareCrd(mine, ref);
        expect(got).toEqual(want);
      });

      it('accepts every field of the reference schema with the same meaning', () => {
        const diffs = differences(flatten(schemaOf(ref)), flatten(schemaOf(mine)), veleroAccepts(def.kind));
        expect(diffs, `${def.kind} differs from the OADP reference:\n${diffs.join('\n')}`).toEqual([]);
      });
    });
  }

  it('embeds Velero v1.18 types exactly as Velero defines them', () => {
    const diffs: string[] = [];
    for (const def of [...oadpDefinitions, NonAdminScheduleCrd]) {
      const mine = flatten(schemaOf(ours(def)));
      for (const [at, kind, prefix] of embedded[def.kind] ?? []) {
        const want = veleroSchema(kind, prefix);
        const got = subtree(mine, at);
        // The NonAdminSchedule's BackupSpec has one field more than Velero v1.18's (see below).
        if (def.kind === 'NonAdminSchedule') got.delete('.backupType');
        diffs.push(
          ...differences(want, got).map((d) => `${def.kind} ${at} vs Velero ${kind}${prefix}: ${d}`),
        );
      }
    }
    expect(diffs, diffs.join('\n')).toEqual([]);
  });

  it('notices a missing field, a changed enum, a changed required set and a lost default', () => {
    const mine = ours(NonAdminBackupStorageLocationCrd);
    const spec = schemaOf(mine).properties!.spec!.properties!.backupStorageLocationSpec!;
    delete spec.properties!.provider;
    spec.properties!.accessMode!.enum = ['ReadWrite'];
    spec.required = ['objectStorage'];
    delete spec.properties!.credential!.properties!.name!.default;
    const diffs = differences(
      flatten(schemaOf(oadp.get('NonAdminBackupStorageLocation')!)),
      flatten(schemaOf(mine)),
      veleroAccepts('NonAdminBackupStorageLocation'),
    );
    expect(diffs).toEqual([
      expect.stringMatching(/^\.spec\.backupStorageLocationSpec: ours .*"required":\["objectStorage"\]/),
      expect.stringMatching(/^\.spec\.backupStorageLocationSpec\.accessMode: ours .*"enum":\["ReadWrite"\]/),
      expect.stringMatching(/^\.spec\.backupStorageLocationSpec\.credential\.name: ours \{"type":"string"\}/),
      'missing .spec.backupStorageLocationSpec.provider',
    ]);
  });
});

describe('NonAdminSchedule (upstream e827870, as summarised in shared/reference/README.md)', () => {
  const mine = ours(NonAdminScheduleCrd);
  const string = { type: 'string' };
  const timestamp = { type: 'string', format: 'date-time' };
  const object = (required?: string[]) => ({
    type: 'object',
    ...(required ? { required: required.sort() } : {}),
  });
  const enumOf = (...values: string[]) => ({ type: 'string', enum: values.sort() });
  const veleroBackupPhases = [
    ...['New', 'Queued', 'ReadyToStart', 'FailedValidation', 'InProgress', 'WaitingForPluginOperations'],
    ...['WaitingForPluginOperationsPartiallyFailed', 'Finalizing', 'FinalizingPartiallyFailed'],
    ...['Completed', 'PartiallyFailed', 'Failed', 'Deleting'],
  ];
  const scheduledBackup = (at: string): [string, Facts][] => [
    [at, object(['name', 'veleroBackupName'])],
    [`${at}.name`, string],
    [`${at}.veleroBackupName`, string],
    [`${at}.phase`, enumOf(...veleroBackupPhases)],
    [`${at}.startTimestamp`, timestamp],
    [`${at}.completionTimestamp`, timestamp],
    [`${at}.expiration`, timestamp],
  ];
  const prefixed = (map: Map<string, Facts>, at: string) =>
    [...map].map(([p, f]) => [at + p, f] as [string, Facts]);
  const nab = flatten(schemaOf(oadp.get('NonAdminBackup')!));

  const expected = new Map<string, Facts>([
    ['', { type: 'object' }],
    ['.apiVersion', string],
    ['.kind', string],
    ['.metadata', { type: 'object' }],
    ['.spec', object(['schedule', 'template'])],
    ['.spec.schedule', string],
    ['.spec.paused', { type: 'boolean' }],
    ['.spec.skipImmediately', { type: 'boolean' }],
    ['.spec.template', object(['backupSpec'])],
    ...prefixed(veleroSchema('Backup', '.spec'), '.spec.template.backupSpec'),
    ['.spec.template.backupSpec.backupType', enumOf('Full', 'Incremental')],
    ['.status', { type: 'object' }],
    ['.status.phase', enumOf('New', 'BackingOff', 'Created', 'Deleting')],
    // metav1.Condition, as in every other non-admin kind.
    ...prefixed(subtree(nab, '.status.conditions'), '.status.conditions'),
    ['.status.veleroSchedule', { type: 'object' }],
    ['.status.veleroSchedule.nacuuid', string],
    ['.status.veleroSchedule.name', string],
    ['.status.veleroSchedule.namespace', string],
    ...prefixed(veleroSchema('Schedule', '.status'), '.status.veleroSchedule.status'),
    ...scheduledBackup('.status.lastBackup'),
    ['.status.recentBackups', { type: 'array' }],
    ...scheduledBackup('.status.recentBackups[]'),
    ['.status.nextRun', timestamp],
  ]);

  it('has the upstream names, scope, status subresource and printer columns', () => {
    expect(mine.spec.names).toMatchObject({
      kind: 'NonAdminSchedule',
      plural: 'nonadminschedules',
      singular: 'nonadminschedule',
      listKind: 'NonAdminScheduleList',
      shortNames: ['nas'],
    });
    expect(mine.spec.group).toBe('oadp.openshift.io');
    expect(mine.spec.scope).toBe('Namespaced');
    expect(mine.spec.versions.map((v) => v.name)).toEqual(['v1alpha1']);
    expect(mine.spec.versions[0]!.subresources).toEqual({ status: {} });
    expect(columns(mine)).toEqual([
      { name: 'Request-Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Velero-Phase', type: 'string', jsonPath: '.status.veleroSchedule.status.phase' },
      { name: 'Next-Run', type: 'date', jsonPath: '.status.nextRun' },
      { name: 'Paused', type: 'boolean', jsonPath: '.spec.paused' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ]);
  });

  it('has exactly the upstream schema', () => {
    const diffs = differences(expected, flatten(schemaOf(mine)));
    expect(diffs, diffs.join('\n')).toEqual([]);
  });
});

describe('NonAdminBackupConfig', () => {
  const crd = ours(NonAdminBackupConfigCrd);
  const all = flatten(schemaOf(crd));
  const nonAdmin = schemaOf(crd).properties!.spec!.properties!.nonAdmin!;

  it('is a cluster-scoped singleton of backup.tenantkit.io', () => {
    expect(crd.spec.group).toBe('backup.tenantkit.io');
    expect(crd.spec.scope).toBe('Cluster');
    expect(schemaOf(crd)['x-kubernetes-validations']).toEqual([
      { rule: "self.metadata.name == 'cluster'", message: expect.any(String) },
    ]);
    expect(columns(crd).map((c) => c.name)).toEqual([
      'Enabled',
      'Velero-Namespace',
      'BSL-Approval',
      'Ready',
      'Reason',
      'Age',
    ]);
  });

  it("uses the field names of the DataProtectionApplication's spec.nonAdmin, plus tenantkit's own bounds", () => {
    expect(Object.keys(nonAdmin.properties!).sort()).toEqual(
      [
        'enable',
        'enforceBackupSpec',
        'enforceRestoreSpec',
        'enforceBSLSpec',
        'requireApprovalForBSL',
        'backupSyncPeriod',
        'garbageCollectionPeriod',
        'veleroNamespace',
        // tenantkit's: how often a NonAdminSchedule may run at most, where tenant locations may point,
        // a namespace's share of Velero's queue, how many schedules it may have, and when a queue that
        // does not move is called stalled, and when a volume operation a restarted node-agent left
        // Accepted is resumed or canceled; the namespaces whose Pods may carry Velero hook annotations.
        'minimumScheduleInterval',
        'allowedStorageEndpoints',
        'maxQueuedBackupsPerNamespace',
        'maxSchedulesPerNamespace',
        'stalledQueueWarningAfter',
        'resumeStuckVolumeOperationsAfter',
        'podHookNamespaces',
      ].sort(),
    );
    expect(all.get('.spec.nonAdmin.stalledQueueWarningAfter')).toMatchObject({
      type: 'string',
      default: '10m',
    });
    // OADP's defaults: off, no approval, sync every 2 minutes, collect garbage daily.
    expect(nonAdmin.default).toEqual({});
    expect(all.get('.spec.nonAdmin.enable')).toMatchObject({ type: 'boolean', default: false });
    expect(all.get('.spec.nonAdmin.requireApprovalForBSL')).toMatchObject({
      type: 'boolean',
      default: false,
    });
    expect(all.get('.spec.nonAdmin.backupSyncPeriod')).toMatchObject({ type: 'string', default: '2m' });
    expect(all.get('.spec.nonAdmin.garbageCollectionPeriod')).toMatchObject({
      type: 'string',
      default: '24h',
    });
    expect(all.get('.spec.nonAdmin.veleroNamespace')).toMatchObject({ type: 'string', default: 'velero' });
    expect(all.get('.status.observedGeneration')).toMatchObject({ type: 'integer' });
    expect(all.get('.status.conditions')).toMatchObject({ type: 'array' });
  });

  const withoutRules = (m: Map<string, Facts>) => {
    const root = { ...m.get('') };
    delete root['x-kubernetes-validations'];
    return new Map([...m, ['', root]]);
  };

  it('takes a Velero BackupSpec and RestoreSpec to enforce', () => {
    const diffs = [
      ...differences(
        veleroSchema('Backup', '.spec'),
        withoutRules(subtree(all, '.spec.nonAdmin.enforceBackupSpec')),
      ),
      ...differences(
        veleroSchema('Restore', '.spec'),
        withoutRules(subtree(all, '.spec.nonAdmin.enforceRestoreSpec')),
      ),
    ];
    expect(diffs, diffs.join('\n')).toEqual([]);
  });

  it('takes a BackupStorageLocation spec to enforce in which every field is optional and default is absent', () => {
    const bsl = veleroSchema('BackupStorageLocation', '.spec');
    const want = new Map(bsl);
    want.delete('.default');
    want.set('', { type: 'object' });
    want.set('.objectStorage', { nullable: true, type: 'object' });
    const diffs = differences(want, withoutRules(subtree(all, '.spec.nonAdmin.enforceBSLSpec')));
    expect(diffs, diffs.join('\n')).toEqual([]);
  });

  it('refuses at admission exactly the fields the backup capability never lets an admin enforce', () => {
    const specs: [EnforcedKind, string][] = [
      ['NonAdminBackup', 'enforceBackupSpec'],
      ['NonAdminRestore', 'enforceRestoreSpec'],
      ['NonAdminBackupStorageLocation', 'enforceBSLSpec'],
    ];
    for (const [kind, field] of specs) {
      const at = `.spec.nonAdmin.${field}`;
      const rules = (all.get(at)?.['x-kubernetes-validations'] ?? []) as { rule: string; message: string }[];
      const refused = Object.keys(unenforceable[kind]);
      expect(rules.map((r) => r.rule)).toEqual(refused.map((f) => `!has(self.${f})`));
      // CEL can only name fields the schema has.
      for (const f of refused) expect(all.has(`${at}.${f}`), `${at}.${f}`).toBe(true);
      expect(rules.map((r) => r.message)).toEqual(
        policyProblems(kind, Object.fromEntries(refused.map((f) => [f, null])), `spec.nonAdmin.${field}`),
      );
    }
  });
});
