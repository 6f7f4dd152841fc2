/**
 * Throughput and ramp-up from page arrival times (epoch ms), as the `realweb` scenario reports them for every system:
 * on a simulated internet a crawl ends in a tail of timeouts and retries that each system sets its own way, so
 * besides pages/s from the first page to the last this gives pages/s to 90 % of the pages, the steady rate, and how
 * long after the first page the rate first reaches 90 % of it (how fast concurrency converges).
 */

export interface Ramp {
  pages: number;
  /** First to last page, seconds, and (pages - 1) / that. */
  seconds: number;
  pagesPerS: number;
  /** First page to the page at 90 % of them, seconds, and the pages/s over it. */
  p90Seconds: number;
  p90PagesPerS: number;
  /** Median pages/s of the 1 s buckets between 10 % and 90 % of the pages. */
  steadyPagesPerS: number;
  /** Seconds from the first page to the end of the first 2 s window whose rate reaches 90 % of the steady rate. */
  convergeS: number;
  /** Pages per 1 s bucket from the first page, the first 30 (a sparkline for the results file). */
  firstBuckets: number[];
}

/** The {@link Ramp} of these arrival times (any order). */
export function ramp(times: readonly number[]): Ramp {
  const t = [...times].sort((a, b) => a - b);
  const n = t.length;
  const first = t[0] ?? 0;
  const last = t[n - 1] ?? 0;
  const seconds = (last - first) / 1000;
  const at90 = t[Math.max(0, Math.ceil(0.9 * n) - 1)] ?? first;
  const p90Seconds = (at90 - first) / 1000;
  const buckets: number[] = new Array(Math.max(1, Math.ceil(seconds) + 1)).fill(0);
  for (const ms of t) buckets[Math.floor((ms - first) / 1000)] = (buckets[Math.floor((ms - first) / 1000)] ?? 0) + 1;
  const from = Math.floor(((t[Math.floor(0.1 * (n - 1))] ?? first) - first) / 1000);
  const to = Math.floor((at90 - first) / 1000);
  const middle = buckets.slice(from, Math.max(from + 1, to)).sort((a, b) => a - b);
  const steady = middle[Math.floor((middle.length - 1) / 2)] ?? 0;
  let convergeS = Number.NaN;
  for (let i = 0; i < buckets.length; i++) {
    const avg = ((buckets[i] ?? 0) + (buckets[i + 1] ?? buckets[i] ?? 0)) / 2;
    if (steady > 0 && avg >= 0.9 * steady) {
      // The end of the 2 s window: the rate held 90 % of steady over it.
      convergeS = i + 2;
      break;
    }
  }
  return {
    pages: n,
    seconds,
    pagesPerS: n > 1 && seconds > 0 ? (n - 1) / seconds : 0,
    p90Seconds,
    p90PagesPerS: p90Seconds > 0 ? (Math.ceil(0.9 * n) - 1) / p90Seconds : 0,
    steadyPagesPerS: steady,
    convergeS,
    firstBuckets: buckets.slice(0, 30),
  };
}
