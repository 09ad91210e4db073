// The NonAdminSchedule controller (NAS: NonAdminSchedule): a tenant's schedule as a Velero Schedule.
// reconciler.ts reconciles, hold.ts decides when the Velero Schedule is held paused, runs.ts is what the
// tenant sees of its runs.
export { registerScheduleController, ScheduleReconciler, type ScheduleSources } from './reconciler.ts';
