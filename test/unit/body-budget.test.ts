/**
 * The body budget (lib/crawl/fetch/body-budget.ts): bytes count from the first read until released, a read waits for room
 * while another body will give some back, and when every body in the budget is one being read and all wait, the one
 * holding the most is cut instead.
 */
import { describe, expect, it } from 'vitest';
import { BodyBudget } from '../../lib/crawl/fetch/body-budget.ts';

/** Settles the promise's state after the pending microtasks: 'pending', or what it resolved to. */
async function state<T>(promise: Promise<T>): Promise<T | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]);
}

describe('BodyBudget', () => {
  it('counts a finished body until it is released, not only while it is read', async () => {
    const budget = new BodyBudget(100);
    const hold = budget.open();
    expect(await budget.take(hold, 60)).toBe(true);
    budget.done(hold);
    expect(budget.used).toBe(60);
    budget.release(hold);
    budget.release(hold);
    expect(budget.used).toBe(0);
  });

  it('pauses a read that does not fit while a finished body holds room, and resumes it when that is released', async () => {
    const budget = new BodyBudget(100);
    const finished = budget.open();
    await budget.take(finished, 70);
    budget.done(finished);
    const reader = budget.open();
    const more = budget.take(reader, 50);
    expect(await state(more)).toBe('pending');
    expect(budget.pauses).toBe(1);
    budget.release(finished);
    expect(await more).toBe(true);
    expect(budget.used).toBe(50);
    expect(budget.cuts).toBe(0);
  });

  it('cuts the read holding the most when every body in the budget is being read and all wait', async () => {
    const budget = new BodyBudget(100);
    const small = budget.open();
    const big = budget.open();
    await budget.take(small, 30);
    await budget.take(big, 60);
    const smallMore = budget.take(small, 20);
    expect(await state(smallMore)).toBe('pending');
    // The last reader waits too: nothing would ever give room back.
    const bigMore = budget.take(big, 20);
    expect(await bigMore).toBe(false);
    expect(budget.cuts).toBe(1);
    expect(await state(smallMore)).toBe('pending');
    // The cut body's page is done: its room goes back and the other read goes on.
    budget.done(big);
    budget.release(big);
    expect(await smallMore).toBe(true);
    expect(budget.used).toBe(50);
  });

  it('never holds more than its limit, however many reads wait', async () => {
    const budget = new BodyBudget(1000);
    const holds = Array.from({ length: 60 }, () => budget.open());
    let most = 0;
    const reads = holds.map(async (hold) => {
      for (let i = 0; i < 100; i++) {
        if (!(await budget.take(hold, 10))) break;
        most = Math.max(most, budget.used);
        await new Promise((resolve) => setImmediate(resolve));
      }
      budget.done(hold);
      await new Promise((resolve) => setImmediate(resolve));
      budget.release(hold);
    });
    await Promise.all(reads);
    expect(most).toBeLessThanOrEqual(1000);
    expect(budget.used).toBe(0);
    expect(budget.cuts).toBeGreaterThan(0);
  });

  it('rejects a waiting read with the reason when its signal aborts, and lets it take nothing', async () => {
    const budget = new BodyBudget(100);
    const finished = budget.open();
    await budget.take(finished, 100);
    budget.done(finished);
    const reader = budget.open();
    const abort = new AbortController();
    const more = budget.take(reader, 10, abort.signal);
    abort.abort(new Error('stopping'));
    await expect(more).rejects.toThrow('stopping');
    expect(reader.bytes).toBe(0);
  });

  it('admits a fetch only once the bytes counted are under the limit', async () => {
    const budget = new BodyBudget(100);
    const hold = budget.open();
    await budget.take(hold, 100);
    budget.done(hold);
    const admitted = budget.admit();
    expect(await state(admitted)).toBe('pending');
    budget.release(hold);
    expect(await state(admitted)).toBeUndefined();
    expect(budget.waits).toBe(1);
  });
});
