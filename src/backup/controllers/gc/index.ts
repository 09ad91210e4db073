// Garbage collection (GC) of the Velero-side objects whose tenant object is gone. controller.ts schedules
// the passes, pass.ts is one pass, rules.ts decides what is an orphan.
export { registerGarbageCollector } from './controller.ts';
