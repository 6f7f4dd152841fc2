import { defineConfig } from 'vitest/config';

/**
 * Six tiers (docs/style.md §9): unit (no network), integration, e2e, contract and poison (real Redis + Kafka,
 * started by the global setup when not running), cdk (assertions on the synthesized template).
 */
/** A tier that runs the real local cluster (Redis + Kafka, started by the global setup): one file at a time. */
function clusterTier(name: string, testTimeout: number) {
  return {
    test: {
      name,
      include: [`test/${name}/**/*.test.ts`],
      env: { POWERTOOLS_METRICS_DISABLED: 'true' },
      globalSetup: ['test/helpers/global-setup.ts'],
      testTimeout,
      hookTimeout: 180_000,
      fileParallelism: false,
    },
  };
}

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          env: { POWERTOOLS_METRICS_DISABLED: 'true' },
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      // End to end: the handlers' Powertools metrics would print an EMF document per invocation.
      clusterTier('e2e', 120_000),
      // Scrapy Cluster's documented requests through the local cluster, replies and pages checked field by field.
      clusterTier('contract', 120_000),
      // Hostile requests, hostile pages and a 10k fuzz through the real local cluster (docs/design.md §10).
      clusterTier('poison', 180_000),
      {
        test: {
          name: 'cdk',
          include: ['test/cdk/**/*.test.ts'],
          testTimeout: 120_000,
          // Synthesizing a stack and bundling with esbuild in a setup hook takes minutes on a loaded machine.
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
