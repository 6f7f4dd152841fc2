import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { rejectAfter, settlesWithin } from '../../lib/timeout.ts';

/** A promise settled by hand, so each test decides when (and whether) it settles against the fake clock. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('settlesWithin', () => {
  it('is true when the promise fulfils in time, and clears its timer', async () => {
    const work = deferred<string>();
    const outcome = settlesWithin(work.promise, 1000);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(999);
    work.resolve('done');
    expect(await outcome).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('is true when the promise rejects in time (a rejection is settled), and does not reject itself', async () => {
    const work = deferred<string>();
    const outcome = settlesWithin(work.promise, 1000);
    work.reject(new Error('closing failed'));
    expect(await outcome).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('is false at the deadline, and a late rejection goes unhandled nowhere', async () => {
    const work = deferred<string>();
    const outcome = settlesWithin(work.promise, 1000);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await outcome).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    const unhandled = vi.fn();
    process.on('unhandledRejection', unhandled);
    work.reject(new Error('too late'));
    await vi.advanceTimersByTimeAsync(0);
    process.off('unhandledRejection', unhandled);
    expect(unhandled).not.toHaveBeenCalled();
  });
});

describe('rejectAfter', () => {
  it('resolves with the value when the promise fulfils in time, and clears its timer', async () => {
    const late = vi.fn(() => new Error('late'));
    const outcome = rejectAfter(Promise.resolve(42), 1000, late);
    expect(await outcome).toBe(42);
    expect(vi.getTimerCount()).toBe(0);
    expect(late).not.toHaveBeenCalled();
  });

  it("rejects with the promise's own error when it rejects in time", async () => {
    const work = deferred<number>();
    const outcome = rejectAfter(work.promise, 1000, () => new Error('late'));
    work.reject(new Error('refused'));
    await expect(outcome).rejects.toThrow('refused');
    expect(vi.getTimerCount()).toBe(0);
  });

  it("rejects with late()'s error at the deadline, built only then", async () => {
    class Late extends Error {}
    const work = deferred<number>();
    const late = vi.fn(() => new Late('no answer within 1000 ms'));
    const outcome = rejectAfter(work.promise, 1000, late);
    const caught = outcome.catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(999);
    expect(late).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    const error = await caught;
    expect(error).toBeInstanceOf(Late);
    expect((error as Error).message).toBe('no answer within 1000 ms');
    expect(late).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
    // The work answering after the deadline changes nothing and raises nothing.
    work.resolve(7);
    await vi.advanceTimersByTimeAsync(0);
  });
});
