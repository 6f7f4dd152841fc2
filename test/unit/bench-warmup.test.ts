import { afterEach, describe, expect, it } from 'vitest';
import { benchWarmup, benchWarmupMaxdepth } from '../../bench/lib/site-config.ts';

describe('bench warm-up depth', () => {
  const saved = process.env.BENCH_WARMUP_MAXDEPTH;
  const savedSeeds = process.env.BENCH_WARMUP_SEEDS;
  afterEach(() => {
    if (saved === undefined) delete process.env.BENCH_WARMUP_MAXDEPTH;
    else process.env.BENCH_WARMUP_MAXDEPTH = saved;
    if (savedSeeds === undefined) delete process.env.BENCH_WARMUP_SEEDS;
    else process.env.BENCH_WARMUP_SEEDS = savedSeeds;
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

  it("starts from the measured crawl's seeds unless BENCH_WARMUP_SEEDS says otherwise", () => {
    delete process.env.BENCH_WARMUP_SEEDS;
    const measured = [0, 1000, 2000, 3000, 4000];
    const seeds = benchWarmup(5000, measured).seeds;
    expect(seeds).toEqual(measured);
    seeds.push(1);
    expect(measured).toHaveLength(5);
    expect(benchWarmup(5000, measured).from).toBe("the measured crawl's 5 seed(s)");
  });

  it('spreads BENCH_WARMUP_SEEDS pages evenly over the site from page 1, all distinct and on it', () => {
    process.env.BENCH_WARMUP_SEEDS = '1';
    expect(benchWarmup(5000, [0]).seeds).toEqual([1]);
    expect(benchWarmup(5000, [0]).from).toBe('page 1');
    process.env.BENCH_WARMUP_SEEDS = '4';
    expect(benchWarmup(5000, [0]).seeds).toEqual([1, 1251, 2501, 3751]);
    expect(benchWarmup(5000, [0]).from).toBe('4 pages');
    process.env.BENCH_WARMUP_SEEDS = '10';
    const seeds = benchWarmup(10, [0]).seeds;
    expect(new Set(seeds).size).toBe(10);
    expect(seeds.every((n) => n >= 0 && n < 10)).toBe(true);
  });

  it('refuses a seed count that is not a whole number of pages the site has', () => {
    for (const bad of ['0', '-2', '2.5', 'many', '5001']) {
      process.env.BENCH_WARMUP_SEEDS = bad;
      expect(() => benchWarmup(5000, [0]).seeds).toThrow(
        /BENCH_WARMUP_SEEDS: an integer from 1 to the site's pages \(5000\)/,
      );
    }
  });
});
