import { defineConfig } from 'vitest/config';

/**
 * Six tiers (docs/style.md §9): unit (no network), integration, e2e, contract and poison (real Redis + Kafka, started by the
 * global setup when not running), cdk (assertions on the synthesized template).
 */
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
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          // The handlers' Powertools metrics would print an EMF document per invocation.
          env: { POWERTOOLS_METRICS_DISABLED: 'true' },
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          // Scrapy Cluster's documented requests through the local cluster, replies and pages checked field by field.
          name: 'contract',
          include: ['test/contract/**/*.test.ts'],
          env: { POWERTOOLS_METRICS_DISABLED: 'true' },
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          // Hostile requests, hostile pages and a 10k fuzz through the real local cluster (docs/design.md §10).
          name: 'poison',
          include: ['test/poison/**/*.test.ts'],
          env: { POWERTOOLS_METRICS_DISABLED: 'true' },
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'cdk',
          include: ['test/cdk/**/*.test.ts'],
          testTimeout: 120_000,
        },
      },
    ],
  },
});
