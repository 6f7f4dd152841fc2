/**
 * The REST load bench (bench/scenarios/sizes-rest.ts) at a CI size: 40 busy keep-alive clients against a server
 * whose in-flight bound is 4, on a private Redis and the local Kafka. The same path as the 2,000-client run; what
 * is asserted is not a timing: the bound is reached (503s), no probe goes unanswered, the server answers 200 after
 * the load, no stats write fails, and its memory stays far under the target.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Numbers } from '../../bench/lib/scenario.ts';
import { standaloneContext } from '../../bench/lib/standalone-context.ts';
import { run } from '../../bench/scenarios/sizes-rest.ts';

const ENV = { BENCH_REST_CLIENTS: '40', BENCH_REST_LOAD_S: '5', REST_MAX_IN_FLIGHT: '4', BENCH_REDIS: 'private' };

describe('bench sizes-rest at a CI size', () => {
  const saved: Record<string, string | undefined> = {};
  beforeAll(() => {
    for (const [name, value] of Object.entries(ENV)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
  });
  afterAll(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('refuses past the bound with 503, answers every probe, and serves a 200 after the load', async () => {
    const { ctx, inputs, close } = standaloneContext('sizes-rest', () => {});
    let numbers: Numbers;
    try {
      numbers = await run(ctx);
    } finally {
      await close();
    }
    expect(inputs.clients).toBe(40);
    expect(numbers.probes).toBeGreaterThan(10);
    expect(numbers.probe_timeouts).toBe(0);
    expect(numbers.load_503_share).toBeGreaterThan(0);
    expect(numbers.load_errors).toBe(0);
    expect(numbers.recovery_s).toEqual(expect.any(Number));
    expect(Number.isFinite(numbers.recovery_s)).toBe(true);
    expect(numbers.stats_warnings).toBe(0);
    expect(numbers.server_peak_rss_mb).toBeLessThan(600);
  }, 60_000);
});
