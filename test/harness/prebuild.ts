// Builds what later test files need (Velero; where the node can run, its runtime, helm and the images)
// while the first files run, at low priority so those files keep the CPU they ask for. A file that needs
// one of these before it is done waits for this build (build.ts' lock) instead of compiling it again.
// With a warm cache there is nothing to do. The sequencer runs the files that need none of it first.
import { buildInBackground, stopBuilds } from '../../devenv/controlplane/build.ts';
import { ensureHelm } from '../../devenv/helm/build.ts';
import { ensurePostgresImage, ensureTenantkitImage, ensureVeleroImage } from '../../devenv/images/build.ts';
import { ensureNodeBinaries } from '../../devenv/node/build.ts';
import { ensureNetworkPolicyEnforcer } from '../../devenv/node/netpol-build.ts';
import { ensureVeleroBinaries } from '../../devenv/velero/build.ts';

export interface Prebuild {
  /** Ends builds still running (the run is over). */
  stop(): void;
}

export function prebuild(withNode: boolean, log: (line: string) => void): Prebuild {
  buildInBackground();
  const progress = (line: string) => log(`[prebuild] ${line.trim()}`);
  let stopped = false;
  const steps: (() => Promise<unknown>)[] = [
    () => ensureVeleroBinaries(progress),
    ...(withNode
      ? [
          () => ensureNodeBinaries(progress),
          () => ensureNetworkPolicyEnforcer(progress),
          () => ensureHelm(progress),
          () => ensureVeleroImage({ progress }),
          () => ensurePostgresImage({ progress }),
          () => ensureTenantkitImage({ progress }),
        ]
      : []),
  ];
  void (async () => {
    const started = Date.now();
    for (const step of steps) {
      if (stopped) return;
      // A failure here is the file's to report: it builds again, in the foreground, and fails there.
      await step().catch((err: Error) =>
        progress(`failed (a test file will build it again): ${err.message}`),
      );
    }
    progress(`done in ${Math.round((Date.now() - started) / 1000)} s`);
  })();
  return {
    stop() {
      stopped = true;
      stopBuilds();
    },
  };
}
