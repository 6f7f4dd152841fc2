import { describe, expect, it } from 'vitest';
import { median, mergeRounds } from '../../bench/lib/rounds.ts';

describe('bench rounds', () => {
  it('takes the median, the lower middle value of an even count', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2);
    expect(median([7])).toBe(7);
    expect(() => median([])).toThrow(/no values/);
  });

  it('merges rounds into medians, each round listed in <metric>_rounds', () => {
    const merged = mergeRounds([
      { percore: 3.1, pages: 5000, breakdown: 'evalsha 1×' },
      { percore: 3.8, pages: 5000, breakdown: 'evalsha 2×' },
      { percore: 3.5, pages: 5001, breakdown: 'evalsha 3×' },
    ]);
    expect(merged.percore).toBe(3.5);
    expect(merged.percore_rounds).toBe('3.1 / 3.8 / 3.5');
    expect(merged.pages).toBe(5000);
    // Not a number: the last round's, with no list.
    expect(merged.breakdown).toBe('evalsha 3×');
    expect(merged.breakdown_rounds).toBeUndefined();
  });

  it('leaves out the rounds that lack a metric (a peer that failed once) and marks them in the list', () => {
    const merged = mergeRounds([{ a: 1, dom: 9 }, { a: 5 }, { a: 3, dom: Number.NaN }]);
    expect(merged.a).toBe(3);
    expect(merged.dom).toBe(9);
    expect(merged.dom_rounds).toBe('9 / – / –');
  });

  it('lists nothing for a single round', () => {
    expect(mergeRounds([{ a: 2 }])).toEqual({ a: 2 });
  });
});
