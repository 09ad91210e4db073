// The backup controllers, one folder per kind (backup/, restore/, download/, location/, schedule/) plus
// backup sync (sync/), garbage collection (gc/), transparency (transparency/) and the resumption of Velero
// volume operations its node-agent left stuck (resume/); what they share is here
// (caches.ts, back-off.ts, velero-objects.ts, queue.ts, progress.ts). Glossary: NAB NonAdminBackup, NAR
// NonAdminRestore, NADR NonAdminDownloadRequest, NABSL NonAdminBackupStorageLocation, NAS NonAdminSchedule,
// BSL Velero's BackupStorageLocation, GC garbage collection.
import type { Manager } from '../../kube/manager.ts';
import { registerNabController } from './backup/index.ts';
import { registerNadrController } from './download/index.ts';
import { registerGarbageCollector } from './gc/index.ts';
import { registerNabslController } from './location/index.ts';
import { registerNarController } from './restore/index.ts';
import { registerResumeControllers } from './resume/index.ts';
import { registerScheduleController } from './schedule/index.ts';
import { registerSyncController } from './sync/index.ts';
import { registerTransparencyController } from './transparency/index.ts';

/** Every backup controller, on `manager`. */
export function registerBackupControllers(manager: Manager): void {
  registerNabController(manager);
  registerNabslController(manager);
  registerNarController(manager);
  registerNadrController(manager);
  registerTransparencyController(manager);
  registerGarbageCollector(manager);
  registerScheduleController(manager);
  registerSyncController(manager);
  registerResumeControllers(manager);
}
