/**
 * Rounds of one measurement merged into one set of numbers. On a shared 2-core machine one crawl's CPU per page
 * moves between runs of the same code by more than most changes move it, so a scenario repeats its rounds and reports
 * the median of each metric, with every round's value beside it.
 */
import type { Numbers } from './scenario.ts';

/** The median of `values` (the lower middle one of an even count: always a value that was measured). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}

/**
 * Per metric, the median over the rounds that have it (a peer that failed in one round is left out of that
 * round); with more than one round, every round's value in `<metric>_rounds` (`3.1 / 3.8 / 3.5`, `–` where a
 * round lacks it or measured NaN). A metric that is not a number (a breakdown string) keeps the last round's value.
 */
export function mergeRounds(rounds: readonly Numbers[]): Numbers {
  const keys = [...new Set(rounds.flatMap((r) => Object.keys(r)))];
  const out: Numbers = {};
  const isNumber = (v: unknown): v is number => typeof v === 'number' && !Number.isNaN(v);
  for (const key of keys) {
    const present = rounds.map((r) => r[key]);
    const numbers = present.filter(isNumber);
    if (numbers.length === 0) {
      const last = present.filter((v) => v !== undefined).at(-1);
      if (last !== undefined) out[key] = last;
      continue;
    }
    out[key] = median(numbers);
    if (rounds.length > 1) out[`${key}_rounds`] = present.map((v) => (isNumber(v) ? v : '–')).join(' / ');
  }
  return out;
}
