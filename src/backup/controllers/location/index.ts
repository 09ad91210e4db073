// The NonAdminBackupStorageLocation controller (NABSL: NonAdminBackupStorageLocation; BSL: Velero's
// BackupStorageLocation): a tenant's storage location as a Velero BSL. reconciler.ts reconciles,
// approval.ts is the admin's approval, objects.ts what is made in Velero's namespace, probe.ts asks the
// endpoint; lookup.ts and use.ts are how the backup, restore and schedule controllers see a location.
export { NabslReconciler, type NabslSources, registerNabslController } from './reconciler.ts';
