/** bench/lib/ramp.ts: pages/s to 90 %, the steady rate and the time to reach it, from arrival times. */
import { describe, expect, it } from 'vitest';
import { ramp } from '../../bench/lib/ramp.ts';

/** `rates[i]` pages evenly spread over second i, from t0. */
function arrivals(rates: number[], t0 = 1_000_000): number[] {
  return rates.flatMap((r, i) => Array.from({ length: r }, (_, k) => t0 + i * 1000 + Math.floor((k * 1000) / r)));
}

describe('ramp', () => {
  it('finds the steady rate and when it is first reached', () => {
    const r = ramp(arrivals([5, 10, 20, 40, 80, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 10, 1]));
    expect(r.steadyPagesPerS).toBe(100);
    expect(r.convergeS).toBe(6);
    expect(r.pages).toBe(1166);
    expect(r.p90PagesPerS).toBeGreaterThan(70);
    expect(r.p90PagesPerS).toBeLessThan(100);
    expect(r.pagesPerS).toBeLessThan(r.p90PagesPerS);
    expect(r.firstBuckets.slice(0, 3)).toEqual([5, 10, 20]);
  });

  it('leaves a tail of timeouts out of pages/s to 90 %', () => {
    const times = arrivals(Array.from({ length: 10 }, () => 100));
    const tail = [...times, ...Array.from({ length: 20 }, (_, i) => 1_000_000 + 60_000 + i)];
    const r = ramp(tail);
    expect(r.pagesPerS).toBeLessThan(20);
    expect(r.p90PagesPerS).toBeGreaterThan(95);
    expect(r.convergeS).toBe(2);
  });

  it('does not divide by zero', () => {
    expect(ramp([]).pagesPerS).toBe(0);
    expect(ramp([5]).p90PagesPerS).toBe(0);
  });
});
