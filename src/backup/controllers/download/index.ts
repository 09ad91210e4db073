// The NonAdminDownloadRequest controller (NADR: NonAdminDownloadRequest): a tenant's request for a log or
// result file, as a Velero DownloadRequest. reconciler.ts reconciles, resolve.ts finds the Velero object
// behind the tenant's NonAdminBackup or NonAdminRestore.
export { NadrReconciler, type NadrSources, registerNadrController } from './reconciler.ts';
