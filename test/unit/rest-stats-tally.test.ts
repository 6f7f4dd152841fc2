/**
 * The REST API's request counters off the request path (lib/rest/stats-tally.ts): a stats store that never
 * answers does not hold an answer, the counts of many requests go out in one write, and a failed write is
 * retried or dropped by its kind, within bounded memory.
 */
import { describe, expect, it, vi } from 'vitest';
import type { RestContext } from '../../lib/rest/context.ts';
import { createRestRouter } from '../../lib/rest/router.ts';
import { StatsTally } from '../../lib/rest/stats-tally.ts';
import { TEST_NODE_ID, TEST_NOW, type TestContext, testContext } from '../helpers/fakes.ts';

function routerOver(statsTimeoutMs: number) {
  const clock = { now: TEST_NOW };
  const ctx: RestContext & Pick<TestContext, 'stats' | 'log'> = {
    ...testContext({ now: () => clock.now }),
    health: { kafka: async () => {}, redis: async () => {} },
    options: { statsTimeoutMs, statsFlushMs: 1000, heartbeatEveryMs: 30_000 },
  };
  return { ctx, clock, router: createRestRouter(ctx) };
}

const get = { method: 'GET', path: '/', headers: {} };

describe('REST request counters', () => {
  it('answers every request while the stats store never answers, with one write pending at most', async () => {
    const { ctx, clock, router } = routerOver(600_000);
    const increment = vi.spyOn(ctx.stats, 'increment').mockImplementation(() => new Promise(() => {}));
    const beat = vi.spyOn(ctx.stats, 'beat').mockImplementation(() => new Promise(() => {}));
    for (let i = 0; i < 50; i++) {
      const response = await router(get);
      expect(response.status).toBe(200);
      clock.now += 100;
    }
    expect(increment).toHaveBeenCalledTimes(1);
    expect(beat).toHaveBeenCalledTimes(1);
  });

  it('writes the counts of many requests in one call once the flush interval has passed', async () => {
    const { ctx, clock, router } = routerOver(1000);
    await router(get);
    for (let i = 0; i < 99; i++) await router({ ...get, path: i % 3 === 0 ? '/nope' : '/' });
    expect(ctx.stats.incrementCalls).toHaveLength(1);
    clock.now += 1000;
    await router(get);
    await router.flushStats();
    expect(ctx.stats.incrementCalls).toHaveLength(2);
    const second = ctx.stats.incrementCalls[1];
    expect(second?.nowMs).toBe(TEST_NOW + 1000);
    expect(second?.increments).toEqual([
      { name: 'rest:total', by: 100 },
      { name: 'rest:fail', by: 33 },
    ]);
    expect(ctx.stats.lifetime('rest:total')).toBe(101);
    expect(await ctx.stats.live('rest', clock.now, 300_000)).toEqual([TEST_NODE_ID]);
  });
});

describe('StatsTally', () => {
  function tally(timeoutMs: number, maxNames?: number) {
    const ctx = testContext();
    return { ctx, tally: new StatsTally(ctx, { timeoutMs, heartbeatEveryMs: 30_000, maxNames }) };
  }

  it('drops the counts of a write that did not answer in time and says how many in its warning', async () => {
    const { ctx, tally: t } = tally(20);
    vi.spyOn(ctx.stats, 'increment').mockImplementationOnce(() => new Promise(() => {}));
    t.add(['rest:total', 'rest:total', 'rest:fail']);
    await t.flush();
    expect(t.pending().size).toBe(0);
    expect(ctx.log.at('warn')).toEqual([
      expect.objectContaining({
        message: 'rest: stats update failed',
        fields: expect.objectContaining({ error: 'Redis (stats) did not answer within 20 ms', counts_dropped: 3 }),
      }),
    ]);
    t.add(['rest:total']);
    await t.flush();
    expect(ctx.stats.lifetime('rest:total')).toBe(1);
  });

  it('holds at most maxNames names between writes and counts the rest as dropped', async () => {
    const { ctx, tally: t } = tally(1000, 2);
    t.add(['a', 'b', 'c', 'a', 'd']);
    expect([...t.pending()]).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    ctx.stats.down = true;
    await t.flush();
    expect(ctx.log.at('warn')[0]?.fields).toMatchObject({ counts_dropped: 2, counts_held: 3 });
  });
});
