// Resuming Velero volume operations its node-agent left Accepted (step.ts: when and how).
export { type ResumeSources, registerResumeControllers, VolumeOperationResumer } from './reconciler.ts';
export { nextStep, ResumedAtAnnotation, type Step } from './step.ts';
