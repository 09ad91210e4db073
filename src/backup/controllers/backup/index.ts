// The NonAdminBackup controller (NAB: NonAdminBackup): a tenant's backup as a Velero Backup in Velero's
// namespace. reconciler.ts reconciles, queue-limit.ts holds a namespace to its share of Velero's queue,
// delete.ts carries out spec.deleteBackup.
export { NabReconciler, type NabSources, registerNabController } from './reconciler.ts';
