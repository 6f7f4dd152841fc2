/**
 * Timing helpers for benchmarks: a monotonic clock (process.hrtime.bigint), latency samples and
 * nearest-rank percentiles. Benchmarks print these numbers; tests never assert on them.
 */

/** Monotonic now, in nanoseconds. */
export function nowNs(): bigint {
  return process.hrtime.bigint();
}

/** Milliseconds elapsed since `start` (from {@link nowNs}). */
export function msSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** Nearest-rank percentile of an ascending array (`p` in 0..100). NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export interface LatencySummary {
  n: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Summary statistics of latency samples (same unit as the samples). */
export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((acc, v) => acc + v, 0);
  return {
    n: sorted.length,
    min: sorted[0] ?? Number.NaN,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

/** Rounds to `digits` decimals (results files stay readable). */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
