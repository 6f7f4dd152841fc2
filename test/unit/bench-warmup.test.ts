import { afterEach, describe, expect, it } from 'vitest';
import { benchWarmupMaxdepth } from '../../bench/lib/site-config.ts';

describe('bench warm-up depth', () => {
  const saved = process.env.BENCH_WARMUP_MAXDEPTH;
  afterEach(() => {
    if (saved === undefined) delete process.env.BENCH_WARMUP_MAXDEPTH;
    else process.env.BENCH_WARMUP_MAXDEPTH = saved;
  });

  it('is 3 by default, never deeper than the measured crawl', () => {
    delete process.env.BENCH_WARMUP_MAXDEPTH;
    expect(benchWarmupMaxdepth(3)).toBe(3);
    expect(benchWarmupMaxdepth(1)).toBe(1);
  });

  it('takes BENCH_WARMUP_MAXDEPTH, 0 included', () => {
    process.env.BENCH_WARMUP_MAXDEPTH = '2';
    expect(benchWarmupMaxdepth(3)).toBe(2);
    process.env.BENCH_WARMUP_MAXDEPTH = '0';
    expect(benchWarmupMaxdepth(3)).toBe(0);
  });

  it('refuses what is not a maxdepth a crawl may have', () => {
    for (const bad of ['4', '-1', '1.5', 'deep']) {
      process.env.BENCH_WARMUP_MAXDEPTH = bad;
      expect(() => benchWarmupMaxdepth(3)).toThrow(/BENCH_WARMUP_MAXDEPTH: an integer from 0 to 3/);
    }
  });
});
