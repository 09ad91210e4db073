// Transparency: a Role and RoleBinding in Velero's namespace per tenant namespace, so a tenant can read
// the Velero Backups and Restores made for it (NAB: NonAdminBackup, NAR: NonAdminRestore), and only those.
export {
  registerTransparencyController,
  TransparencyReconciler,
  type TransparencySources,
} from './reconciler.ts';
