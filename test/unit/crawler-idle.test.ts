/** The crawler's idle workers (lib/crawl/crawler/idle.ts): one poller, the others asleep until woken. */
import { describe, expect, it } from 'vitest';
import { IDLE_BACKSTOP_POLLS, IdleWorkers, SCOUT_MAX_MS, WAKE_ON_LEASE } from '../../lib/crawl/crawler/idle.ts';
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
    idle.leased(0, true);
    expect(idle.poller).toBeUndefined();
    await new Promise((r) => setTimeout(r, 5));
    expect(woken).toEqual([0, 1].slice(0, WAKE_ON_LEASE));
    expect(idle.size).toBe(5 - WAKE_ON_LEASE);
    idle.wakeAll();
  });

  it('a worker that leased the last due request wakes nobody, though it still gives up polling', async () => {
    const idle = new IdleWorkers(1000);
    const woken: number[] = [];
    for (let i = 0; i < 5; i++) void idle.idle(i, 60_000).then(() => woken.push(i));
    idle.leased(0, false);
    expect(idle.poller).toBeUndefined();
    await new Promise((r) => setTimeout(r, 5));
    expect(woken).toEqual([]);
    expect(idle.size).toBe(5);
    idle.wakeAll();
  });

  it('work only in the domains at the cap (no due time): the poller keeps its doubling pause', async () => {
    const idle = new IdleWorkers(1000, 10);
    const at = performance.now();
    // 10, 20, 40 ms: not the scout interval each time, as for no work at all.
    for (let i = 0; i < 3; i++) await idle.scout(0, Number.POSITIVE_INFINITY);
    expect(performance.now() - at).toBeGreaterThanOrEqual(70 - 5);
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

  it('a sleeper nobody wakes sleeps on past its backstop while a worker polls', async () => {
    const idle = new IdleWorkers(4);
    void idle.idle(0, 60_000);
    const others = [1, 2, 3].map((i) => idle.idle(i, 1));
    // Three backstops and more: the poller is there, so nobody else looks (each look would be a lease call).
    expect(await settles(Promise.race(others), 4 * IDLE_BACKSTOP_POLLS * 3 + 30)).toBe(false);
    expect(idle.size).toBe(4);
    // A wake still reaches them (longest asleep first: the poller, then worker 1).
    idle.wake(2);
    expect(await settles(others[0] as Promise<void>, 5)).toBe(true);
    expect(idle.size).toBe(2);
    idle.wakeAll();
    expect(await settles(Promise.all(others), 5)).toBe(true);
  });

  it('a sleeper nobody wakes looks again after the backstop when nobody polls', async () => {
    const idle = new IdleWorkers(4);
    const poller = idle.idle(0, 60_000);
    const other = idle.idle(1, 1);
    // The poller leaves without handing its turn on (a missed wake): the backstop bounds the sleeper's wait.
    idle.leased(0, true);
    idle.wakeAll();
    await poller;
    const again = idle.idle(2, 60_000);
    expect(idle.poller).toBe(2);
    idle.leased(2, true);
    expect(await settles(other, 4 * IDLE_BACKSTOP_POLLS + 30)).toBe(true);
    expect(idle.speaksFor(1)).toBe(true);
    idle.wakeAll();
    await again;
  });

  it('the poller looks again sooner while work keeps coming: its pause doubles with each empty look, a lease resets it', async () => {
    const idle = new IdleWorkers(1000, 10);
    const pauses: number[] = [];
    const look = async (dueInMs: number | undefined) => {
      const at = performance.now();
      await idle.scout(0, dueInMs);
      pauses.push(Math.round(performance.now() - at));
    };
    for (let i = 0; i < 4; i++) await look(60_000);
    // 10, 20, 40, 80 ms (timers fire late, or up to a millisecond early: libuv keeps its clock in whole ms).
    expect(
      pauses.map((ms, i) => ms >= 10 * 2 ** i - 2 && ms < 10 * 2 ** i + 40),
      `pauses ${pauses.join(', ')}`,
    ).toEqual([true, true, true, true]);
    // A request due sooner than the pause is asked for when it is due.
    await look(15);
    expect(pauses.at(-1)).toBeLessThan(15 + 40);
    // Nothing anywhere: the scout interval, and the pause does not grow.
    await look(undefined);
    expect(pauses.at(-1)).toBeLessThan(10 + 40);
    // A lease anywhere (here worker 5's) puts the pause back to the scout interval.
    idle.leased(5, true);
    await look(60_000);
    expect(pauses.at(-1)).toBeLessThan(10 + 40);
  });

  it('the poller pauses at most SCOUT_MAX_MS, however long nothing is due', async () => {
    const idle = new IdleWorkers(1000, SCOUT_MAX_MS / 2);
    await idle.scout(0, 60_000);
    const at = performance.now();
    await idle.scout(0, 60_000);
    await idle.scout(0, 60_000);
    // Two looks after the first: SCOUT_MAX_MS each (its double would be over the cap).
    expect(performance.now() - at).toBeLessThan(2 * SCOUT_MAX_MS + 80);
    expect(performance.now() - at).toBeGreaterThanOrEqual(2 * SCOUT_MAX_MS - 5);
  });
});
