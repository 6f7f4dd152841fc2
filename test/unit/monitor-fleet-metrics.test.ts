import { describe, expect, it } from 'vitest';
import { fleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import { HEARTBEAT_TTL_MS } from '../../lib/monitor/stats-report.ts';
import { child, FakeUrlFrontier, seed, TEST_NOW, type TestContext, testContext } from '../helpers/fakes.ts';

describe('fleetMetrics', () => {
  async function withBacklog(ctx: TestContext): Promise<void> {
    const c = { appid: 'testapp', crawlid: 'c1' };
    await ctx.frontier.enqueue(
      'link',
      [
        seed({ ...c, url: 'http://example.com/', maxdepth: 2 }),
        child(c, 'http://example.com/a', -9),
        child(c, 'http://other.org/', -9),
      ],
      TEST_NOW,
    );
    await ctx.frontier.enqueue(
      'wandering',
      [seed({ appid: 'testapp', crawlid: 'w1', url: 'http://example.net/', spiderid: 'wandering' })],
      TEST_NOW,
    );
  }

  it('reports backlog per spider type, its total, the live crawlers and backlog per live crawler', async () => {
    const ctx = testContext();
    await withBacklog(ctx);
    await ctx.stats.beat('crawler', 'link|host-a|1', TEST_NOW - 1000, HEARTBEAT_TTL_MS);
    await ctx.stats.beat('crawler', 'wandering|host-b|2', TEST_NOW - 1000, HEARTBEAT_TTL_MS);

    expect(await fleetMetrics(ctx)).toEqual({
      backlog: { link: 3, wandering: 1 },
      totalBacklog: 4,
      liveCrawlers: 2,
      backlogPerTask: 2,
      urlFrontierBacklog: 0,
    });
  });

  it('does not count a crawler whose heartbeat is older than the heartbeat TTL', async () => {
    const ctx = testContext();
    await withBacklog(ctx);
    await ctx.stats.beat('crawler', 'link|host-a|1', TEST_NOW - 1000, HEARTBEAT_TTL_MS);
    await ctx.stats.beat('crawler', 'link|host-b|2', TEST_NOW - HEARTBEAT_TTL_MS - 1, HEARTBEAT_TTL_MS);

    expect(await fleetMetrics(ctx)).toMatchObject({ liveCrawlers: 1, backlogPerTask: 4 });
  });

  it('reports the whole backlog as backlog per task when no crawler runs', async () => {
    const ctx = testContext();
    await withBacklog(ctx);

    expect(await fleetMetrics(ctx)).toMatchObject({ totalBacklog: 4, liveCrawlers: 0, backlogPerTask: 4 });
  });

  it("reports the URL Frontier API's backlog on its own, outside the backlog the fleet scales on", async () => {
    const urlFrontier = new FakeUrlFrontier({ c1: { 'a.com': 3, 'b.com': 0 }, c2: { 'a.com': 2 } });
    const ctx = testContext({ urlFrontier });
    await withBacklog(ctx);

    expect(await fleetMetrics(ctx)).toMatchObject({ totalBacklog: 4, backlogPerTask: 4, urlFrontierBacklog: 5 });
  });

  it('reports zeros for an empty frontier', async () => {
    expect(await fleetMetrics(testContext())).toEqual({
      backlog: {},
      totalBacklog: 0,
      liveCrawlers: 0,
      backlogPerTask: 0,
      urlFrontierBacklog: 0,
    });
  });
});
