import { defineConfig } from 'vitest/config';
import { integrationFiles, lanes } from './test/harness/lanes.ts';
import { BuildsLastSequencer } from './test/harness/sequencer.ts';

// Three tiers: unit tests are pure and parallel; integration tests run in `lanes` workers, each with a
// real control plane of its own that globalSetup starts once per run (test/harness/global-setup.ts); the
// files that need the local node run last, one at a time (test/harness/lanes.ts).
const files = integrationFiles(import.meta.dirname);
const integration = {
  globalSetup: ['test/harness/global-setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 120_000,
};

export default defineConfig({
  // graphql ships CommonJS (main) and ESM (module) builds without an exports map. Node loads the
  // CommonJS one for everybody; Vite would hand our sources the ESM one while graphql-ws and graphql-http,
  // loaded by Node, get CommonJS, and graphql refuses a schema from "another realm". One build for all.
  resolve: { alias: { graphql: 'graphql/index.js' } },
  test: {
    // Files that need Velero or the node last, so that their builds overlap the first files.
    sequence: { sequencer: BuildsLastSequencer },
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: files.other,
          ...integration,
          // One file at a time per worker, each worker on its own control plane (global-setup.ts).
          maxWorkers: lanes,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'node',
          include: files.node,
          ...integration,
          // One node per machine: these files run one at a time, after the others.
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
