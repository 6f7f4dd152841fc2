/** The crawler's fetch slots (lib/crawl/crawler/slots.ts): the controller's ticks, faster while it ramps up. */
import { describe, expect, it } from 'vitest';
import { ConcurrencyController, type LoadSignals } from '../../lib/crawl/crawler/concurrency.ts';
import { FetchSlots } from '../../lib/crawl/crawler/slots.ts';
import { RecordingLog } from '../helpers/fake-stores.ts';

const IDLE: LoadSignals = { loopDelayMs: 5, cpuShare: 0.1, heapShare: 0.1, rssShare: 0.1, bodyShare: 0 };

describe('FetchSlots', () => {
  it('ticks at half its interval while the controller doubles, then at its interval', async () => {
    const controller = new ConcurrencyController({ min: 1, max: 8, initial: 1 });
    const at: number[] = [];
    const limits: number[] = [];
    let slots: FetchSlots | undefined;
    const tickMs = 200;
    slots = new FetchSlots(
      0,
      {
        controller,
        tickMs,
        signals: () => {
          at.push(Date.now());
          // Every slot busy at every tick: the controller grows as fast as it may.
          while (slots && slots.inUse < controller.limit) slots.taken();
          return IDLE;
        },
      },
      Date.now,
      new RecordingLog(),
      (sample) => limits.push(sample.limit),
    );
    slots.start();
    while (at.length < 6) await new Promise((r) => setTimeout(r, 10));
    slots.stop();
    const gaps = at.slice(1).map((t, i) => t - (at[i] as number));
    // 1 -> 2 -> 4 -> 8 in half ticks (the first tick comes after half a tick too); at 8, the ceiling, full ticks.
    expect(limits.slice(0, 4)).toEqual([2, 4, 8, 8]);
    for (const gap of gaps.slice(0, 2)) expect(gap).toBeLessThan(tickMs * 0.8);
    for (const gap of gaps.slice(3)) expect(gap).toBeGreaterThanOrEqual(tickMs - 5);
  });
});
