import { describe, expect, it } from 'vitest';
import { CRAWLER_TASK_KIND, type CrawlerLoad } from '../../lib/crawl/crawler/load-report.ts';
import { fleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import { HEARTBEAT_TTL_MS } from '../../lib/monitor/stats-report.ts';
import { child, seed } from '../helpers/fake-frontier.ts';
import { FakeUrlFrontier, MemoryFleetWake } from '../helpers/fake-stores.ts';
import { TEST_NOW, type TestContext, testContext } from '../helpers/fakes.ts';

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
      liveTasks: 0,
      pagesPerSecond: 0,
      slotUtilization: 0,
      saturatedShare: 0,
      taskPagesPerSecond: 0,
      tasksNeeded: 1,
    });
  });

  it('needs one task with nothing queued and none running when a request waited for a name only a crawler registers', async () => {
    const wake = new MemoryFleetWake();
    const ctx = testContext({ fleetWake: wake });
    expect((await fleetMetrics(ctx)).tasksNeeded).toBe(0);
    await wake.want(TEST_NOW - 60_000);
    expect(await fleetMetrics(ctx)).toMatchObject({ totalBacklog: 0, liveTasks: 0, tasksNeeded: 1 });
  });

  function report(over: Partial<CrawlerLoad>): CrawlerLoad {
    return {
      at: TEST_NOW - 5000,
      pagesPerSec: 400,
      slotsInUse: 150,
      slotLimit: 150,
      bound: 'cpu',
      saturated: 1,
      load: 0.95,
      ...over,
    };
  }

  it('sizes the fleet from the load reports of the live crawler processes, fresh ones only', async () => {
    const ctx = testContext();
    for (let i = 0; i < 3; i++) {
      await ctx.frontier.enqueue(
        'link',
        Array.from({ length: 400 }, (_, j) => seed({ appid: 'a', crawlid: `c${i}`, url: `http://s${j}.example.com/` })),
        TEST_NOW,
      );
    }
    const beat = (id: string, at: number, load?: CrawlerLoad) =>
      ctx.stats.beat(CRAWLER_TASK_KIND, id, at, HEARTBEAT_TTL_MS, load && JSON.stringify(load));
    // Two saturated tasks at 0.2 pages/s each: 1,200 queued take 50 minutes at 0.4/s; 10 minutes need 10 tasks.
    await beat('host-a:1', TEST_NOW - 5000, report({ pagesPerSec: 0.2 }));
    await beat('host-b:2', TEST_NOW - 5000, report({ pagesPerSec: 0.2, slotsInUse: 50 }));
    // Beating but its report is two minutes old (it beat without one since: an older image), and one that never
    // reported, and one whose heartbeat is dead: none of them counts.
    await beat('host-c:3', TEST_NOW - 120_000, report({ at: TEST_NOW - 120_000 }));
    await beat('host-c:3', TEST_NOW - 1000);
    await beat('host-d:4', TEST_NOW - 1000);
    await beat('host-e:5', TEST_NOW - HEARTBEAT_TTL_MS - 1, report({ at: TEST_NOW }));

    expect(await fleetMetrics(ctx)).toMatchObject({
      totalBacklog: 1200,
      liveTasks: 2,
      pagesPerSecond: 0.4,
      slotUtilization: 0.667, // 200 of 300 slots, to three places
      saturatedShare: 1,
      taskPagesPerSecond: 0.2,
      tasksNeeded: 10,
    });
  });

  it("sizes the HTML fleet on its own spiders' backlog and tasks: the browser fleet's are left out", async () => {
    const ctx = testContext();
    // 20 link requests for the HTML fleet, 5,000 browser requests that only the browser fleet leases.
    await ctx.frontier.enqueue(
      'link',
      Array.from({ length: 20 }, (_, j) => seed({ appid: 'a', crawlid: 'h', url: `http://h${j}.example.com/` })),
      TEST_NOW,
    );
    await ctx.frontier.enqueue(
      'browser',
      Array.from({ length: 5000 }, (_, j) =>
        seed({ appid: 'a', crawlid: 'b', spiderid: 'browser', url: `http://b${j}.example.com/` }),
      ),
      TEST_NOW,
    );
    const beat = (id: string, load: CrawlerLoad) =>
      ctx.stats.beat(CRAWLER_TASK_KIND, id, TEST_NOW - 1000, HEARTBEAT_TTL_MS, JSON.stringify(load));
    // One HTML task, saturated at 0.01 pages/s: its 20 requests take 2,000 s, so 10 minutes need 4 tasks. Two
    // browser tasks, saturated too: were they and their 5,000 requests counted, the HTML fleet would need 837.
    await beat('html:1', report({ pagesPerSec: 0.01, spiders: ['link', 'wandering', 'sitemap'] }));
    await beat('browser:1', report({ pagesPerSec: 0.01, spiders: ['browser'] }));
    await beat('browser:2', report({ pagesPerSec: 0.01, spiders: ['browser'] }));

    expect(await fleetMetrics(ctx)).toMatchObject({
      backlog: { link: 20, browser: 5000 },
      totalBacklog: 5020,
      liveTasks: 1,
      pagesPerSecond: 0.01,
      tasksNeeded: 4,
    });
  });

  it('counts a load report without spider types (an older image) as an HTML task', async () => {
    const ctx = testContext();
    await ctx.frontier.enqueue('link', [seed({ appid: 'a', crawlid: 'h', url: 'http://h.example.com/' })], TEST_NOW);
    await ctx.stats.beat(CRAWLER_TASK_KIND, 'old:1', TEST_NOW - 1000, HEARTBEAT_TTL_MS, JSON.stringify(report({})));

    expect(await fleetMetrics(ctx)).toMatchObject({ liveTasks: 1, tasksNeeded: 1 });
  });

  it('needs no HTML task for a backlog of browser requests alone', async () => {
    const ctx = testContext();
    await ctx.frontier.enqueue(
      'browser',
      [seed({ appid: 'a', crawlid: 'b', spiderid: 'browser', url: 'http://b.example.com/' })],
      TEST_NOW,
    );

    expect(await fleetMetrics(ctx)).toMatchObject({ backlog: { browser: 1 }, totalBacklog: 1, tasksNeeded: 0 });
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

  it("reads the URL Frontier's kept total, never its per-queue backlog (O(queues) over every crawl)", async () => {
    const urlFrontier = new FakeUrlFrontier({ c1: { 'a.com': 3 } });
    urlFrontier.backlog = () => Promise.reject(new Error('the stats run read every queue of every crawl'));
    const ctx = testContext({ urlFrontier });

    expect(await fleetMetrics(ctx)).toMatchObject({ urlFrontierBacklog: 3 });
  });

  it('reports zeros for an empty frontier', async () => {
    expect(await fleetMetrics(testContext())).toEqual({
      backlog: {},
      totalBacklog: 0,
      liveCrawlers: 0,
      backlogPerTask: 0,
      urlFrontierBacklog: 0,
      liveTasks: 0,
      pagesPerSecond: 0,
      slotUtilization: 0,
      saturatedShare: 0,
      taskPagesPerSecond: 0,
      tasksNeeded: 0,
    });
  });
});
