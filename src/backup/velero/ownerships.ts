// The caches the ownership rules read (velero/ownership.ts), bundled once for the admission webhook and
// the controllers: which namespace each Velero Backup belongs to now, which NonAdminBackups name it, and
// the checks both sides share (may this namespace restore from, or have a NonAdminBackup for, a Backup).
import { type NonAdminBackup, NonAdminBackupCrd } from '../../crds/backup.ts';
import { VeleroResources } from '../../crds/velero.ts';
import { ByNamespace, type Informer } from '../../kube/informer.ts';
import type { Manager } from '../../kube/manager.ts';
import { type KubeObject, Resources } from '../../kube/resources.ts';
import { Index, Labels, type VeleroBackup } from '../model.ts';
import type { BackupPolicy } from '../policy/config.ts';
import {
  backupOwner,
  defaultLocationOf,
  type Location,
  type NamespaceLike,
  type Ownership,
  ownerNow,
} from './ownership.ts';

type Bsl = KubeObject & Location;
/** What a NAB is indexed by in Index.nabByBackupRef: the Backup its status names and the one its label asks for. */
const refsOf = (nab: NonAdminBackup): string[] => {
  const ns = nab.metadata.namespace;
  const refs = new Set<string>();
  const status = nab.status?.veleroBackup?.name;
  if (status) refs.add(`${ns}/${status}`);
  const label = nab.metadata.labels?.[Labels.syncedFrom];
  if (label) refs.add(`${ns}/${label}`);
  return [...refs];
};

export interface Ownerships {
  /** Every Velero Backup (not only tenantkit's: a tenant's bucket may hold Backups without its labels). */
  backups: Informer<VeleroBackup>;
  nabs: Informer<NonAdminBackup>;
  backup(veleroNamespace: string, name: string): VeleroBackup | undefined;
  ownerOf(backup: VeleroBackup): Ownership;
  /** NABs of `namespace` that name `backupName` in their status or their sync label. */
  nabsFor(namespace: string, backupName: string): NonAdminBackup[];
  /** The namespace of that name as it is now (cache), if it exists. */
  namespace(name: string): (KubeObject & NamespaceLike) | undefined;
  /** Why `namespace` may not restore from `backup`, or undefined when it may (see restoreProblem). */
  restoreProblem(backup: VeleroBackup, namespace: string): string | undefined;
}

/**
 * The caches the ownership rules read, from `manager` (shared with every controller that asks). The
 * webhook passes `nabs: false`: it needs no NonAdminBackup cache (nor the right to list them).
 */
export function ownerships(manager: Manager, options: { nabs?: boolean } = {}): Ownerships {
  const backups = manager.informer<VeleroBackup>(VeleroResources.backups);
  const bsls = manager.informer<Bsl>(VeleroResources.backupStorageLocations);
  const namespaces = manager.informer<KubeObject & NamespaceLike>(Resources.namespaces);
  const cache = options.nabs === false ? undefined : manager.informer<NonAdminBackup>(NonAdminBackupCrd.type);
  cache?.addIndex(Index.nabByBackupRef, refsOf);
  const nabs = () => {
    if (!cache) throw new Error('ownerships() was made without the NonAdminBackup cache');
    return cache;
  };
  return {
    backups,
    get nabs() {
      return nabs();
    },
    backup: (ns, name) => backups.get(`${ns}/${name}`),
    ownerOf(backup) {
      const ns = backup.metadata.namespace!;
      const claimed = backupOwner(
        backup,
        (name) => bsls.get(`${ns}/${name}`),
        () => defaultLocationOf(bsls.byIndex(ByNamespace, ns)),
      );
      // The namespace of that name now, as an instance and an organization: never the name alone.
      return ownerNow(claimed, backup, (name) => namespaces.get(name));
    },
    nabsFor: (namespace, backupName) => nabs().byIndex(Index.nabByBackupRef, `${namespace}/${backupName}`),
    namespace: (name) => namespaces.get(name),
    restoreProblem(backup, namespace) {
      return restoreProblem(this, backup, namespace);
    },
  };
}

/**
 * Why `namespace` may not restore from Velero Backup `backup`, or undefined when it may: the backup must
 * be the namespace's now (velero/ownership.ts: its instance or its organization, never its name alone).
 */
function restoreProblem(o: Ownerships, backup: VeleroBackup, namespace: string): string | undefined {
  const owner = o.ownerOf(backup);
  if (owner.namespace === namespace) return undefined;
  const refused = `Velero Backup ${backup.metadata.name} does not belong to namespace ${namespace}`;
  return owner.namespace !== undefined
    ? `${refused} (it is namespace ${owner.namespace}'s)`
    : `${refused}: ${owner.why}`;
}

/**
 * Why `namespace` may not have a NAB for Velero Backup `name`, or undefined when it may. The one check the
 * webhook and the controller share.
 */
export function adoptionProblem(
  o: Ownerships,
  policy: BackupPolicy,
  namespace: string,
  name: string,
): string | undefined {
  const label = `label ${Labels.syncedFrom}=${name}`;
  const fix = 'only tenantkit sets this label; remove it (or delete this NonAdminBackup)';
  const backup = o.backup(policy.veleroNamespace, name);
  // One message for "missing" and "someone else's": a tenant learns nothing about other tenants' backups.
  if (!backup || o.ownerOf(backup).namespace !== namespace) {
    return `${label} names a Velero Backup that does not exist or does not belong to namespace ${namespace}; ${fix}`;
  }
  return undefined;
}
