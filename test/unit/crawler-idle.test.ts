/** The crawler's idle workers (lib/crawl/crawler-idle.ts): one poller, the others asleep until woken. */
import { describe, expect, it } from 'vitest';
import { IDLE_BACKSTOP_POLLS, IdleWorkers, WAKE_ON_LEASE } from '../../lib/crawl/crawler-idle.ts';
import { settlesWithin as settles } from '../../lib/timeout.ts';

describe('IdleWorkers', () => {
  it('the first idle worker polls on its timer; the next ones sleep past it', async () => {
    const idle = new IdleWorkers(1000);
    const first = idle.idle(0, 10);
    const second = idle.idle(1, 10);
    expect(idle.poller).toBe(0);
    expect(await settles(first, 40)).toBe(true);
    expect(await settles(second, 10)).toBe(false);
    expect(idle.size).toBe(1);
    idle.wakeAll();
    expect(await settles(second, 5)).toBe(true);
  });

  it('a worker that leases gives up polling and wakes WAKE_ON_LEASE sleepers, longest asleep first', async () => {
    const idle = new IdleWorkers(1000);
    const woken: number[] = [];
    for (let i = 0; i < 5; i++) void idle.idle(i, 60_000).then(() => woken.push(i));
    expect(idle.poller).toBe(0);
    idle.leased(0);
    expect(idle.poller).toBeUndefined();
    await new Promise((r) => setTimeout(r, 5));
    expect(woken).toEqual([0, 1].slice(0, WAKE_ON_LEASE));
    expect(idle.size).toBe(5 - WAKE_ON_LEASE);
    idle.wakeAll();
  });

  it('a poller that resigns hands the turn on by waking one sleeper, which then polls', async () => {
    const idle = new IdleWorkers(1000);
    void idle.idle(3, 60_000);
    const next = idle.idle(4, 60_000);
    idle.resign(4); // not the poller: nothing happens
    expect(idle.poller).toBe(3);
    expect(idle.size).toBe(2);
    idle.resign(3);
    expect(idle.poller).toBeUndefined();
    await new Promise((r) => setTimeout(r, 5));
    expect(idle.size).toBe(1);
    // The poller's own nap was the longest: it woke. The other takes the turn when it finds nothing again.
    void idle.idle(4, 10);
    expect(idle.poller).toBe(4);
    idle.wakeAll();
    expect(await settles(next, 5)).toBe(true);
  });

  it('a sleeper nobody wakes looks again after the backstop', async () => {
    const idle = new IdleWorkers(4);
    void idle.idle(0, 60_000);
    const other = idle.idle(1, 1);
    expect(await settles(other, 4 * IDLE_BACKSTOP_POLLS + 30)).toBe(true);
    expect(idle.speaksFor(0)).toBe(true);
    expect(idle.speaksFor(1)).toBe(false);
    idle.wakeAll();
  });
});
