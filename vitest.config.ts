import { defineConfig } from 'vitest/config';

// Two tiers: unit tests are pure and parallel; integration tests share one real control plane that
// globalSetup starts once per run (see test/harness/global-setup.ts).
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
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
