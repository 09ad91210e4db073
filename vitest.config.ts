import { defineConfig } from 'vitest/config';
import { BuildsLastSequencer } from './test/harness/sequencer.ts';

// Two tiers: unit tests are pure and parallel; integration tests share one real control plane that
// globalSetup starts once per run (see test/harness/global-setup.ts).
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
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          globalSetup: ['test/harness/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // One control plane is shared; files run one at a time so that cluster-scoped objects
          // (CRDs, webhooks, ClusterRoles) of one file never race another's.
          fileParallelism: false,
        },
      },
    ],
  },
});
