// The NonAdminRestore controller (NAR: NonAdminRestore): a tenant's restore as a Velero Restore in
// Velero's namespace. reconciler.ts reconciles, request.ts checks what the NAR asks for, guard.ts is the
// controller's side of Velero's restore guard plugin, repository-key.ts the kopia repository password check.
export { NarReconciler, type NarSources, registerNarController } from './reconciler.ts';
