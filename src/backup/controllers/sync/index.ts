// Backup sync (NAB: NonAdminBackup): a NonAdminBackup for every Velero Backup a tenant namespace owns and
// has none for. controller.ts runs it, adopt.ts makes such NABs and lets the NAB controller adopt the
// Backup they name.
export { registerSyncController } from './controller.ts';
