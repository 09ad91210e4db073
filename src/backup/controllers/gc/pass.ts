// One garbage collection pass over the objects tenantkit made in Velero's namespace (controller.ts says
// what is collected and why, and schedules the passes): each kind listed by tenantkit's labels, each
// object judged by rules.ts, an orphan removed by UID, and a Backup whose namespace is gone for good
// deleted through Velero with its data.
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter } from 'prom-client';
import { finishedPhases, VeleroResources } from '../../../crds/velero.ts';
import { isAlreadyExists, isConflict, type KubeClient } from '../../../kube/client.ts';
import type { Informer } from '../../../kube/informer.ts';
import type { Logger } from '../../../kube/log.ts';
import { registry } from '../../../kube/metrics.ts';
import { type KubeObject, Resources } from '../../../kube/resources.ts';
import {
  Annotations,
  GcReasonAnnotation,
  isManaged,
  Labels,
  managedLabels,
  managedSelector,
} from '../../model.ts';
import { backupOwner, defaultLocationOf, type Location, type OwnedBackup } from '../../velero/ownership.ts';
import { canHandBack, handBack, handBackWaitMs, handedBack, heldAsRunning, isFinished } from '../held.ts';
import {
  identityOf,
  type Obj,
  type OriginKind,
  Origins,
  originNames,
  type PassResult,
  precheck,
  type TargetKind,
  Targets,
  veleroLabelValue,
} from './rules.ts';

const collected = new Counter({
  name: 'tenantkit_backup_gc_collected_total',
  help: 'Orphaned Velero-side objects removed by backup garbage collection, by kind.',
  labelNames: ['kind'],
  registers: [registry],
});

const dataDeletions = new Counter({
  name: 'tenantkit_backup_gc_backup_data_deletions_total',
  help: 'DeleteBackupRequests made by garbage collection for Backups whose namespace is gone.',
  registers: [registry],
});

/** What a pass reads from caches: an informer, or a stand-in in unit tests. */
export type Cache = Pick<Informer<KubeObject>, 'get'>;
/** The API calls a pass makes. */
export type GcApi = Pick<KubeClient, 'listAll' | 'get' | 'delete' | 'create' | 'patch'>;

export interface GcDeps {
  originCache(origin: OriginKind): Cache;
  namespaces: Cache;
  missingSince: Map<string, number>;
  record(regarding: KubeObject, reason: string, note: string, type?: 'Normal' | 'Warning'): void;
  /** The clock ages are judged by (default Date.now); tests move it to judge a day-old object now. */
  now?: () => number;
}

/** How often a pass looks whether Velero's finalizer has finished a Backup handed back to it. */
const handBackPollMs = 2_000;

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class GarbageCollector {
  private readonly client: GcApi;
  private readonly logger: Logger;
  private readonly deps: GcDeps;
  /** Secret copies found on earlier passes and kept: looked at again until they are gone. */
  private secretNames = new Set<string>();

  constructor(client: GcApi, logger: Logger, deps: GcDeps) {
    this.client = client;
    this.logger = logger;
    this.deps = deps;
  }

  /** One pass over every kind; never throws (errors are counted, the objects concerned are kept). */
  async pass(veleroNamespace: string, pass: number, signal: AbortSignal): Promise<PassResult> {
    const result: PassResult = { collected: {}, dataDeletions: 0, errors: [] };
    const seenMissing = new Set<string>();
    let deleteRequests: Obj[] = [];
    /** NACUUIDs of tenant storage locations seen this pass: the names of their Secret copies. */
    const nabslUuids = new Set<string>();
    for (const target of Targets) {
      if (signal.aborted) break;
      let items: Obj[];
      try {
        items =
          target.kind === 'Secret'
            ? await this.secretCandidates(veleroNamespace, nabslUuids, result)
            : (
                await this.client.listAll<Obj>(target.type, {
                  namespace: veleroNamespace,
                  labelSelector: managedSelector,
                })
              ).items;
      } catch (err) {
        result.errors.push(`list ${target.kind}: ${message(err)}`);
        continue;
      }
      if (target.kind === 'DeleteBackupRequest') deleteRequests = items;
      if (target.origin === Origins.nabsl && target.kind !== 'Secret') {
        for (const o of items) {
          const uuid = o.metadata.labels?.[Labels.nabslUuid];
          if (uuid) nabslUuids.add(uuid);
        }
      }
      let locations: Obj[] = [];
      if (target.kind === 'Backup') {
        // Every location, admins' included: a Backup's owner depends on which one it is in.
        try {
          locations = (
            await this.client.listAll<Obj>(VeleroResources.backupStorageLocations, {
              namespace: veleroNamespace,
            })
          ).items;
        } catch (err) {
          result.errors.push(`list BackupStorageLocation: ${message(err)}`);
          continue;
        }
      }
      for (const object of items) {
        if (signal.aborted) break;
        try {
          if (target.kind === 'Backup') {
            await this.backup(
              object,
              veleroNamespace,
              pass,
              { deleteRequests, locations },
              seenMissing,
              result,
              signal,
            );
          } else {
            await this.other(target, object, veleroNamespace, result);
          }
        } catch (err) {
          result.errors.push(`${target.kind} ${object.metadata.name}: ${message(err)}`);
        }
      }
    }
    // Forget namespaces no Backup is waiting on any more.
    for (const ns of this.deps.missingSince.keys())
      if (!seenMissing.has(ns)) this.deps.missingSince.delete(ns);
    return result;
  }

  /**
   * The credential Secret copies to judge. tenantkit holds no right to list Secrets (that would be every
   * Secret of the cluster): a copy is named by its location's NACUUID, so the candidates are the NACUUIDs
   * of the BackupStorageLocations and requests seen this pass, and the copies kept on earlier passes, each
   * read by name. A copy whose location and request were both gone before any pass saw them is missed.
   */
  private async secretCandidates(veleroNamespace: string, uuids: Set<string>, result: PassResult) {
    const found: Obj[] = [];
    const names = new Set([...uuids, ...this.secretNames]);
    const next = new Set<string>();
    for (const name of names) {
      try {
        const secret = await this.client.get<Obj>(Resources.secrets, name, veleroNamespace);
        if (!secret) continue;
        found.push(secret);
        next.add(name);
      } catch (err) {
        result.errors.push(`Secret ${name}: ${message(err)}`);
        next.add(name);
      }
    }
    this.secretNames = next;
    return found;
  }

  private async other(target: TargetKind, object: Obj, veleroNamespace: string, result: PassResult) {
    const pre = precheck(target, object, veleroNamespace, this.deps.now?.() ?? Date.now());
    if (pre.verdict === 'keep') return;
    if (pre.verdict === 'collect') {
      await this.remove(target, object, pre.reason, result);
      return;
    }
    const id = identityOf(object, target.origin)!;
    const key = `${id.namespace}/${id.name}`;
    const cached = this.deps.originCache(target.origin).get(key);
    if (cached && originNames(cached, target.origin, id.uuid)) return;
    // Confirm: the cache may not have seen the origin's status (written before this object was made).
    const live = await this.client.get<KubeObject>(target.origin.type, id.name, id.namespace);
    if (live && originNames(live, target.origin, id.uuid)) return;
    const reason = live
      ? `${target.origin.kind} ${key} names another ${target.kind}`
      : `${target.origin.kind} ${key} is gone`;
    await this.remove(target, object, reason, result);
  }

  /**
   * A Backup whose owning namespace is gone for good: its data is deleted through Velero (the one
   * irreversible step: see the file comment for when it is taken).
   */
  private async backup(
    object: Obj,
    veleroNamespace: string,
    pass: number,
    context: { deleteRequests: Obj[]; locations: Obj[] },
    seenMissing: Set<string>,
    result: PassResult,
    signal: AbortSignal,
  ) {
    if (!isManaged(object) || object.metadata.namespace !== veleroNamespace) return;
    if (object.metadata.deletionTimestamp) return;
    const ns = await this.goneOwner(object, pass, context.locations, seenMissing);
    if (ns === undefined) return;
    const phase = typeof object.status?.phase === 'string' ? object.status.phase : '';
    if (!(finishedPhases as readonly string[]).includes(phase)) return;
    const name = object.metadata.name!;
    const requests = context.deleteRequests.filter((r) => r.spec?.backupName === name);
    // A request Velero has not processed yet is already doing the job.
    if (requests.some((r) => r.status?.phase !== 'Processed')) return;
    const held = requests.find((r) =>
      heldAsRunning(object, (r.status?.errors as string[] | undefined) ?? []),
    );
    if (held) {
      if (!(await this.handBackHeld(object, held, signal))) return;
    } else if (!(await this.removeRefused(requests))) return;
    await this.requestDataDeletion(object, ns, veleroNamespace, result);
  }

  /**
   * Velero refused GC's request because its tracker race holds the finished Backup as running (held.ts):
   * the Backup is handed back to Velero's finalizer, and once it is finished again the refused request
   * goes, so that a new one can be made in this pass. True when it can; false leaves it to a later pass
   * (still finalizing, or handed back too often: then only a restart of Velero ends it, as the Event says).
   */
  private async handBackHeld(object: Obj, refused: Obj, signal: AbortSignal): Promise<boolean> {
    const attempt = handedBack(object).attempt + 1;
    const name = object.metadata.name!;
    const errors = ((refused.status?.errors as string[] | undefined) ?? []).join('; ');
    if (!canHandBack(object, attempt)) {
      this.deps.record(
        object,
        'VeleroHoldsBackupAsRunning',
        `Velero did not delete backup ${name}: ${errors}; its Backup has finished, but Velero still counts it as running (a race inside Velero v1.18) and tenantkit handed it back to Velero's finalizer ${attempt - 1} times already: ask an admin to restart Velero (kubectl -n ${object.metadata.namespace} rollout restart deployment/velero)`,
        'Warning',
      );
      return false;
    }
    await handBack(this.client, object, attempt);
    this.deps.record(
      object,
      'BackupHandedBackToVelero',
      `Velero did not delete backup ${name}: ${errors}; its Backup has finished, but Velero still counts it as running (a race inside Velero v1.18): garbage collection handed it back to Velero's finalizer, which ends that, and asks again once it has finished again`,
    );
    const until = Date.now() + handBackWaitMs;
    while (!signal.aborted && Date.now() < until) {
      await sleep(handBackPollMs, undefined, { signal }).catch(() => {});
      const now = await this.client.get<Obj>(VeleroResources.backups, name, object.metadata.namespace);
      if (!now) return false;
      if (!isFinished(now)) continue;
      await this.client
        .delete(VeleroResources.deleteBackupRequests, refused.metadata.name!, refused.metadata.namespace, {
          preconditions: { uid: refused.metadata.uid! },
        })
        .catch((err: unknown) => {
          if (!isConflict(err)) throw err;
        });
      return true;
    }
    return false;
  }

  /**
   * Requests Velero processed while the Backup stayed (it refused them: its location read-only or
   * unavailable, say) go, so that this pass asks again under the same name. Those of a NonAdminBackup go
   * anyway once it is gone (its DeleteBackupRequests are looked at first); a schedule run's name no
   * NonAdminBackup, and were kept a day. True when the name is free.
   */
  private async removeRefused(requests: Obj[]): Promise<boolean> {
    for (const refused of requests) {
      const removed = await this.client
        .delete(VeleroResources.deleteBackupRequests, refused.metadata.name!, refused.metadata.namespace, {
          preconditions: { uid: refused.metadata.uid! },
        })
        .catch((err: unknown) => {
          // Replaced meanwhile by a newer request: that one does the job.
          if (isConflict(err)) return undefined;
          throw err;
        });
      if (removed === undefined) return false;
    }
    return true;
  }

  /** The namespace that owned `object` when it was found missing on an earlier pass and still is. */
  private async goneOwner(object: Obj, pass: number, locations: Obj[], seenMissing: Set<string>) {
    // Whose backup this is, by the rules backup sync uses (velero/ownership.ts). A backup in a tenant's own
    // storage location is never GC's: that location goes with its namespace, and the data is in the
    // tenant's own bucket. Nobody's backups (no single origin namespace, unknown location) are kept.
    const owner = backupOwner(
      object as OwnedBackup,
      (name) => locations.find((l) => l.metadata.name === name) as Location | undefined,
      () => defaultLocationOf(locations as Location[]),
    );
    if (owner.namespace === undefined || owner.via !== 'tenantkit-records') return undefined;
    const ns = owner.namespace;
    // The namespace exists (or is only terminating): its NonAdminBackup, or backup sync, owns this.
    if (this.deps.namespaces.get(ns)) return undefined;
    if (await this.client.get(Resources.namespaces, ns)) return undefined;
    seenMissing.add(ns);
    const since = this.deps.missingSince.get(ns);
    if (since === undefined) {
      this.deps.missingSince.set(ns, pass);
      this.logger.info(
        { kind: 'Backup', name: object.metadata.name, originNamespace: ns },
        'origin namespace is gone; the backup data is deleted if it is still gone on the next pass',
      );
      return undefined;
    }
    return since < pass ? ns : undefined;
  }

  /** Asks Velero to delete the backup and its data, with a DeleteBackupRequest named by its NACUUID. */
  private async requestDataDeletion(object: Obj, ns: string, veleroNamespace: string, result: PassResult) {
    const name = object.metadata.name!;
    // The origin annotations the Backup carries (a NonAdminBackup's, or a NonAdminSchedule's for its runs).
    const originKeys = [
      Annotations.nabName,
      Annotations.nabNamespace,
      Annotations.nasName,
      Annotations.nasNamespace,
    ];
    const origin = Object.fromEntries(
      originKeys.flatMap((k) => {
        const v = object.metadata.annotations?.[k];
        return v ? [[k, v]] : [];
      }),
    );
    const originName = origin[Annotations.nabName] ?? origin[Annotations.nasName] ?? '';
    const reason = `namespace ${ns} of ${originName || 'its origin'} is gone`;
    try {
      await this.client.create(VeleroResources.deleteBackupRequests, {
        metadata: {
          // Named and labelled as the NonAdminBackup controller names its own: by the Backup's NACUUID,
          // which is its name (also for schedule runs, as backup sync treats them).
          name,
          namespace: veleroNamespace,
          labels: {
            ...managedLabels,
            ...(name.length <= 63 ? { [Labels.nabUuid]: name } : {}),
            [Labels.backupName]: veleroLabelValue(name),
            ...(object.metadata.uid ? { [Labels.backupUid]: object.metadata.uid } : {}),
          },
          annotations: { ...origin, [GcReasonAnnotation]: reason },
        },
        spec: { backupName: name },
      } as KubeObject);
    } catch (err) {
      // A request of that name exists (maybe just processed and not yet collected): the next pass decides.
      if (isAlreadyExists(err)) return;
      throw err;
    }
    result.dataDeletions++;
    dataDeletions.inc();
    this.logger.info(
      {
        kind: 'Backup',
        name,
        namespace: veleroNamespace,
        origin: `${ns}/${originName}`,
        reason,
      },
      'garbage collection: asked Velero to delete the backup and its data',
    );
    this.deps.record(
      object,
      'BackupDataDeletionRequested',
      `${reason}: asked Velero to delete backup ${name} and its data (DeleteBackupRequest ${name})`,
    );
  }

  private async remove(target: TargetKind, object: Obj, reason: string, result: PassResult) {
    try {
      const deleted = await this.client.delete(
        target.type,
        object.metadata.name!,
        object.metadata.namespace,
        {
          preconditions: { uid: object.metadata.uid! },
        },
      );
      if (!deleted) return;
    } catch (err) {
      // Replaced by a newer object of the same name since the list: not the one judged.
      if (isConflict(err)) return;
      throw err;
    }
    result.collected[target.kind] = (result.collected[target.kind] ?? 0) + 1;
    collected.inc({ kind: target.kind });
    const id = identityOf(object, target.origin);
    this.logger.info(
      {
        kind: target.kind,
        name: object.metadata.name,
        namespace: object.metadata.namespace,
        ...(id ? { origin: `${id.namespace}/${id.name}`, nacuuid: id.uuid } : {}),
        reason,
      },
      'garbage collected',
    );
  }
}
